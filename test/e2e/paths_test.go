package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestUncleanPathsAreRefusedNotRedirected: on the local stack, whose own
// router mounts the API, a path with .. or . segments or doubled slashes
// is a 404 in the API's envelope, never a redirect to the cleaned path;
// and a body labelled as plain text is a 415 naming Content-Type.
func TestUncleanPathsAreRefusedNotRedirected(t *testing.T) {
	t.Parallel()
	e := startStack(t)
	f := e.setup(nil, nil)
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	send := func(method, path, contentType, body string) *http.Response {
		t.Helper()
		req, err := http.NewRequestWithContext(context.Background(), method, e.stack.APIURL+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+e.stack.AdminToken)
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		resp, err := noFollow.Do(req)
		require.NoError(t, err)
		t.Cleanup(func() { _ = resp.Body.Close() })
		return resp
	}
	for _, p := range []string{
		"/api/v1/admin/maas-sites/../probe",
		"/api/v1/admin/maas-sites/" + f.SiteID + "/../" + f.SiteID + "/probe",
		"/api/v1/admin/maas-sites/./" + f.SiteID + "/probe",
		"/api/v1//admin/skus",
	} {
		resp := send("POST", p, "", "")
		assert.Equal(t, http.StatusNotFound, resp.StatusCode, p)
		assert.Empty(t, resp.Header.Get("Location"), p)
		assert.Equal(t, "application/json", resp.Header.Get("Content-Type"), p)
	}
	resp := send("POST", "/api/v1/admin/skus", "text/plain", `{"id":"x","gpu_model":"H100","gpus_total":8}`)
	assert.Equal(t, http.StatusUnsupportedMediaType, resp.StatusCode)
	e.admin("GET", "/api/v1/admin/skus/x", nil, http.StatusNotFound)
}
