package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeCodeIssuer is an OIDC issuer with the authorization code grant and
// PKCE: its authorize endpoint redirects at once (the operator signed in),
// and its token endpoint checks the verifier against the challenge.
func fakeCodeIssuer(t *testing.T) *httptest.Server {
	t.Helper()
	var mu sync.Mutex
	challenges := map[string]string{} // code → S256 challenge
	mux := http.NewServeMux()
	var base string
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]string{"authorization_endpoint": base + "/authorize", "token_endpoint": base + "/token"})
	})
	mux.HandleFunc("GET /authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		assert.Equal(t, "code", q.Get("response_type"))
		assert.Equal(t, "cli-3", q.Get("client_id"))
		assert.Equal(t, "S256", q.Get("code_challenge_method"))
		mu.Lock()
		challenges["code-1"] = q.Get("code_challenge")
		mu.Unlock()
		to, err := url.Parse(q.Get("redirect_uri"))
		if !assert.NoError(t, err) {
			return
		}
		back := url.Values{"code": {"code-1"}, "state": {q.Get("state")}}
		to.RawQuery = back.Encode()
		http.Redirect(w, r, to.String(), http.StatusFound) //nolint:gosec // the test issuer sends the browser back to the CLI's callback, as a real issuer does
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		mu.Lock()
		challenge := challenges[r.Form.Get("code")]
		mu.Unlock()
		sum := sha256.Sum256([]byte(r.Form.Get("code_verifier")))
		w.Header().Set("Content-Type", "application/json")
		if r.Form.Get("grant_type") != "authorization_code" || challenge == "" ||
			base64.RawURLEncoding.EncodeToString(sum[:]) != challenge {
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid_grant"})
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "at", "token_type": "Bearer", "id_token": "code-id", "refresh_token": "code-rt", "expires_in": 3600})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	base = srv.URL
	return srv
}

// freeCallback is a loopback callback URL on a port nothing listens on.
func freeCallback(t *testing.T) string {
	t.Helper()
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	return "http://127.0.0.1:" + strconv.Itoa(port) + "/callback"
}

var authURLRE = regexp.MustCompile(`(?m)^  (http\S+)$`)

// browse waits for login to print its authorization URL and follows it as
// a browser would, through the issuer's redirect to the callback; it
// returns what the callback page said.
func browse(t *testing.T, errOut *syncBuffer, rewrite func(string) string) (int, string) {
	t.Helper()
	var link string
	require.Eventually(t, func() bool {
		m := authURLRE.FindStringSubmatch(errOut.String())
		if m != nil {
			link = m[1]
		}
		return m != nil
	}, 10*time.Second, 10*time.Millisecond, "login printed no URL: %s", errOut.String())
	if rewrite != nil {
		link = rewrite(link)
	}
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, link, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestLoginInTheBrowserWithPKCE(t *testing.T) {
	issuer := fakeCodeIssuer(t)
	var out bytes.Buffer
	errOut := &syncBuffer{}
	code := make(chan int, 1)
	args := []string{"--issuer", issuer.URL, "--client-id", "cli-3", "--browser",
		"--callback", freeCallback(t), "--cache-dir", t.TempDir()}
	go func() { code <- runLogin(context.Background(), args, &out, errOut) }()
	status, page := browse(t, errOut, nil)
	assert.Equal(t, http.StatusOK, status)
	assert.Contains(t, page, "signed in")
	require.Equal(t, 0, <-code, errOut.String())
	assert.Equal(t, "export MAASFLOW_ADMIN_TOKEN=code-id\n", out.String())
	assert.NotContains(t, errOut.String(), "code_verifier", "the verifier never leaves the process")
}

func TestLoginInTheBrowserRefusesAForeignState(t *testing.T) {
	issuer := fakeCodeIssuer(t)
	var out bytes.Buffer
	errOut := &syncBuffer{}
	code := make(chan int, 1)
	args := []string{"--issuer", issuer.URL, "--client-id", "cli-3", "--browser",
		"--callback", freeCallback(t), "--cache-dir", t.TempDir()}
	go func() { code <- runLogin(context.Background(), args, &out, errOut) }()
	// Another page's state: a forged redirect must not sign anyone in.
	status, _ := browse(t, errOut, func(link string) string {
		u, _ := url.Parse(link)
		q := u.Query()
		q.Set("state", "forged")
		u.RawQuery = q.Encode()
		return u.String()
	})
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Equal(t, 1, <-code)
	assert.Contains(t, errOut.String(), "another state")
	assert.Empty(t, out.String())
}

func TestLoginCallbackMustBeLoopback(t *testing.T) {
	var out, errOut bytes.Buffer
	code := runLogin(context.Background(), []string{"--issuer", "https://idp.example", "--client-id", "c", "--browser",
		"--callback", "https://example.com/callback", "--cache-dir", t.TempDir()}, &out, &errOut)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut.String(), "--callback must be a loopback http URL")
}
