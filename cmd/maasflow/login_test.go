package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeCognito answers InitiateAuth for one user and counts refreshes.
type fakeCognito struct {
	refreshes atomic.Int32
	expiresIn int
}

func (f *fakeCognito) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var in struct {
		AuthFlow       string
		ClientId       string //nolint:revive // Cognito's field name
		AuthParameters map[string]string
	}
	_ = json.NewDecoder(r.Body).Decode(&in)
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	if r.Header.Get("X-Amz-Target") != "AWSCognitoIdentityProviderService.InitiateAuth" || in.ClientId != "cli-1" {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"__type":"InvalidParameterException","message":"bad request"}`))
		return
	}
	switch {
	case in.AuthFlow == "USER_PASSWORD_AUTH" && in.AuthParameters["USERNAME"] == "alice" && in.AuthParameters["PASSWORD"] == "s3cret-pw":
		_, _ = w.Write([]byte(`{"AuthenticationResult":{"IdToken":"id-1","RefreshToken":"rt-1","ExpiresIn":` + itoa(f.expiresIn) + `}}`))
	case in.AuthFlow == "REFRESH_TOKEN_AUTH" && in.AuthParameters["REFRESH_TOKEN"] == "rt-1":
		f.refreshes.Add(1)
		_, _ = w.Write([]byte(`{"AuthenticationResult":{"IdToken":"id-2","ExpiresIn":3600}}`))
	default:
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"__type":"NotAuthorizedException","message":"Incorrect username or password."}`))
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestLoginWithCognitoCachesAndRefreshes(t *testing.T) {
	cog := &fakeCognito{expiresIn: 30} // expires within a minute: refreshed on --print
	srv := httptest.NewServer(cog)
	defer srv.Close()
	dir := t.TempDir()
	issuer := "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_AbCdEf"
	stdin := withStdin(t, "s3cret-pw\n")
	defer stdin()

	var out, errOut bytes.Buffer
	code := runLogin(context.Background(), []string{"--issuer", issuer, "--client-id", "cli-1", "--username", "alice",
		"--cache-dir", dir, "--cognito-endpoint", srv.URL}, &out, &errOut)
	require.Equal(t, 0, code, errOut.String())
	assert.Equal(t, "export MAASFLOW_ADMIN_TOKEN=id-1\n", out.String())
	assert.NotContains(t, errOut.String(), "s3cret-pw")
	info, err := os.Stat(filepath.Join(dir, loginCacheFile))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	cache, _ := os.ReadFile(filepath.Join(dir, loginCacheFile))
	assert.NotContains(t, string(cache), "s3cret-pw", "the password is never stored")

	out.Reset()
	require.Equal(t, 0, runLogin(context.Background(), []string{"--print", "--cache-dir", dir}, &out, &errOut), errOut.String())
	assert.Equal(t, "id-2\n", out.String(), "refreshed because it was about to expire")
	assert.EqualValues(t, 1, cog.refreshes.Load())
	out.Reset()
	require.Equal(t, 0, runLogin(context.Background(), []string{"--print", "--cache-dir", dir}, &out, &errOut))
	assert.Equal(t, "id-2\n", out.String(), "the fresh token is cached")
	assert.EqualValues(t, 1, cog.refreshes.Load())

	// Wrong password: Cognito's message, not the password.
	stdin2 := withStdin(t, "wrong\n")
	defer stdin2()
	errOut.Reset()
	code = runLogin(context.Background(), []string{"--issuer", issuer, "--client-id", "cli-1", "--username", "alice",
		"--cache-dir", t.TempDir(), "--cognito-endpoint", srv.URL}, &out, &errOut)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut.String(), "NotAuthorizedException")
}

func TestLoginWithOIDCDeviceGrant(t *testing.T) {
	var polls atomic.Int32
	mux := http.NewServeMux()
	var base string
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]string{"device_authorization_endpoint": base + "/device", "token_endpoint": base + "/token"})
	})
	mux.HandleFunc("POST /device", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		assert.Equal(t, "cli-2", r.Form.Get("client_id"))
		_ = json.NewEncoder(w).Encode(map[string]any{"device_code": "dc", "user_code": "ABCD-EFGH",
			"verification_uri": "https://idp.example/activate", "interval": 1, "expires_in": 30})
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		w.Header().Set("Content-Type", "application/json") // as RFC 8628 §3.5 answers
		if polls.Add(1) == 1 {
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "authorization_pending"})
			return
		}
		assert.Equal(t, "dc", r.Form.Get("device_code"))
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "oidc-at", "token_type": "Bearer", "id_token": "oidc-id", "refresh_token": "oidc-rt", "expires_in": 3600})
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	base = srv.URL
	var out, errOut bytes.Buffer
	code := runLogin(context.Background(), []string{"--issuer", srv.URL, "--client-id", "cli-2", "--cache-dir", t.TempDir()}, &out, &errOut)
	require.Equal(t, 0, code, errOut.String())
	assert.Contains(t, errOut.String(), "ABCD-EFGH")
	assert.Equal(t, "export MAASFLOW_ADMIN_TOKEN=oidc-id\n", out.String())
	assert.EqualValues(t, 2, polls.Load(), "polled until the user approved")
}

func TestLoginPrintWithoutSession(t *testing.T) {
	var out, errOut bytes.Buffer
	assert.Equal(t, 1, runLogin(context.Background(), []string{"--print", "--cache-dir", t.TempDir()}, &out, &errOut))
	assert.Contains(t, errOut.String(), "not signed in")
	assert.Equal(t, 2, runLogin(context.Background(), []string{"--issuer", ""}, &out, &errOut))
}

// withStdin replaces os.Stdin with a pipe holding input.
func withStdin(t *testing.T, input string) func() {
	t.Helper()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	_, _ = w.WriteString(input)
	_ = w.Close()
	old := os.Stdin
	os.Stdin = r
	return func() { os.Stdin = old; _ = r.Close() }
}
