package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
)

// TestRestartCleanAfterAFailureRecommissions: a deploy that failed for a
// reason no retry fixes; restart-clean releases the machine with the
// policy's erase, commissions it afresh, and the new attempt completes.
func TestRestartCleanAfterAFailureRecommissions(t *testing.T) {
	t.Parallel()
	e := startStack(t)
	f := e.setup(map[string]any{"erase_mode": "quick"}, nil)
	e.hardware("gpu-rc1", "10.10.9.61", "52:54:00:00:96:01", map[string]any{"deploy_other_failures": 1})
	id := e.onboard(f, "gpu-rc1", "10.10.9.61")
	first := e.waitTerminal(id)
	require.Equal(t, "manual_intervention", first["status"], first["error"])
	require.Contains(t, first["allowed_operations"], "restart-clean")
	systemID := first["maas_system_id"].(string)
	before := e.simCalls()

	o := e.recoverOnboarding(id, domain.OpRestartClean, map[string]any{"reason": "reseated the NIC"})
	assert.EqualValues(t, 2, o["attempt"])
	assert.Nil(t, o["error"])

	done := e.waitTerminal(id)
	require.Equal(t, "completed", done["status"], "error: %v", done["error"])
	assert.EqualValues(t, 2, done["attempt"])
	assert.Equal(t, systemID, done["maas_system_id"], "the same machine, cleaned")
	after := e.simCalls()
	assert.Equal(t, 1, callsWithOp(after, "release")-callsWithOp(before, "release"), "released once")
	assert.Equal(t, 1, callsWithOp(after, "commission")-callsWithOp(before, "commission"), "commissioned afresh")
	assert.Equal(t, 1, callsWithOp(after, "deploy")-callsWithOp(before, "deploy"))
	notes := e.timelineNotes(id, "restart-clean")
	require.Len(t, notes, 1, "the operation")
	assert.Contains(t, notes[0], "reseated the NIC")
	released := e.timelineNotes(id, "reset")
	require.Len(t, released, 1, "the release it asked for")
	assert.Contains(t, released[0], "erase quick")
	assert.True(t, e.audited("onboarding.restart-clean", id), "audit entry for restart-clean")
	assert.Equal(t, "active", e.node(done["node_id"].(string))["status"])

	// Completed allows nothing: undoing it is a decommission.
	e.admin("POST", "/api/v1/admin/onboardings/"+id+"/restart-clean", nil, http.StatusConflict)
}

// TestAdoptAMachineCommissionedByHand: commissioning failed; an operator
// fixed the machine and commissioned it in MAAS by hand. adopt takes the
// Ready machine and the run continues at storage, commissioning nothing.
func TestAdoptAMachineCommissionedByHand(t *testing.T) {
	t.Parallel()
	e := startStack(t)
	f := e.setup(nil, nil)
	e.hardware("gpu-ad1", "10.10.9.71", "52:54:00:00:97:01", map[string]any{"commission_failures": 1})
	id := e.onboard(f, "gpu-ad1", "10.10.9.71")
	first := e.waitTerminal(id)
	require.Equal(t, "manual_intervention", first["status"], first["error"])
	systemID := first["maas_system_id"].(string)

	_, err := e.maasClient().Commission(context.Background(), systemID, maas.CommissionParams{SkipBMCConfig: true})
	require.NoError(t, err)
	e.waitMAAS(systemID, maas.StatusReady)
	before := e.simCalls()

	o := e.recoverOnboarding(id, domain.OpAdopt, map[string]any{"reason": "recommissioned by hand"})
	assert.EqualValues(t, 1, o["attempt"], "adopt runs the same attempt")
	done := e.waitTerminal(id)
	require.Equal(t, "completed", done["status"], "error: %v", done["error"])
	after := e.simCalls()
	assert.Zero(t, callsWithOp(after, "commission")-callsWithOp(before, "commission"), "adopt commissions nothing")
	assert.Equal(t, 1, callsWithOp(after, "deploy")-callsWithOp(before, "deploy"))
	notes := e.timelineNotes(id, "adopt")
	require.Len(t, notes, 2, "the operation and what it adopted")
	assert.Contains(t, notes[0], "recommissioned by hand")
	assert.Contains(t, notes[1], "Ready: continuing at storage")
	assert.True(t, e.audited("onboarding.adopt", id), "audit entry for adopt")
}

