package api

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func (f fixture) batch(nodes ...any) map[string]any {
	return map[string]any{"site_id": f.site, "profile_id": f.profile, "sku_id": f.sku, "nodes": nodes}
}

func node(host, ip string) map[string]any { return map[string]any{"hostname": host, "ipmi_ip": ip} }

func TestBatchStartsEveryRowAndReportsTheOnesThatCannot(t *testing.T) {
	h := newHarness(t)
	fx := h.fixture()
	busy := h.mustAdmin(http.StatusAccepted, "POST", "/api/v1/admin/onboardings", fx.onboarding("gpu-02"))

	r := h.admin("POST", "/api/v1/admin/onboardings/batch", fx.batch(node("GPU-01", "10.0.0.1"), node("gpu-02", "10.0.0.2"), node("gpu-03", "10.0.0.3")))
	require.Equal(t, http.StatusAccepted, r.status, r.body)
	b := r.json(t)
	id := b["id"].(string)
	assert.Equal(t, "/api/v1/admin/onboarding-batches/"+id, r.header.Get("Location"))
	assert.Equal(t, "running", b["status"])
	assert.Equal(t, map[string]any{"pending": 2.0, "rejected": 1.0}, b["counts"])
	items := b["items"].([]any)
	require.Len(t, items, 3)
	first, second := items[0].(map[string]any), items[1].(map[string]any)
	assert.Equal(t, "gpu-01", first["hostname"], "host names are stored in lower case")
	assert.NotEmpty(t, first["onboarding_id"])
	assert.Equal(t, "pending", first["status"])
	assert.Equal(t, "rejected", second["status"])
	assert.Empty(t, second["onboarding_id"])
	assert.Equal(t, map[string]any{"code": "onboarding_exists", "field": "hostname",
		"message": fmt.Sprintf("hostname: gpu-02 on site %s already has open onboarding %s", fx.site, busy["id"])}, second["error"])

	started := h.starter.started()
	require.Len(t, started, 3, "the single onboarding and two rows")
	assert.Equal(t, id, started[1].BatchID)
	assert.Equal(t, id, started[2].BatchID)

	got := h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/onboarding-batches/"+id, nil)
	assert.Equal(t, b["counts"], got["counts"])
	row := got["items"].([]any)[0].(map[string]any)
	assert.Equal(t, "validate", row["stage"])
	assert.InDelta(t, 1.0, row["attempt"], 0)

	list := h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/onboardings?batch_id="+id, nil)["items"].([]any)
	require.Len(t, list, 2)
	assert.Equal(t, first["onboarding_id"], list[0].(map[string]any)["id"])
	assert.Equal(t, id, list[0].(map[string]any)["batch_id"])
	list = h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/onboardings?batch_id="+id+"&hostname=gpu-03", nil)["items"].([]any)
	require.Len(t, list, 1)

	batches := h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/onboarding-batches", nil)["items"].([]any)
	require.Len(t, batches, 1)
	assert.Equal(t, id, batches[0].(map[string]any)["id"])
	assert.NotEmpty(t, h.auditFor("onboarding.batch.create"))
}

func TestBatchValidationStartsNothing(t *testing.T) {
	h := newHarness(t)
	fx := h.fixture()
	many := make([]any, 501)
	for i := range many {
		many[i] = node(fmt.Sprintf("gpu-%03d", i), fmt.Sprintf("10.0.%d.%d", i/250, i%250+1))
	}
	cases := []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"no nodes", fx.batch(), "nodes"},
		{"too many nodes", fx.batch(many...), "nodes"},
		{"bad host name", fx.batch(node("gpu-01", "10.0.0.1"), node("not_a_host", "10.0.0.2")), "nodes[1].hostname"},
		{"bad ipmi address", fx.batch(node("gpu-01", "10.0.0.1"), node("gpu-02", "10.0.0.300")), "nodes[1].ipmi_ip"},
		{"missing ipmi address", fx.batch(map[string]any{"hostname": "gpu-01"}), "nodes[0].ipmi_ip"},
		{"unknown row field", fx.batch(map[string]any{"hostname": "gpu-01", "ipmi_ip": "10.0.0.1", "rack": "7"}), "nodes[0].rack"},
		{"duplicate host", fx.batch(node("gpu-01", "10.0.0.1"), node("GPU-01", "10.0.0.2")), "nodes[1].hostname"},
		{"duplicate BMC", fx.batch(node("gpu-01", "10.0.0.1"), node("gpu-02", "10.0.0.1")), "nodes[1].ipmi_ip"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := h.admin("POST", "/api/v1/admin/onboardings/batch", tc.body)
			require.Equal(t, http.StatusBadRequest, r.status, r.body)
			assert.Equal(t, tc.field, r.json(t)["error"].(map[string]any)["field"], r.body)
			assert.Empty(t, h.starter.started(), "nothing started")
		})
	}
	r := h.admin("POST", "/api/v1/admin/onboardings/batch", map[string]any{"site_id": "nope", "profile_id": fx.profile, "sku_id": fx.sku, "nodes": []any{node("gpu-01", "10.0.0.1")}})
	assert.Equal(t, http.StatusUnprocessableEntity, r.status, r.body)
	assert.Equal(t, http.StatusNotFound, h.admin("GET", "/api/v1/admin/onboarding-batches/nope", nil).status)
	r = h.admin("GET", "/api/v1/admin/onboardings?batch_id=nope", nil)
	assert.Equal(t, http.StatusUnprocessableEntity, r.status, r.body)
	assert.Equal(t, http.StatusMethodNotAllowed, h.admin("GET", "/api/v1/admin/onboardings/batch", nil).status)
}
