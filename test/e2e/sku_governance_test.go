package e2e

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// secondAdminToken is the local stack's second admin (startStackInAt).
const secondAdminToken = "e2e-second-admin-token-0b7c"

// An SKU deactivation needs two admins: the proposer cannot approve it;
// the second admin's approval deactivates it, the proposal lists the node
// in service and needs a rollback note, and a new onboarding against it
// is refused.
func TestSKUDeactivationNeedsTwoAdmins(t *testing.T) {
	t.Parallel()
	e := startStack(t)
	f := e.setup(nil, nil)
	nodeID, _ := e.onboarded(f, "gpu-gv1", "10.10.24.61", "52:54:00:24:61:01", nil)
	path := "/api/v1/admin/skus/" + f.SKUID

	refused := e.admin("PATCH", path, map[string]any{"active": false}, http.StatusUnprocessableEntity)
	assert.Contains(t, refused["error"].(map[string]any)["message"], nodeID, "the impact names the node in service")

	proposed := e.admin("PATCH", path, map[string]any{"active": false, "rollback_note": "PATCH active=true, approve"}, http.StatusAccepted)
	require.Equal(t, true, proposed["active"])
	p := proposed["proposal"].(map[string]any)
	assert.Equal(t, []any{nodeID}, p["affected_nodes"])

	e.admin("POST", path+"/approve", map[string]any{"proposal_id": p["id"]}, http.StatusForbidden)
	approved := e.call("POST", e.stack.APIURL+path+"/approve", secondAdminToken, map[string]any{"proposal_id": p["id"]}, http.StatusOK)
	assert.Equal(t, false, approved["active"])
	assert.Equal(t, "second-admin", approved["last_decision"].(map[string]any)["decided_by"])

	e.hardware("gpu-gv2", "10.10.24.62", "52:54:00:24:62:01", nil)
	out := e.admin("POST", "/api/v1/admin/onboardings", map[string]any{"site_id": f.SiteID, "profile_id": f.ProfileID, "sku_id": f.SKUID,
		"hostname": "gpu-gv2", "ipmi_ip": "10.10.24.62"}, http.StatusUnprocessableEntity)
	assert.Contains(t, out["error"].(map[string]any)["message"], "is not active")

	nodes := e.admin("GET", path+"/nodes", nil, http.StatusOK)["items"].([]any)
	require.Len(t, nodes, 1)
	assert.Equal(t, nodeID, nodes[0].(map[string]any)["id"])
	assert.True(t, e.skuAudited("sku.update", f.SKUID), "the proposal is audited")
	assert.True(t, e.skuAudited("sku.approve", f.SKUID), "the approval is audited")
}

// skuAudited reports whether a successful audit entry of action targets
// the SKU.
func (e *env) skuAudited(action, skuID string) bool {
	e.t.Helper()
	for _, row := range e.audit(100)["items"].([]any) {
		m := row.(map[string]any)
		if m["action"] == action && m["target"] == "sku:"+skuID && m["result"] == "success" {
			return true
		}
	}
	return false
}