// TestAdoptAMachineDeployedByHand: the deploy failed; an operator released
// the machine and deployed it by hand, without maasflow's bootstrap. adopt
// sees Deployed with no node agent enrolled and stops for the operator,
// saying so, with the node not active; restart-clean then brings it back
// through maasflow to completed.
func TestAdoptAMachineDeployedByHand(t *testing.T) {
	t.Parallel()
	e := startStack(t)
	f := e.setup(map[string]any{"erase_mode": "none"}, nil)
	e.hardware("gpu-ad2", "10.10.9.72", "52:54:00:00:97:02", map[string]any{"deploy_other_failures": 1})
	id := e.onboard(f, "gpu-ad2", "10.10.9.72")
	first := e.waitTerminal(id)
	require.Equal(t, "manual_intervention", first["status"], first["error"])
	systemID := first["maas_system_id"].(string)

	// MAAS shows Failed deployment: nothing to take over, and the answer
	// says what fits.
	status, body := e.raw("POST", e.stack.APIURL+"/api/v1/admin/onboardings/"+id+"/adopt", e.stack.AdminToken, nil)
	require.Equal(t, http.StatusConflict, status, "%s", body)
	assert.Contains(t, string(body), "MAAS shows machine "+systemID+" Failed deployment")
	assert.Contains(t, string(body), "retry")

	ctx := context.Background()
	c := e.maasClient()
	_, err := c.Release(ctx, systemID, maas.MachineReleaseParams{Comment: "operator: trying by hand"})
	require.NoError(t, err)
	e.waitMAAS(systemID, maas.StatusReady)
	_, err = c.Allocate(ctx, systemID)
	require.NoError(t, err)
	_, err = c.Deploy(ctx, systemID, maas.MachineDeployParams{DistroSeries: "jammy", Comment: "operator: by hand"})
	require.NoError(t, err)
	e.waitMAAS(systemID, maas.StatusDeployed)

	e.recoverOnboarding(id, domain.OpAdopt, nil)
	o := e.waitTerminal(id)
	require.Equal(t, "manual_intervention", o["status"])
	assert.Equal(t, "AdoptionRefusedError", errorCode(o))
	msg := o["error"].(map[string]any)["message"].(string)
	assert.Contains(t, msg, "Deployed")
	assert.Contains(t, msg, "never enrolled")
	assert.Contains(t, msg, "restart-clean")
	assert.NotEqual(t, "active", e.node(o["node_id"].(string))["status"], "no node active without a completed onboarding")
	assert.True(t, e.audited("onboarding.adopt", id))

	e.recoverOnboarding(id, domain.OpRestartClean, nil)
	done := e.waitTerminal(id)
	require.Equal(t, "completed", done["status"], "error: %v", done["error"])
	assert.EqualValues(t, 2, done["attempt"])
	assert.Equal(t, systemID, done["maas_system_id"])
	assert.Equal(t, "active", e.node(done["node_id"].(string))["status"])
}

