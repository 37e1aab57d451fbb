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

func serve(t *testing.T, h http.Handler, path string) (*http.Response, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequestWithContext(context.Background(), http.MethodGet, path, nil))
	body, err := io.ReadAll(rec.Result().Body)
	require.NoError(t, err)
	return rec.Result(), string(body)
}

func TestSignInSettings(t *testing.T) {
	// Local mode: the token form, and the page may call its own origin only.
	resp, body := serve(t, Handler(), "/console/config.json")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.JSONEq(t, `{"sign_in":"token"}`, body)
	assert.Contains(t, resp.Header.Get("Content-Security-Policy"), "connect-src 'self';")

	si := SignIn{AuthorizeURL: "https://login.example/oauth2/authorize", TokenURL: "https://login.example/oauth2/token", ClientID: "console-client"}
	resp, body = serve(t, HandlerWith(si), "/console/config.json")
	assert.JSONEq(t, `{"sign_in":"oidc","authorize_url":"https://login.example/oauth2/authorize",
		"token_url":"https://login.example/oauth2/token","client_id":"console-client","scopes":["openid","email","profile"]}`, body)
	assert.Contains(t, resp.Header.Get("Content-Security-Policy"), "connect-src 'self' https://login.example;",
		"the page may call the token endpoint, and nothing else outside its origin")
}

func TestTheCallbackPageIsServedAsIs(t *testing.T) {
	resp, body := serve(t, Handler(), "/console/index.html")
	require.Equal(t, http.StatusOK, resp.StatusCode, "no redirect to the directory: API Gateway routes no trailing slash")
	assert.Contains(t, body, `id="signin-idp"`)
	resp, _ = serve(t, Handler(), "/console")
	assert.Equal(t, http.StatusFound, resp.StatusCode)
	assert.Equal(t, "/console/index.html", resp.Header.Get("Location"))
}

func TestSignInFromEnv(t *testing.T) {
	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	si, err := SignInFromEnv(env(nil))
	require.NoError(t, err)
	assert.Equal(t, SignIn{}, si, "none set: the token form")
	full := map[string]string{EnvAuthorizeURL: "https://a.example/authorize", EnvTokenURL: "https://a.example/token", EnvClientID: "c1"}
	si, err = SignInFromEnv(env(full))
	require.NoError(t, err)
	assert.Equal(t, "c1", si.ClientID)
	_, err = SignInFromEnv(env(map[string]string{EnvClientID: "c1"}))
	require.ErrorContains(t, err, EnvAuthorizeURL)
	full[EnvTokenURL] = "http://a.example/token"
	_, err = SignInFromEnv(env(full))
	require.ErrorContains(t, err, "https", "tokens travel over https only")
}

// Where the deployment streams from another origin (the stream function's
// URL on AWS), config.json says so in either sign-in mode, and the page may
// connect there; the variable is optional and must be https.
func TestStreamURLSetting(t *testing.T) {
	const stream = "https://abc123.lambda-url.eu-west-1.on.aws/"
	resp, body := serve(t, HandlerWith(SignIn{StreamURL: stream}), "/console/config.json")
	assert.JSONEq(t, `{"sign_in":"token","stream_url":"`+stream+`"}`, body)
	assert.Contains(t, resp.Header.Get("Content-Security-Policy"), "connect-src 'self' https://abc123.lambda-url.eu-west-1.on.aws;")

	si := SignIn{AuthorizeURL: "https://login.example/oauth2/authorize", TokenURL: "https://login.example/oauth2/token", ClientID: "console-client", StreamURL: stream}
	resp, body = serve(t, HandlerWith(si), "/console/config.json")
	assert.Contains(t, body, `"sign_in":"oidc"`)
	assert.Contains(t, body, `"stream_url":"`+stream+`"`)
	assert.Contains(t, resp.Header.Get("Content-Security-Policy"),
		"connect-src 'self' https://login.example https://abc123.lambda-url.eu-west-1.on.aws;")

	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	got, err := SignInFromEnv(env(map[string]string{EnvStreamURL: stream}))
	require.NoError(t, err)
	assert.Equal(t, SignIn{StreamURL: stream}, got, "the token form, streaming from the stream URL")
	got, err = SignInFromEnv(env(map[string]string{EnvAuthorizeURL: "https://a.example/authorize", EnvTokenURL: "https://a.example/token",
		EnvClientID: "c1", EnvStreamURL: stream}))
	require.NoError(t, err)
	assert.Equal(t, stream, got.StreamURL)
	_, err = SignInFromEnv(env(map[string]string{EnvStreamURL: "http://abc.example/"}))
	require.ErrorContains(t, err, "stream URL")

	page, err := assets.ReadFile("assets/app.js")
	require.NoError(t, err)
	assert.Contains(t, string(page), "fetch(streamBase() + API + l.path", "the page opens its streams at the configured base")
}
