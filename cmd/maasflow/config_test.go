package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeIssuer is an OIDC issuer whose device grant is approved at once and
// answers idToken.
func fakeIssuer(t *testing.T, idToken string) string {
	t.Helper()
	mux := http.NewServeMux()
	var base string
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]string{"device_authorization_endpoint": base + "/device", "token_endpoint": base + "/token"})
	})
	mux.HandleFunc("POST /device", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		assert.Equal(t, "cli-ctx", r.Form.Get("client_id"), "the context's client id")
		_ = json.NewEncoder(w).Encode(map[string]any{"device_code": "dc", "user_code": "WXYZ",
			"verification_uri": "https://idp.example/activate", "interval": 1, "expires_in": 30})
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "at", "token_type": "Bearer", "id_token": idToken, "refresh_token": "rt", "expires_in": 3600})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	base = srv.URL
	return srv.URL
}

// Contexts: set, list, switch; login stores its token in the context and
// every admin command of the context uses it; the environment still wins.
func TestConfigContextsAndLoginToken(t *testing.T) {
	home := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", home) // login reads the process environment
	env := map[string]string{"XDG_CONFIG_HOME": home}
	apiURL := newAdminRealAPI(t)
	issuer := fakeIssuer(t, adminTestToken)

	res := runAdminTest(t, env, adminInvocation{}, "config", "set-context", "dev", "--api-url", apiURL, "--issuer", issuer, "--client-id", "cli-ctx")
	require.Equal(t, 0, res.code, res.stderr)
	cfgPath := filepath.Join(home, "maasflow", "config.yaml")
	fi, err := os.Stat(cfgPath)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	res = runAdminTest(t, env, adminInvocation{}, "config", "set-context", "prod", "--api-url", "https://api.prod.example")
	require.Equal(t, 0, res.code, res.stderr)
	res = runAdminTest(t, env, adminInvocation{}, "config", "get-contexts")
	require.Equal(t, 0, res.code, res.stderr)
	assert.Regexp(t, `\*\s+dev\s+`+apiURL, res.stdout, "the first context is the current one")
	assert.Regexp(t, `\n-\s+prod\s+https://api.prod.example`, res.stdout)

	// Not signed in: the command says how to get a token.
	res = runAdminTest(t, env, adminInvocation{}, "skus", "list")
	assert.Equal(t, 2, res.code)
	assert.Contains(t, res.stderr, "maasflow login")

	var out, errOut bytes.Buffer
	require.Equal(t, 0, runLogin(context.Background(), nil, &out, &errOut), errOut.String())
	assert.Contains(t, errOut.String(), "the admin commands of context dev use it")
	tokenFile := filepath.Join(home, "maasflow", "tokens", "dev.json")
	fi, err = os.Stat(tokenFile)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	res = runAdminTest(t, env, adminInvocation{}, "skus", "list")
	require.Equal(t, 0, res.code, "no export needed: %s", res.stderr)
	assert.Contains(t, res.stdout, "ID")

	env[envAdminToken] = "wrong-token"
	res = runAdminTest(t, env, adminInvocation{}, "skus", "list")
	assert.Equal(t, 1, res.code, "$MAASFLOW_ADMIN_TOKEN overrides the context")
	assert.Contains(t, res.stderr, "unauthorized")
	delete(env, envAdminToken)

	res = runAdminTest(t, env, adminInvocation{}, "skus", "list", "--context", "prod", "--api-url", apiURL)
	assert.Equal(t, 2, res.code, "prod has no session")
	res = runAdminTest(t, env, adminInvocation{}, "skus", "list", "--context", "nope")
	assert.Equal(t, 2, res.code)
	assert.Contains(t, res.stderr, `context "nope" is not in the config file`)

	res = runAdminTest(t, env, adminInvocation{}, "config", "use-context", "prod")
	require.Equal(t, 0, res.code, res.stderr)
	res = runAdminTest(t, env, adminInvocation{}, "config", "current-context")
	assert.Equal(t, "prod\n", res.stdout)
	res = runAdminTest(t, env, adminInvocation{}, "config", "use-context", "staging")
	assert.Equal(t, 2, res.code)
}