// TestAdoptAMachineDeployedByHandWithTheBootstrap: the deploy failed; an
// operator reissued the node's bootstrap bundle (allowed while the
// onboarding is stopped), released the machine and deployed it by hand
// with the bundle as user_data. The node agent enrolls with the reissued
// token: recorded on the onboarding's timeline, the node not active by
// that alone. adopt then sees Deployed with the node enrolled for this
// attempt, the completion gates pass, and the onboarding completes with
// the node active.
func TestAdoptAMachineDeployedByHandWithTheBootstrap(t *testing.T) {
	t.Parallel()
	e := startStack(t)
	f := e.setup(map[string]any{"erase_mode": "none"}, nil)
	e.hardware("gpu-ad3", "10.10.9.73", "52:54:00:00:97:03", map[string]any{"deploy_other_failures": 1})
	id := e.onboard(f, "gpu-ad3", "10.10.9.73")
	first := e.waitTerminal(id)
	require.Equal(t, "manual_intervention", first["status"], first["error"])
	systemID := first["maas_system_id"].(string)
	nodeID := first["node_id"].(string)

	reissued := e.nodeOp(nodeID, "bootstrap-bundle")
	bundle, err := json.Marshal(reissued["bootstrap_bundle"])
	require.NoError(t, err)
	notes := e.timelineNotes(id, "bootstrap-bundle")
	require.Len(t, notes, 1, "the reissue is on the onboarding's timeline")
	assert.Contains(t, notes[0], "attempt 1's token")
	assert.NotContains(t, notes[0], reissued["bootstrap_bundle"].(map[string]any)["GPUAAS_ENROLLMENT_TOKEN"].(string), "no token on the timeline")

	ctx := context.Background()
	c := e.maasClient()
	_, err = c.Release(ctx, systemID, maas.MachineReleaseParams{Comment: "operator: trying by hand"})
	require.NoError(t, err)
	e.waitMAAS(systemID, maas.StatusReady)
	_, err = c.Allocate(ctx, systemID)
	require.NoError(t, err)
	userData := "#cloud-config\nwrite_files:\n- path: /etc/gpuaas/bootstrap-bundle.json\n  encoding: b64\n  content: " +
		base64.StdEncoding.EncodeToString(bundle) + "\n"
	_, err = c.Deploy(ctx, systemID, maas.MachineDeployParams{DistroSeries: "jammy", UserData: domain.Secret(userData), Comment: "operator: by hand with the bootstrap"})
	require.NoError(t, err)
	e.waitMAAS(systemID, maas.StatusDeployed)

	// The node agent enrolls on its own once the OS is up.
	deadline := time.Now().Add(terminalWait)
	for len(e.timelineNotes(id, "enrollment")) == 0 {
		require.True(t, time.Now().Before(deadline), "the node agent never enrolled")
		time.Sleep(100 * time.Millisecond)
	}
	enrolled := e.timelineNotes(id, "enrollment")
	assert.Contains(t, enrolled[0], "enrolled with the bundle reissued for attempt 1 while the onboarding is manual_intervention")
	stopped := e.onboarding(id)
	assert.Equal(t, "manual_intervention", stopped["status"], "the enrollment reopens nothing")
	node := e.node(nodeID)
	assert.NotEqual(t, "active", node["status"], "not active by the enrollment alone")
	assert.NotNil(t, node["enrolled_at"])

	o := e.recoverOnboarding(id, domain.OpAdopt, map[string]any{"reason": "deployed by hand with the bootstrap"})
	assert.EqualValues(t, 1, o["attempt"], "adopt runs the same attempt")
	done := e.waitTerminal(id)
	require.Equal(t, "completed", done["status"], "error: %v", done["error"])
	assert.Equal(t, systemID, done["maas_system_id"])
	assert.Equal(t, "active", e.node(nodeID)["status"])
	adopted := e.timelineNotes(id, "adopt")
	require.NotEmpty(t, adopted)
	assert.Contains(t, adopted[0], "deployed by hand with the bootstrap")
	joined := strings.Join(adopted, "\n")
	assert.Contains(t, joined, "Deployed, with node "+nodeID+" enrolled")
	assert.Contains(t, joined, "reissued while the run was stopped")
	assert.True(t, e.audited("onboarding.adopt", id), "audit entry for adopt")
	assert.True(t, e.nodeAudited("node.bootstrap_bundle.reissue", nodeID), "audit entry for the reissue")
	assert.True(t, e.nodeAudited("node.enroll", nodeID), "audit entry for the enrollment")

	// Once the onboarding completed, a reissue is a plain node bundle: it
	// binds nothing to the closed run.
	e.nodeOp(nodeID, "bootstrap-bundle")
	assert.Len(t, e.timelineNotes(id, "bootstrap-bundle"), 1, "a completed onboarding's timeline is not written")
}

// nodeAudited reports whether the audit trail holds a successful action
// on the node with a correlation id.
func (e *env) nodeAudited(action, nodeID string) bool {
	e.t.Helper()
	audit := e.audit(100)
	for _, a := range audit["items"].([]any) {
		row := a.(map[string]any)
		if row["action"] == action && row["target"] == "node:"+nodeID && row["result"] == "success" && row["correlation_id"] != "" {
			return true
		}
	}
	return false
}
