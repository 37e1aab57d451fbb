package api

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
)

// secondAdmin sends a request as the second admin (carol).
func (h *harness) secondAdmin(status int, method, path string, body any) map[string]any {
	h.t.Helper()
	r := h.do(call{method: method, path: path, body: body, token: secondAdminToken})
	require.Equal(h.t, status, r.status, "%s %s: %s", method, path, r.body)
	return r.json(h.t)
}

// deactivateSKU deactivates the SKU the governed way: alice proposes,
// carol approves. It returns the SKU as approved.
func (h *harness) deactivateSKU(id string) map[string]any {
	h.t.Helper()
	p := h.mustAdmin(http.StatusAccepted, "PATCH", "/api/v1/admin/skus/"+id, map[string]any{"active": false, "rollback_note": "reactivate it"})
	proposal := p["proposal"].(map[string]any)
	return h.secondAdmin(http.StatusOK, "POST", "/api/v1/admin/skus/"+id+"/approve", map[string]any{"proposal_id": proposal["id"]})
}

func TestSKUDeactivationNeedsASecondAdmin(t *testing.T) {
	h := newHarness(t)
	fx := h.fixture()
	path := "/api/v1/admin/skus/" + fx.sku

	proposed := h.mustAdmin(http.StatusAccepted, "PATCH", path, map[string]any{"active": false, "reason": "EOL"})
	assert.Equal(t, true, proposed["active"], "nothing changes before the approval")
	p := proposed["proposal"].(map[string]any)
	assert.Equal(t, "alice", p["proposed_by"])
	assert.Equal(t, false, p["active"])
	assert.Equal(t, "EOL", p["reason"])
	assert.Equal(t, true, h.mustAdmin(http.StatusOK, "GET", path, nil)["active"])

	again := h.admin("PATCH", path, map[string]any{"active": false})
	assert.Equal(t, http.StatusConflict, again.status, "one proposal at a time: %s", again.body)

	self := h.admin("POST", path+"/approve", map[string]any{"proposal_id": p["id"]})
	assert.Equal(t, http.StatusForbidden, self.status, "the proposer cannot approve: %s", self.body)
	assert.Contains(t, string(self.body), "second admin")
	assert.Equal(t, true, h.mustAdmin(http.StatusOK, "GET", path, nil)["active"])

	wrong := h.do(call{method: "POST", path: path + "/approve", body: map[string]any{"proposal_id": "other"}, token: secondAdminToken})
	assert.Equal(t, http.StatusConflict, wrong.status)
	assert.Contains(t, string(wrong.body), "proposal_id")
	bad := h.do(call{method: "POST", path: path + "/approve", body: map[string]any{}, token: secondAdminToken})
	assert.Equal(t, http.StatusBadRequest, bad.status)
	assert.Contains(t, string(bad.body), "proposal_id")

	approved := h.secondAdmin(http.StatusOK, "POST", path+"/approve", map[string]any{"proposal_id": p["id"]})
	assert.Equal(t, false, approved["active"])
	assert.Nil(t, approved["proposal"])
	d := approved["last_decision"].(map[string]any)
	assert.Equal(t, "approved", d["outcome"])
	assert.Equal(t, "carol", d["decided_by"])
	assert.Equal(t, "alice", d["proposed_by"])

	// Both steps are audited, each under its own actor.
	actors := map[string]string{}
	for _, e := range h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/audit?limit=100", nil)["items"].([]any) {
		row := e.(map[string]any)
		if row["target"] == "sku:"+fx.sku && row["result"] == "success" {
			actors[row["action"].(string)] = row["actor"].(string)
		}
	}
	assert.Equal(t, "alice", actors["sku.update"])
	assert.Equal(t, "carol", actors["sku.approve"])

	// Onboarding against the inactive SKU is refused, naming it.
	r := h.admin("POST", "/api/v1/admin/onboardings", map[string]any{"site_id": fx.site, "profile_id": fx.profile,
		"sku_id": fx.sku, "hostname": "gpu-gov1", "ipmi_ip": "10.0.0.9"})
	assert.Equal(t, http.StatusUnprocessableEntity, r.status)
	assert.Contains(t, string(r.body), "is not active")
}

func TestDeactivatingAnSKUInUseListsItsNodesAndNeedsARollbackNote(t *testing.T) {
	h := newHarness(t)
	fx := h.fixture()
	path := "/api/v1/admin/skus/" + fx.sku
	ctx := t.Context()
	for i, st := range []string{domain.NodeActive, domain.NodeOnboarding, domain.NodeRemoved} {
		require.NoError(t, h.store.CreateNode(ctx, domain.Node{ID: "node-gov-" + string(rune('a'+i)), SiteID: fx.site,
			Hostname: "gpu-gov-" + string(rune('a'+i)), SKUID: fx.sku, Status: st, CreatedAt: t0, UpdatedAt: t0}))
	}

	refused := h.admin("PATCH", path, map[string]any{"active": false})
	assert.Equal(t, http.StatusUnprocessableEntity, refused.status, "%s", refused.body)
	assert.Contains(t, string(refused.body), "rollback_note")
	assert.Contains(t, string(refused.body), "node-gov-a")
	assert.NotContains(t, string(refused.body), "node-gov-c", "a removed node is not in service")
	assert.Nil(t, h.mustAdmin(http.StatusOK, "GET", path, nil)["proposal"], "nothing proposed")

	p := h.mustAdmin(http.StatusAccepted, "PATCH", path, map[string]any{"active": false, "rollback_note": "PATCH active=true and approve"})["proposal"].(map[string]any)
	assert.EqualValues(t, 2, p["affected_count"])
	assert.ElementsMatch(t, []any{"node-gov-a", "node-gov-b"}, p["affected_nodes"])

	// The proposer may withdraw it; nothing changes.
	rejected := h.mustAdmin(http.StatusOK, "POST", path+"/reject", map[string]any{"proposal_id": p["id"]})
	assert.Equal(t, true, rejected["active"])
	assert.Equal(t, "rejected", rejected["last_decision"].(map[string]any)["outcome"])

	nodes := h.mustAdmin(http.StatusOK, "GET", path+"/nodes", nil)["items"].([]any)
	assert.Len(t, nodes, 3, "every node of the SKU")
	active := h.mustAdmin(http.StatusOK, "GET", path+"/nodes?status=active", nil)["items"].([]any)
	require.Len(t, active, 1)
	assert.Equal(t, "node-gov-a", active[0].(map[string]any)["id"])
	assert.Equal(t, http.StatusNotFound, h.admin("GET", "/api/v1/admin/skus/nope/nodes", nil).status)
	assert.Equal(t, http.StatusBadRequest, h.admin("GET", path+"/nodes?status=gone", nil).status)
}
