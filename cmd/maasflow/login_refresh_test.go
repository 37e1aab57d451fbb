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
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An OIDC session about to expire is refreshed through the OAuth token
// source with its refresh token, and the new tokens are cached.
func TestLoginPrintRefreshesAnOIDCSession(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		assert.NoError(t, r.ParseForm())
		got = append(got, r.Form.Get("grant_type")+" "+r.Form.Get("refresh_token")+" "+r.Form.Get("client_id"))
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "at-2", "token_type": "Bearer", "id_token": "id-fresh",
			"refresh_token": "rt-2", "expires_in": 3600})
	}))
	defer srv.Close()
	dir := t.TempDir()
	cache := loginCache{Issuer: "https://issuer.example", ClientID: "cli-3", IDToken: "id-old", RefreshToken: "rt-1",
		ExpiresAt: time.Now().Add(30 * time.Second), Endpoint: srv.URL}
	require.NoError(t, saveLogin(filepath.Join(dir, loginCacheFile), cache))

	var out, errOut bytes.Buffer
	require.Equal(t, 0, runLogin(context.Background(), []string{"--print", "--cache-dir", dir}, &out, &errOut), errOut.String())
	assert.Equal(t, "id-fresh\n", out.String())
	assert.Equal(t, []string{"refresh_token rt-1 cli-3"}, got)
	b, err := os.ReadFile(filepath.Join(dir, loginCacheFile))
	require.NoError(t, err)
	var saved loginCache
	require.NoError(t, json.Unmarshal(b, &saved))
	assert.Equal(t, "rt-2", saved.RefreshToken, "the rotated refresh token is kept")
	assert.True(t, saved.ExpiresAt.After(time.Now().Add(50*time.Minute)))
}

func TestLoginIsAnOrdinaryCobraCommand(t *testing.T) {
	res := runAdminTest(t, nil, adminInvocation{}, "login", "--print=true", "--cache-dir", t.TempDir())
	assert.Equal(t, 1, res.code, "cobra's --flag=value form works")
	assert.Contains(t, res.stderr, "not signed in")
	res = runAdminTest(t, nil, adminInvocation{}, "login", "--no-such-flag")
	assert.Equal(t, 2, res.code)
	assert.Contains(t, res.stderr, "unknown flag: --no-such-flag")
	res = runAdminTest(t, nil, adminInvocation{}, "login", "stray")
	assert.Equal(t, 2, res.code)
}
