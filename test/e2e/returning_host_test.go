package e2e

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
)

// TestReturningHostIsANewNode: a host whose node was retired and removed
// (its machine still Deployed in MAAS) is onboarded again as a new node
// identity. The run stops for an operator at discovery, saying the machine
// is Deployed; once the operator released it in MAAS, a rerun redeploys it
// under the new identity. The old id stays removed and refused everywhere.
func TestReturningHostIsANewNode(t *testing.T) {
	t.Parallel()
	e := startStack(t)
	f := e.setup(nil, nil)
	oldID, systemID := e.onboarded(f, "gpu-back1", "10.10.5.121", "52:54:00:00:5c:01", nil)
	e.nodeOp(oldID, "retire")
	bundle := e.nodeOp(oldID, "bootstrap-bundle")
	oldToken := bundle["bootstrap_bundle"].(map[string]any)["GPUAAS_ENROLLMENT_TOKEN"].(string)
	require.Equal(t, "removed", e.nodeOp(oldID, "remove")["status"])

	id := e.onboard(f, "gpu-back1", "10.10.5.121")
	first := e.waitTerminal(id)
	newID, _ := first["node_id"].(string)
	require.NotEmpty(t, newID)
	assert.NotEqual(t, oldID, newID, "a returning host is a new node")
	require.Equal(t, "manual_intervention", first["status"], "the machine MAAS still holds is Deployed: %v", first["error"])
	failure := first["error"].(map[string]any)
	assert.Equal(t, "MachineStateUnsafeError", failure["code"], failure)
	assert.Contains(t, failure["message"], "Deployed", failure)
	assert.Contains(t, failure["message"], "release it in MAAS, then rerun", failure)
	require.Contains(t, first["allowed_operations"], "rerun")

	// The operator releases the machine in MAAS; a rerun adopts and
	// redeploys it under the new identity.
	ctx := context.Background()
	_, err := e.maasClient().Release(ctx, systemID, maas.MachineReleaseParams{Comment: "returning host"})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		m, err := e.maasClient().Get(ctx, systemID)
		return err == nil && m.Status == maas.StatusReady
	}, terminalWait, 20*time.Millisecond, "the released machine becomes Ready")
	e.recoverOnboarding(id, domain.OpRerun, map[string]any{"reason": "released the old node's machine"})
	done := e.waitTerminal(id)
	require.Equal(t, "completed", done["status"], "error: %v", done["error"])
	assert.Equal(t, systemID, done["maas_system_id"], "the same MAAS machine, redeployed")
	assert.Equal(t, newID, done["node_id"])
	assert.Equal(t, "active", e.node(newID)["status"])

	// The old id stays removed and refused everywhere.
	assert.Equal(t, "removed", e.node(oldID)["status"])
	status, _ := e.enroll(oldID, oldToken)
	assert.Equal(t, http.StatusUnauthorized, status, "the old node's token is refused")
	status, _ = e.enroll(newID, oldToken)
	assert.Equal(t, http.StatusUnauthorized, status, "the old node's token does not enroll the new node")
	for _, op := range []string{"retire", "reactivate", "remove", "bootstrap-bundle"} {
		e.admin("POST", "/api/v1/admin/nodes/"+oldID+"/"+op, nil, http.StatusConflict)
	}
	e.admin("POST", "/api/v1/admin/nodes/"+oldID+"/decommission", map[string]any{"mode": "full", "reason": "e2e"}, http.StatusConflict)
	list := e.admin("GET", "/api/v1/admin/nodes?site_id="+f.SiteID+"&status=active", nil, http.StatusOK)
	require.Len(t, list["items"], 1)
	assert.Equal(t, newID, list["items"].([]any)[0].(map[string]any)["id"])
}

// TestHostReturnsAfterFullDecommission: a full decommission deletes the
// machine from MAAS and removes the node; the host onboarded again is
// created in MAAS afresh under a new node identity.
func TestHostReturnsAfterFullDecommission(t *testing.T) {
	t.Parallel()
	e := startStack(t)
	f := e.setup(nil, nil)
	oldID, _ := e.onboarded(f, "gpu-back2", "10.10.5.122", "52:54:00:00:5c:02", nil)
	d := e.waitDecommission(e.decommission(oldID, "full"))
	require.Equal(t, "completed", d["status"], d)
	require.Equal(t, "removed", e.node(oldID)["status"])

	o := e.waitTerminal(e.onboard(f, "gpu-back2", "10.10.5.122"))
	require.Equal(t, "completed", o["status"], "error: %v", o["error"])
	assert.NotEqual(t, oldID, o["node_id"], "a returning host is a new node")
	assert.Equal(t, "active", e.node(o["node_id"].(string))["status"])
	assert.Equal(t, "removed", e.node(oldID)["status"])
}
