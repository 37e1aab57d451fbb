package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/connector"
)

// connector and login parse their own flags; these tests drive them
// through the command tree as an operator does.

func TestSelfParsedCommandsHelp(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"connector", "--help"}, "-maas-url string"},
		{[]string{"connector", "-h"}, "-queue-url string"},
		{[]string{"login", "--help"}, "-client-id string"},
		{[]string{"login", "-h"}, "-print"},
		{[]string{"help", "connector"}, "Usage:\n  maasflow connector [flags]"},
		{[]string{"help", "login"}, "Usage:\n  maasflow login [flags]"},
	} {
		res := runAdminTest(t, nil, adminInvocation{}, tc.args...)
		assert.Equal(t, 0, res.code, tc.args)
		assert.Contains(t, res.stdout, tc.want, "help goes to stdout: %v", tc.args)
		assert.Empty(t, res.stderr, tc.args)
	}
	res := runAdminTest(t, nil, adminInvocation{}, "--help")
	assert.Regexp(t, `(?m)^  connector\s+relay a site's MAAS calls`, res.stdout, "listed with the stack commands")
	assert.Regexp(t, `(?m)^  login\s+sign in`, res.stdout)
}

func TestSelfParsedCommandsMisuse(t *testing.T) {
	res := runAdminTest(t, nil, adminInvocation{}, "connector", "--site", "s")
	assert.Equal(t, 2, res.code)
	assert.Contains(t, res.stderr, "--maas-url is required")
	assert.Empty(t, res.stdout)

	res = runAdminTest(t, nil, adminInvocation{}, "login", "--print", "--cache-dir", t.TempDir())
	assert.Equal(t, 1, res.code)
	assert.Contains(t, res.stderr, "not signed in: run maasflow login")
}

func TestLoginPrintsTheCachedToken(t *testing.T) {
	dir := t.TempDir()
	cache := `{"issuer":"https://issuer.example","client_id":"cli","id_token":"id-token-1","expires_at":"` +
		time.Now().Add(time.Hour).UTC().Format(time.RFC3339) + `","endpoint":"https://issuer.example/token"}`
	require.NoError(t, os.WriteFile(filepath.Join(dir, loginCacheFile), []byte(cache), 0o600))

	res := runAdminTest(t, nil, adminInvocation{}, "login", "--print", "--cache-dir", dir)
	require.Equal(t, 0, res.code, res.stderr)
	assert.Equal(t, "id-token-1\n", res.stdout, "only the token, for $(maasflow login --print)")
}

// TestConnectorRunsUntilInterrupted starts the connector on the local
// transport against a stand-in endpoint: it announces itself, reaches the
// endpoint with the site token from the environment, and ends with exit 0
// when interrupted.
func TestConnectorRunsUntilInterrupted(t *testing.T) {
	const token = "site-token-7"
	t.Setenv(envConnectorToken, token)
	var (
		once    sync.Once
		reached = make(chan string, 1)
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { reached <- r.Header.Get("Authorization") })
		if r.Method == http.MethodGet && r.URL.Path == connector.LocalRequestsPath {
			// A long poll with nothing to do.
			select {
			case <-r.Context().Done():
			case <-time.After(50 * time.Millisecond):
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte("[]"))
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)

	var out, errb syncBuffer
	env := &cliEnv{stdout: &out, stderr: &errb, stdin: strings.NewReader(""), getenv: func(string) string { return "" }}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		done <- execute(ctx, env, []string{"connector", "--site", "s1", "--maas-url", "http://127.0.0.1:1/MAAS",
			"--endpoint", srv.URL, "--state-dir", t.TempDir(), "--log-level", "error"})
	}()
	select {
	case auth := <-reached:
		assert.Equal(t, "Bearer "+token, auth)
	case code := <-done:
		t.Fatalf("the connector ended (exit %d) before reaching its endpoint: %s", code, errb.String())
	}
	cancel()
	require.Equal(t, 0, <-done, errb.String())
	assert.Contains(t, out.String(), "site s1, MAAS http://127.0.0.1:1/MAAS, journal ")
	assert.NotContains(t, out.String()+errb.String(), token, "the token is never printed")
}
