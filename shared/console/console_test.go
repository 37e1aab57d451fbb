package console

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func get(t *testing.T, method, path string) (*http.Response, string) {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle(Prefix, Handler())
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequestWithContext(context.Background(), method, path, nil))
	body, err := io.ReadAll(rec.Result().Body)
	require.NoError(t, err)
	return rec.Result(), string(body)
}

func TestServesThePageAndItsAssets(t *testing.T) {
	for path, want := range map[string]string{
		"/console/":          `<script src="app.js" defer></script>`,
		"/console/app.js":    `sessionStorage`,
		"/console/style.css": `:focus-visible`,
	} {
		resp, body := get(t, http.MethodGet, path)
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		assert.Contains(t, body, want, path)
		assert.Contains(t, resp.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'", path)
		assert.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"), path)
	}
}

func TestTheTokenNeverTravelsInAURL(t *testing.T) {
	_, js := get(t, http.MethodGet, "/console/app.js")
	assert.Contains(t, js, `"Authorization": "Bearer " + token()`)
	assert.NotContains(t, js, "token=", "the token must not be put in a query string")
}

func TestRefusesWrites(t *testing.T) {
	resp, _ := get(t, http.MethodPost, "/console/")
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	assert.Equal(t, "GET, HEAD", resp.Header.Get("Allow"))
}

func TestUnknownFileIsNotFound(t *testing.T) {
	resp, _ := get(t, http.MethodGet, "/console/nope.js")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
}
