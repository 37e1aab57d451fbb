package api

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSiteThrottlePolicy(t *testing.T) {
	h := newHarness(t)
	created := h.mustAdmin(http.StatusCreated, "POST", "/api/v1/admin/maas-sites", map[string]any{
		"name": "dc1", "maas_url": "http://maas.dc1:5240/MAAS", "policy": map[string]any{"max_concurrent_onboardings": 5},
	})
	id := created["id"].(string)
	assert.InDelta(t, 5, created["policy"].(map[string]any)["max_concurrent_onboardings"], 0)

	patched := h.mustAdmin(http.StatusOK, "PATCH", "/api/v1/admin/maas-sites/"+id, map[string]any{
		"policy": map[string]any{"max_concurrent_onboardings": 0},
	})
	assert.InDelta(t, 0, patched["policy"].(map[string]any)["max_concurrent_onboardings"], 0, "0 is no limit, and kept as said")
	cleared := h.mustAdmin(http.StatusOK, "PATCH", "/api/v1/admin/maas-sites/"+id, map[string]any{
		"policy": map[string]any{"max_concurrent_onboardings": nil},
	})
	assert.NotContains(t, cleared["policy"], "max_concurrent_onboardings")

	bad := []struct {
		name, method, path string
		body               any
	}{
		{"negative on create", "POST", "/api/v1/admin/maas-sites", map[string]any{
			"name": "dc2", "maas_url": "http://maas.dc2:5240/MAAS", "policy": map[string]any{"max_concurrent_onboardings": -1}}},
		{"too large on patch", "PATCH", "/api/v1/admin/maas-sites/" + id, map[string]any{
			"policy": map[string]any{"max_concurrent_onboardings": 10001}}},
		{"not a number", "PATCH", "/api/v1/admin/maas-sites/" + id, map[string]any{
			"policy": map[string]any{"max_concurrent_onboardings": "five"}}},
		{"not an integer", "PATCH", "/api/v1/admin/maas-sites/" + id, map[string]any{
			"policy": map[string]any{"max_concurrent_onboardings": 2.5}}},
		{"on a profile", "POST", "/api/v1/admin/maas-sites/" + id + "/profiles", map[string]any{
			"name": "p", "architecture": "amd64/generic", "distro_series": "jammy", "policy": map[string]any{"max_concurrent_onboardings": 3}}},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			r := h.admin(tc.method, tc.path, tc.body)
			require.Equal(t, http.StatusBadRequest, r.status, string(r.body))
			_, msg := r.errorOf(t)
			assert.Contains(t, msg, "policy.max_concurrent_onboardings")
		})
	}
	prof := h.mustAdmin(http.StatusCreated, "POST", "/api/v1/admin/maas-sites/"+id+"/profiles", map[string]any{
		"name": "p", "architecture": "amd64/generic", "distro_series": "jammy",
	})
	r := h.admin("PATCH", "/api/v1/admin/maas-sites/"+id+"/profiles/"+prof["id"].(string), map[string]any{
		"policy": map[string]any{"max_concurrent_onboardings": 3},
	})
	require.Equal(t, http.StatusBadRequest, r.status, string(r.body))
	_, msg := r.errorOf(t)
	assert.Contains(t, msg, "policy.max_concurrent_onboardings")
}
