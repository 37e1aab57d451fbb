package connector_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/connector"
	"github.com/maasflow/maasflow/shared/domain"
)

func TestTokensExpireAndRotate(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	path := filepath.Join(t.TempDir(), "gens.json")
	tokens, err := connector.OpenTokens([]byte("key"), path, time.Hour, 5*time.Minute, clock)
	require.NoError(t, err)

	tok, exp := tokens.Issue("site.a")
	wantExp := now.Add(time.Hour)
	assert.Equal(t, wantExp, exp)
	site, err := tokens.Site(tok)
	require.NoError(t, err)
	assert.Equal(t, "site.a", site, "a site id may hold dots")

	// Another site's name on this site's mac is no token.
	_, err = tokens.Site("site.b" + strings.TrimPrefix(tok, "site.a"))
	require.ErrorIs(t, err, connector.ErrTokenMalformed)
	_, err = tokens.Site("site.a.0.1")
	require.ErrorIs(t, err, connector.ErrTokenMalformed)

	// Expired at its expiry.
	now = exp
	_, err = tokens.Site(tok)
	require.ErrorIs(t, err, connector.ErrTokenExpired)

	// A rotation: the old generation works for the overlap, then not.
	now = exp.Add(-30 * time.Minute)
	newTok, _, err := tokens.Rotate("site.a")
	require.NoError(t, err)
	_, err = tokens.Site(tok)
	require.NoError(t, err, "within the overlap")
	_, err = tokens.Site(newTok)
	require.NoError(t, err)
	now = now.Add(5 * time.Minute)
	_, err = tokens.Site(tok)
	require.ErrorIs(t, err, connector.ErrTokenRotated)
	_, err = tokens.Site(newTok)
	require.NoError(t, err)

	// A second rotation retires the first generation even within the
	// overlap of the second; generations survive a reopen.
	third, _, err := tokens.Rotate("site.a")
	require.NoError(t, err)
	reopened, err := connector.OpenTokens([]byte("key"), path, time.Hour, 5*time.Minute, clock)
	require.NoError(t, err)
	_, err = reopened.Site(tok)
	require.ErrorIs(t, err, connector.ErrTokenRotated)
	_, err = reopened.Site(newTok)
	require.NoError(t, err, "the previous generation, within its overlap")
	_, err = reopened.Site(third)
	require.NoError(t, err)
	// Other sites are untouched by a rotation.
	other, _ := reopened.Issue("site.b")
	_, err = reopened.Site(other)
	require.NoError(t, err)
}

func TestTokenDefaults(t *testing.T) {
	tokens, err := connector.OpenTokens([]byte("k"), "", 0, 0, nil)
	require.NoError(t, err)
	assert.Equal(t, connector.DefaultTokenTTL, tokens.TTL())
	assert.Equal(t, connector.DefaultRotationOverlap, tokens.Overlap())
	assert.Equal(t, 30*24*time.Hour, connector.DefaultTokenTTL)
}

