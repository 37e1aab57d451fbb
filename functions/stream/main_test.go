package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdaurl"
	"github.com/go-jose/go-jose/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/api"
	"github.com/maasflow/maasflow/shared/config"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/store"
)

const (
	cliClient     = "cli-client-1"
	consoleClient = "console-client-2"
	keyID         = "key-1"
)

// issuer is a fake OpenID provider: its discovery document and JWKS on a
// loopback server, and the key that signs its tokens.
type issuer struct {
	url  string
	key  *rsa.PrivateKey
	hits atomic.Int32
}

func newIssuer(t *testing.T) *issuer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	is := &issuer{key: key}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer": is.url, "jwks_uri": is.url + "/.well-known/jwks.json",
			"authorization_endpoint": is.url + "/oauth2/authorize", "token_endpoint": is.url + "/oauth2/token",
			"id_token_signing_alg_values_supported": []string{"RS256"},
		})
	})
	mux.HandleFunc("GET /.well-known/jwks.json", func(w http.ResponseWriter, _ *http.Request) {
		is.hits.Add(1)
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{
			{Key: &key.PublicKey, KeyID: keyID, Algorithm: "RS256", Use: "sig"},
		}})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	is.url = srv.URL
	return is
}

// token signs claims over a Cognito ID token's defaults.
func (is *issuer) token(t *testing.T, key *rsa.PrivateKey, over map[string]any) string {
	t.Helper()
	now := time.Now()
	claims := map[string]any{
		"iss": is.url, "sub": "op-1", "aud": consoleClient, "token_use": "id",
		"iat": now.Add(-time.Minute).Unix(), "exp": now.Add(time.Hour).Unix(), "auth_time": now.Unix(),
		"cognito:groups": []string{config.DefaultAdminGroup}, "cognito:username": "alice",
	}
	for k, v := range over {
		if v == nil {
			delete(claims, k)
			continue
		}
		claims[k] = v
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", keyID))
	require.NoError(t, err)
	payload, err := json.Marshal(claims)
	require.NoError(t, err)
	sig, err := signer.Sign(payload)
	require.NoError(t, err)
	out, err := sig.CompactSerialize()
	require.NoError(t, err)
	return out
}

// fixture is the stream function's handler over a real store, invoked as
// Lambda invokes it behind a function URL (lambdaurl.Wrap).
type fixture struct {
	is     *issuer
	st     *store.Store
	invoke func(context.Context, *events.LambdaFunctionURLRequest) (*events.LambdaFunctionURLStreamingResponse, error)
}

func newFixture(t *testing.T, cfg api.Config) *fixture {
	t.Helper()
	ctx := context.Background()
	is := newIssuer(t)
	db, err := store.NewLocalDB(ctx, "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	st := store.New(db, "", time.Now)
	auth, err := newJWTAuth(ctx, authSettings{Issuer: is.url, Audiences: []string{cliClient, consoleClient}})
	require.NoError(t, err)
	return &fixture{is: is, st: st, invoke: lambdaurl.Wrap(newHandler(cfg, st, auth, slog.New(slog.DiscardHandler)))}
}

// open invokes the function for GET path with the bearer token (none when
// empty); the invocation's deadline is timeout from now.
func (f *fixture) open(t *testing.T, method, path, token string, timeout time.Duration) *events.LambdaFunctionURLStreamingResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	headers := map[string]string{"accept": "text/event-stream", "origin": "https://console.example"}
	if token != "" {
		headers["authorization"] = "Bearer " + token
	}
	p, q, _ := strings.Cut(path, "?")
	req := &events.LambdaFunctionURLRequest{Version: "2.0", RawPath: p, RawQueryString: q, Headers: headers}
	req.RequestContext.DomainName = "abc.lambda-url.eu-west-1.on.aws"
	req.RequestContext.HTTP.Method = method
	req.RequestContext.HTTP.SourceIP = "192.0.2.10"
	resp, err := f.invoke(ctx, req)
	require.NoError(t, err)
	if c, ok := resp.Body.(io.Closer); ok {
		t.Cleanup(func() { _ = c.Close() })
	}
	return resp
}

// errorCode reads the API's error body.
func errorCode(t *testing.T, resp *events.LambdaFunctionURLStreamingResponse) string {
	t.Helper()
	var body struct {
		Error struct{ Code, CorrelationID string } `json:"error"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	return body.Error.Code
}

// sse reads one server-sent event block at a time.
type sse struct{ r *bufio.Reader }

// next returns the next block's lines, or fails after wait.
func (s sse) next(t *testing.T, wait time.Duration) []string {
	t.Helper()
	got := make(chan []string, 1)
	go func() {
		var lines []string
		for {
			line, err := s.r.ReadString('\n')
			if err != nil {
				got <- append(lines, "EOF")
				return
			}
			line = strings.TrimSuffix(line, "\n")
			if line == "" {
				got <- lines
				return
			}
			lines = append(lines, line)
		}
	}()
	select {
	case l := <-got:
		return l
	case <-time.After(wait):
		t.Fatalf("no event within %s", wait)
		return nil
	}
}

// event is the next event (comments skipped): its name and data.
func (s sse) event(t *testing.T, wait time.Duration) (name, data string) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		lines := s.next(t, time.Until(deadline))
		for _, l := range lines {
			switch {
			case l == "EOF":
				t.Fatal("the stream ended")
			case strings.HasPrefix(l, "event: "):
				name = strings.TrimPrefix(l, "event: ")
			case strings.HasPrefix(l, "data: "):
				data = strings.TrimPrefix(l, "data: ")
			}
		}
		if data != "" {
			return name, data
		}
	}
}

// An admin's token opens the stream through the function URL's streaming
// response: the retry hint, the current state at once, and a write by
// another process within one re-read.
func TestStreamPushesWritesWithinTheReRead(t *testing.T) {
	f := newFixture(t, streamConfig())
	ctx := context.Background()
	require.NoError(t, f.st.CreateNode(ctx, domain.Node{ID: "n1", SiteID: "s1", Hostname: "gpu-first", Status: domain.NodeActive}))

	resp := f.open(t, http.MethodGet, "/api/v1/admin/nodes/stream?limit=50", f.is.token(t, f.is.key, nil), time.Minute)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "text/event-stream", resp.Headers["Content-Type"])
	s := sse{bufio.NewReader(resp.Body)}
	assert.Equal(t, []string{"retry: 2000"}, s.next(t, 10*time.Second), "an EventSource learns how soon to reconnect")
	name, data := s.event(t, 10*time.Second)
	assert.Equal(t, "nodes", name)
	assert.Contains(t, data, `"hostname":"gpu-first"`)

	written := time.Now()
	require.NoError(t, f.st.CreateNode(ctx, domain.Node{ID: "n2", SiteID: "s1", Hostname: "gpu-pushed", Status: domain.NodeActive}))
	// One re-read away (streamInterval), with room for a loaded machine.
	name, data = s.event(t, streamInterval+20*time.Second)
	assert.Equal(t, "nodes", name)
	assert.Contains(t, data, `"hostname":"gpu-pushed"`)
	t.Logf("the write reached the stream after %s (re-read every %s)", time.Since(written).Round(time.Millisecond), streamInterval)
}

// A Cognito access token names its client in client_id and has no aud: the
// HTTP API's authorizer accepts it, and so does the stream function.
func TestStreamAcceptsAnAccessToken(t *testing.T) {
	f := newFixture(t, streamConfig())
	tok := f.is.token(t, f.is.key, map[string]any{"aud": nil, "client_id": cliClient, "token_use": "access"})
	resp := f.open(t, http.MethodGet, "/api/v1/admin/maas-sites/stream", tok, time.Minute)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	name, data := sse{bufio.NewReader(resp.Body)}.event(t, 10*time.Second)
	assert.Equal(t, "sites", name)
	assert.Contains(t, data, "[")
}

// Every refusal answers as the admin API does: 401 unauthorized with a
// bearer challenge for a missing or unacceptable token, 403 forbidden for
// an operator outside the admin group.
func TestStreamRefusesWhatTheAuthorizerWould(t *testing.T) {
	f := newFixture(t, streamConfig())
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	hour := time.Hour
	cases := []struct {
		name, token string
		status      int
		code        string
	}{
		{"no token", "", http.StatusUnauthorized, api.CodeUnauthorized},
		{"not a JWT", "not-a-jwt", http.StatusUnauthorized, api.CodeUnauthorized},
		{"wrong audience", f.is.token(t, f.is.key, map[string]any{"aud": "another-app"}), http.StatusUnauthorized, api.CodeUnauthorized},
		{"access token of another client", f.is.token(t, f.is.key, map[string]any{"aud": nil, "client_id": "another-app", "token_use": "access"}),
			http.StatusUnauthorized, api.CodeUnauthorized},
		{"expired", f.is.token(t, f.is.key, map[string]any{"exp": time.Now().Add(-hour).Unix(), "iat": time.Now().Add(-2 * hour).Unix()}),
			http.StatusUnauthorized, api.CodeUnauthorized},
		{"another issuer", f.is.token(t, f.is.key, map[string]any{"iss": "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_other"}),
			http.StatusUnauthorized, api.CodeUnauthorized},
		{"signed by another key", f.is.token(t, other, nil), http.StatusUnauthorized, api.CodeUnauthorized},
		{"not an id or access token", f.is.token(t, f.is.key, map[string]any{"token_use": "refresh"}), http.StatusUnauthorized, api.CodeUnauthorized},
		{"not an admin", f.is.token(t, f.is.key, map[string]any{"cognito:groups": []string{"viewers"}}), http.StatusForbidden, api.CodeForbidden},
		{"no groups", f.is.token(t, f.is.key, map[string]any{"cognito:groups": nil}), http.StatusForbidden, api.CodeForbidden},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := f.open(t, http.MethodGet, "/api/v1/admin/nodes/stream", tc.token, time.Minute)
			require.Equal(t, tc.status, resp.StatusCode)
			assert.Equal(t, tc.code, errorCode(t, resp))
			if tc.status == http.StatusUnauthorized {
				assert.Contains(t, resp.Headers["Www-Authenticate"], "Bearer")
			}
		})
	}
	// Fetched at the first token, then once more for the token no cached
	// key verifies (the issuer may have rotated its keys); every other
	// check ran on the cached set. go-oidc hands a fetch's keys to the
	// verifications waiting on it before it caches them and frees its
	// slot, so on a loaded machine later checks can join that finished
	// fetch, the refetch included: one or two fetches, never one a check.
	hits := f.is.hits.Load()
	assert.GreaterOrEqual(t, hits, int32(1), "the issuer's keys were fetched")
	assert.LessOrEqual(t, hits, int32(2), "the issuer's keys are cached")
}

// The function serves the streams only: the API's other routes are not
// there, even for an admin, and a stream path takes no other method.
func TestStreamServesOnlyTheStreams(t *testing.T) {
	f := newFixture(t, streamConfig())
	tok := f.is.token(t, f.is.key, nil)
	resp := f.open(t, http.MethodGet, "/api/v1/admin/nodes", tok, time.Minute)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.Equal(t, api.CodeNotFound, errorCode(t, resp))
	resp = f.open(t, http.MethodPost, "/api/v1/admin/maas-sites", tok, time.Minute)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	resp = f.open(t, http.MethodPost, "/api/v1/admin/nodes/stream", tok, time.Minute)
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	assert.Equal(t, api.CodeMethodNotAllowed, errorCode(t, resp))
}

// A stream ends with its end event before the invocation's timeout, so
// the reader sees a clean end and reconnects rather than a cut connection.
func TestStreamEndsBeforeTheFunctionTimeout(t *testing.T) {
	f := newFixture(t, streamConfig())
	// The stream's time is what the deadline leaves after its margin: two
	// seconds here.
	resp := f.open(t, http.MethodGet, "/api/v1/admin/maas-sites/stream", f.is.token(t, f.is.key, nil), 17*time.Second)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	s := sse{bufio.NewReader(resp.Body)}
	name, _ := s.event(t, 10*time.Second)
	require.Equal(t, "sites", name)
	name, data := s.event(t, 15*time.Second)
	assert.Equal(t, "end", name)
	assert.JSONEq(t, `{"reason":"max_age"}`, data)
	assert.Equal(t, []string{"EOF"}, s.next(t, 10*time.Second), "the function returns after the end event")
}
