package api

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
)

func TestSiteConnectivity(t *testing.T) {
	h := newHarness(t)
	vpc := h.mustAdmin(http.StatusCreated, "POST", "/api/v1/admin/maas-sites", map[string]any{
		"name": "dc1", "maas_url": "http://10.0.0.5:5240/MAAS", "allow_http": true,
	})
	assert.Equal(t, "vpc", vpc["connectivity"], "vpc is the default path")
	assert.Equal(t, true, vpc["allow_http"])

	conn := h.mustAdmin(http.StatusCreated, "POST", "/api/v1/admin/maas-sites", map[string]any{
		"name": "dc2", "maas_url": "http://maas.dc2:5240/MAAS", "connectivity": "connector",
	})
	assert.Equal(t, "connector", conn["connectivity"])

	for _, tc := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"name": "x", "maas_url": "http://m/MAAS", "connectivity": "vpn"}, "connectivity"},
		{map[string]any{"name": "y", "maas_url": "http://m/MAAS", "connectivity": "connector", "allow_http": true}, "allow_http"},
		{map[string]any{"name": "z", "maas_url": "http://m/MAAS", "allow_http": "yes"}, "allow_http"},
	} {
		r := h.admin("POST", "/api/v1/admin/maas-sites", tc.body)
		require.Equal(t, http.StatusBadRequest, r.status, "%v: %s", tc.body, r.body)
		_, msg := r.errorOf(t)
		assert.Contains(t, msg, tc.field)
	}

	id := conn["id"].(string)
	r := h.admin("PATCH", "/api/v1/admin/maas-sites/"+id, map[string]any{"allow_http": true})
	assert.Equal(t, http.StatusBadRequest, r.status, "a connector site does not take allow_http")
	patched := h.mustAdmin(http.StatusOK, "PATCH", "/api/v1/admin/maas-sites/"+id, map[string]any{"connectivity": "vpc"})
	assert.Equal(t, "vpc", patched["connectivity"])

	// A connector site may keep its MAAS key at the site: BMC credentials alone.
	h.mustAdmin(http.StatusOK, "PATCH", "/api/v1/admin/maas-sites/"+id, map[string]any{"connectivity": "connector"})
	h.mustAdmin(http.StatusOK, "POST", "/api/v1/admin/maas-sites/"+id+"/credentials", map[string]any{
		"bmc_username": "maasflow", "bmc_password": seedBMCPass,
	})
	r = h.admin("POST", "/api/v1/admin/maas-sites/"+vpc["id"].(string)+"/credentials", map[string]any{
		"bmc_username": "maasflow", "bmc_password": seedBMCPass,
	})
	assert.Equal(t, http.StatusBadRequest, r.status, "a vpc site needs its key: %s", r.body)
}

// pathProber records what the probe asked and reports a connector.
type pathProber struct {
	site domain.Site
	key  string
}

func (p *pathProber) ProbeSite(_ context.Context, site domain.Site, key domain.Secret, _ []string) (maas.ProbeResult, *domain.ConnectorStatus, error) {
	p.site, p.key = site, key.Reveal()
	return maas.ProbeResult{Version: "3.5.4", Username: "maasflow", IsAdmin: true}, &domain.ConnectorStatus{Online: true, Version: "v1.2.3", LastHeartbeat: t0}, nil
}

func TestProbeShowsTheConnector(t *testing.T) {
	h := newHarness(t)
	paths := &pathProber{}
	h.handler = New(Config{}, Deps{
		Store: h.store, Secrets: h.secrets, Starter: h.starter, Stopper: h.stopper, Completer: h.completer,
		Prober: h.prober, Auth: NewStaticTokens(map[string]Principal{adminToken: {Subject: "alice", Admin: true}}),
		Clock: h.clock, Paths: paths,
	})
	site := h.mustAdmin(http.StatusCreated, "POST", "/api/v1/admin/maas-sites", map[string]any{
		"name": "dc2", "maas_url": "http://maas.dc2:5240/MAAS", "connectivity": "connector",
	})
	id := site["id"].(string)
	probe := h.mustAdmin(http.StatusOK, "POST", "/api/v1/admin/maas-sites/"+id+"/probe", nil)
	assert.Equal(t, true, probe["healthy"])
	conn, ok := probe["connector"].(map[string]any)
	require.True(t, ok, "probe: %v", probe)
	assert.Equal(t, "v1.2.3", conn["version"])
	assert.Equal(t, true, conn["online"])
	assert.NotEmpty(t, conn["last_heartbeat"])
	assert.Empty(t, paths.key, "no credentials: the connector holds the key")
	assert.Equal(t, id, paths.site.ID)

	got := h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/maas-sites/"+id, nil)
	stored := got["probe"].(map[string]any)["connector"].(map[string]any)
	assert.Equal(t, "v1.2.3", stored["version"], "the site shows the last probe's connector")
}