// brokerCall makes one connector call as site with tok and returns the
// status.
func brokerCall(t *testing.T, srv *httptest.Server, method, path, tok, site, body string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, srv.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+tok)
	if site != "" {
		req.Header.Set(connector.SiteHeader, site)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// TestBrokerBindsTokensToTheirSite: a connector that serves one site but
// holds another's token is refused, and so are a disabled site's
// connector, an expired token and a rotated-out one.
func TestBrokerBindsTokensToTheirSite(t *testing.T) {
	now := time.Now()
	clock := func() time.Time { return now }
	tokens, err := connector.OpenTokens([]byte("key"), "", time.Hour, time.Minute, clock)
	require.NoError(t, err)
	broker := connector.NewBrokerWith(tokens, nil)
	disabled := map[string]bool{"off": true}
	broker.SiteActive = func(_ context.Context, site string) (bool, error) { return !disabled[site], nil }
	srv := httptest.NewServer(broker.Handler())
	defer srv.Close()
	defer broker.Close()

	tokA := broker.Token("a")
	hb := `{"version":"v1","hostname":"h"}`
	require.Equal(t, http.StatusNoContent, brokerCall(t, srv, http.MethodPost, connector.LocalHeartbeatPath, tokA, "a", hb))
	before, ok, err := broker.LastHeartbeat(context.Background(), "a")
	require.NoError(t, err)
	require.True(t, ok)

	// A connector for site b started with a's token: refused for a's queue
	// and a's heartbeat, which it cannot overwrite.
	assert.Equal(t, http.StatusForbidden, brokerCall(t, srv, http.MethodGet, connector.LocalRequestsPath+"?wait=0", tokA, "b", ""))
	assert.Equal(t, http.StatusForbidden, brokerCall(t, srv, http.MethodPost, connector.LocalHeartbeatPath, tokA, "b", `{"version":"evil","hostname":"x"}`))
	after, _, _ := broker.LastHeartbeat(context.Background(), "a")
	assert.Equal(t, before, after, "a's heartbeat is untouched")
	// A connector that names no site is refused.
	assert.Equal(t, http.StatusBadRequest, brokerCall(t, srv, http.MethodGet, connector.LocalRequestsPath+"?wait=0", tokA, "", ""))

	// A's queue is not drained by the refused calls.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	go func() {
		_, _ = broker.Do(ctx, connector.Request{ID: "r1", Site: "a", Kind: connector.KindMAAS, Method: "GET", URL: "version/", Deadline: time.Now().Add(5 * time.Second)})
	}()
	require.Eventually(t, func() bool {
		return brokerCall(t, srv, http.MethodGet, connector.LocalRequestsPath+"?wait=0", tokA, "b", "") == http.StatusForbidden
	}, 5*time.Second, 10*time.Millisecond)
	link := &connector.HTTPLink{Endpoint: srv.URL, Token: tokA, Site: "a", Wait: time.Second}
	ds, err := link.Receive(ctx)
	require.NoError(t, err)
	require.Len(t, ds, 1, "a's request is still there for a's connector")

	// A disabled site's connector is refused, its token otherwise good.
	assert.Equal(t, http.StatusForbidden, brokerCall(t, srv, http.MethodPost, connector.LocalHeartbeatPath, broker.Token("off"), "off", hb))

	// Expired and rotated-out tokens are refused.
	now = now.Add(time.Hour)
	assert.Equal(t, http.StatusUnauthorized, brokerCall(t, srv, http.MethodPost, connector.LocalHeartbeatPath, tokA, "a", hb))
	fresh := broker.Token("a")
	_, _, err = tokens.Rotate("a")
	require.NoError(t, err)
	assert.Equal(t, http.StatusNoContent, brokerCall(t, srv, http.MethodPost, connector.LocalHeartbeatPath, fresh, "a", hb), "within the overlap")
	now = now.Add(time.Minute)
	assert.Equal(t, http.StatusUnauthorized, brokerCall(t, srv, http.MethodPost, connector.LocalHeartbeatPath, fresh, "a", hb), "after the overlap")
}

// TestConnectorFetchesOnlyPolicyURLs: the fetch client of a connector site
// sends its connector only the bootstrap URL the site's policy names and
// the node API health check; anything else is refused before it is
// queued.
func TestConnectorFetchesOnlyPolicyURLs(t *testing.T) {
	broker := connector.NewBroker([]byte("k"), nil)
	defer broker.Close()
	enrollURL := "https://nodes.example/"
	site := domain.Site{ID: "edge", Connectivity: domain.ConnectivityConnector, Policy: domain.Policy{
		Bootstrap: &domain.BootstrapRef{URL: "https://boot.edge/site.sh", Version: "1"}, EnrollmentURL: &enrollURL,
	}}
	p := &connector.Paths{Relay: broker, Status: broker, APIURL: "http://api.local"}
	hc, own, err := p.FetchClient(site)
	require.NoError(t, err)
	require.True(t, own)

	srv := httptest.NewServer(broker.Handler())
	defer srv.Close()
	link := &connector.HTTPLink{Endpoint: srv.URL, Token: broker.Token("edge"), Site: "edge", Wait: 1}
	get := func(u string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		require.NoError(t, err)
		resp, err := hc.Do(req)
		if err == nil {
			_ = resp.Body.Close()
		}
		return err
	}
	for _, u := range []string{"http://169.254.169.254/latest/meta-data/", "https://boot.edge/site.sh?x=1", "https://boot.edge/other.sh", "http://api.local/api/v1/healthz"} {
		err := get(u)
		var refused *connector.FetchNotAllowedError
		require.ErrorAs(t, err, &refused, u)
		assert.NotContains(t, refused.Error(), "169.254", "the refusal does not repeat the URL")
	}
	ds, err := link.Receive(context.Background())
	require.NoError(t, err)
	assert.Empty(t, ds, "nothing refused was queued for the connector")

	// The URLs the policy names go to the connector (none answers here:
	// the caller's deadline ends the wait).
	for _, u := range []string{"https://boot.edge/site.sh", "https://nodes.example/api/v1/healthz"} {
		err := get(u)
		var refused *connector.FetchNotAllowedError
		require.Error(t, err)
		assert.NotErrorAs(t, err, &refused, u)
	}
}
