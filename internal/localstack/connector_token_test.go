package localstack_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/internal/localstack"
	"github.com/maasflow/maasflow/shared/connector"
)

// tokenRoute calls a connector token route with the admin token and
// returns the status and the answer.
func tokenRoute(t *testing.T, s *localstack.Stack, method, path, site string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, s.APIURL+path+"?site="+site, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+s.AdminToken)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// heartbeat posts a connector heartbeat for site with tok.
func heartbeat(t *testing.T, s *localstack.Stack, tok, site string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, s.APIURL+connector.LocalHeartbeatPath,
		strings.NewReader(`{"version":"v","hostname":"h"}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set(connector.SiteHeader, site)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// TestConnectorTokensAreAuditedRotatedAndRefusedForDisabledSites: issuing
// and rotating a site's connector token are audited (without the token),
// a token's expiry is given, a rotated token and the connector of a
// disabled site are refused, and a disabled site gets no new token.
func TestConnectorTokensAreAuditedRotatedAndRefusedForDisabledSites(t *testing.T) {
	s, site := startBenchStack(t, t.TempDir())

	status, issued := tokenRoute(t, s, http.MethodGet, "/_connector/v1/token", site.site)
	require.Equal(t, http.StatusOK, status, issued)
	tok, _ := issued["token"].(string)
	exp, err := time.Parse(time.RFC3339, issued["expires_at"].(string)) //nolint:forcetypeassert // the route's contract
	require.NoError(t, err)
	want := time.Now().Add(connector.DefaultTokenTTL)
	assert.WithinDuration(t, want, exp, time.Minute)
	require.Equal(t, http.StatusNoContent, heartbeat(t, s, tok, site.site))

	status, rotated := tokenRoute(t, s, http.MethodPost, "/_connector/v1/token/rotate", site.site)
	require.Equal(t, http.StatusOK, status, rotated)
	newTok, _ := rotated["token"].(string)
	require.NotEqual(t, tok, newTok)
	require.Equal(t, http.StatusNoContent, heartbeat(t, s, newTok, site.site))
	// A second rotation ends the first token's overlap at once.
	status, rotated = tokenRoute(t, s, http.MethodPost, "/_connector/v1/token/rotate", site.site)
	require.Equal(t, http.StatusOK, status, rotated)
	assert.Equal(t, http.StatusUnauthorized, heartbeat(t, s, tok, site.site), "rotated out")

	audit := mustAdmin(t, s, "GET", "/api/v1/admin/audit?limit=50", nil, http.StatusOK)
	raw, err := json.Marshal(audit)
	require.NoError(t, err)
	assert.Contains(t, string(raw), `"action":"connector.token.issue"`)
	assert.Equal(t, 2, strings.Count(string(raw), `"action":"connector.token.rotate"`))
	assert.NotContains(t, string(raw), tok)
	assert.NotContains(t, string(raw), newTok)

	// A disabled site: its connector is refused and it gets no token.
	cur, _ := rotated["token"].(string)
	mustAdmin(t, s, "DELETE", "/api/v1/admin/maas-sites/"+site.site, nil, http.StatusOK)
	assert.Equal(t, http.StatusForbidden, heartbeat(t, s, cur, site.site))
	status, _ = tokenRoute(t, s, http.MethodGet, "/_connector/v1/token", site.site)
	assert.Equal(t, http.StatusConflict, status)
	status, _ = tokenRoute(t, s, http.MethodPost, "/_connector/v1/token/rotate", site.site)
	assert.Equal(t, http.StatusConflict, status)
}
