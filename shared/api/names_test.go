package api

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Answers name the site and profile beside their ids.
func TestAnswersNameSitesAndProfiles(t *testing.T) {
	h := newHarness(t)
	fx := h.fixture()
	site := h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/maas-sites/"+fx.site, nil)["name"].(string)
	prof := h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/maas-sites/"+fx.site+"/profiles/"+fx.profile, nil)["name"].(string)
	require.NotEmpty(t, site)
	require.NotEmpty(t, prof)
	id := h.mustAdmin(http.StatusAccepted, "POST", "/api/v1/admin/onboardings", fx.onboarding("gpu-01"))["id"].(string)

	d := h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/onboardings/"+id, nil)
	assert.Equal(t, site, d["site_name"])
	assert.Equal(t, prof, d["profile_name"])
	assert.Equal(t, fx.site, d["site_id"], "the id stays")

	items := h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/onboardings?site_id="+fx.site, nil)["items"].([]any)
	require.Len(t, items, 1)
	assert.Equal(t, site, items[0].(map[string]any)["site_name"])
	assert.Equal(t, prof, items[0].(map[string]any)["profile_name"])

	b := h.mustAdmin(http.StatusAccepted, "POST", "/api/v1/admin/onboardings/batch", map[string]any{"site_id": fx.site, "profile_id": fx.profile,
		"sku_id": fx.sku, "nodes": []map[string]any{{"hostname": "gpu-02", "ipmi_ip": bmcFor("gpu-02")}}})
	got := h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/onboarding-batches/"+b["id"].(string), nil)
	assert.Equal(t, site, got["site_name"])
	assert.Equal(t, prof, got["profile_name"])

	nodes := h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/nodes?site_id="+fx.site, nil)["items"].([]any)
	require.NotEmpty(t, nodes)
	n := nodes[0].(map[string]any)
	assert.Equal(t, site, n["site_name"])
	nd := h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/nodes/"+n["id"].(string), nil)
	assert.Equal(t, site, nd["site_name"])
}
