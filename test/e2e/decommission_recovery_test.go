package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/asl"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/enroll"
	"github.com/maasflow/maasflow/shared/maas"
)

// decomAudited reports whether the audit trail holds a successful action
// on the decommission, with the correlation id every entry carries.
func (e *env) decomAudited(action, id string) bool {
	e.t.Helper()
	audit := e.audit(200)
	for _, a := range audit["items"].([]any) {
		row := a.(map[string]any)
		if row["action"] == action && row["target"] == "decommission:"+id && row["result"] == "success" && row["correlation_id"] != "" {
			return true
		}
	}
	return false
}

// decomNotes returns the details of the decommission's timeline rows from
// source.
func (e *env) decomNotes(id, source string) []string {
	e.t.Helper()
	d := e.decommissionRecord(id)
	var notes []string
	for _, r := range d["timeline"].([]any) {
		if row := r.(map[string]any); row["source"] == source {
			notes = append(notes, row["detail"].(string))
		}
	}
	return notes
}

// waitDecomStage waits until the decommission runs at stage and ok accepts
// what MAAS shows of its machine.
func (e *env) waitDecomStage(id, stage, systemID string, ok func(maas.Status) bool) map[string]any {
	e.t.Helper()
	deadline := time.Now().Add(terminalWait)
	for {
		d := e.decommissionRecord(id)
		if d["status"] == "running" && d["stage"] == stage {
			m, err := e.maasClient().Get(context.Background(), systemID)
			require.NoError(e.t, err)
			if ok(m.Status) {
				return d
			}
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("decommission %s is %v at stage %v, never running at %s as expected", id, d["status"], d["stage"], stage)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitMAAS waits until MAAS shows the machine in status want.
func (e *env) waitMAAS(systemID string, want maas.Status) {
	e.t.Helper()
	deadline := time.Now().Add(terminalWait)
	for {
		m, err := e.maasClient().Get(context.Background(), systemID)
		require.NoError(e.t, err)
		if m.Status == want {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("machine %s is %s, never %s", systemID, m.Status, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestDecommissionEraseFailureRetried: an erase that fails without the
// release fallback stops for an operator; resume is refused because MAAS
// shows the failed erase; a retry while the disk still fails stops again
// (and says so with a new event); a retry once the simulator's fault has
// cleared runs the release again, erasing, and the decommission completes.
func TestDecommissionEraseFailureRetried(t *testing.T) {
	t.Parallel()
	e := startStack(t)
	f := e.setup(nil, nil)
	nodeID, systemID := e.onboarded(f, "gpu-dx1", "10.10.12.11", "52:54:00:00:c1:01", map[string]any{"erase_failures": 2})

	id := e.decommission(nodeID, "full")
	d := e.waitDecommission(id)
	require.Equal(t, "manual_intervention", d["status"], d)
	require.Equal(t, "EraseFailed", errorCode(d))
	assert.Equal(t, "release", d["stage"])
	assert.Equal(t, []any{"retry", "resume", "rerun", "adopt", "cancel"}, d["allowed_operations"])

	// MAAS shows the failed erase: resume does not fit, and says what does.
	status, body := e.raw("POST", e.stack.APIURL+"/api/v1/admin/decommissions/"+id+"/resume", e.stack.AdminToken, nil)
	assert.Equal(t, http.StatusConflict, status)
	assert.Contains(t, string(body), "MAAS shows Failed disk erasing")
	assert.Contains(t, string(body), "retry sends it again")
	// So does adopt: the machine is not released.
	status, body = e.raw("POST", e.stack.APIURL+"/api/v1/admin/decommissions/"+id+"/adopt", e.stack.AdminToken, nil)
	assert.Equal(t, http.StatusConflict, status)
	assert.Contains(t, string(body), "not released")

	// The disk still fails: the retried run stops again.
	r := e.recoverDecommission(id, domain.OpRetry, map[string]any{"reason": "first look"})
	assert.EqualValues(t, 1, r["attempt"], "the same attempt")
	assert.EqualValues(t, 1, r["run"], "a second run of it")
	assert.NotEqual(t, d["execution_id"], r["execution_id"], "a new execution")
	again := e.waitDecommission(id)
	require.Equal(t, "manual_intervention", again["status"], again)
	require.Equal(t, "EraseFailed", errorCode(again))

	const reason = "replaced the SAS cable"
	r = e.recoverDecommission(id, domain.OpRetry, map[string]any{"reason": reason})
	assert.EqualValues(t, 2, r["run"])
	if cur := e.decommissionRecord(id); cur["status"] == "pending" || cur["status"] == "running" {
		repeat := e.recoverDecommission(id, domain.OpRetry, nil)
		assert.EqualValues(t, 2, repeat["run"], "a repeat answers the run it started")
	}

	done := e.waitDecommission(id)
	require.Equal(t, "completed", done["status"], done)
	assert.Equal(t, "erased", erase(done)["outcome"], erase(done))
	assert.Equal(t, true, done["machine_deleted"])
	assert.Equal(t, "removed", e.node(nodeID)["status"])
	assert.Equal(t, []any{}, done["allowed_operations"])
	assert.Equal(t, 3, callsWithOp(e.simCalls(), "release"), "the failed erase, the failed retry, the retry that erased")
	_, err := e.maasClient().Get(context.Background(), systemID)
	var nf *maas.MAASNotFoundError
	require.ErrorAs(t, err, &nf)

	notes := e.decomNotes(id, "retry")
	require.Len(t, notes, 2, "each retry on the timeline")
	assert.Contains(t, notes[1], reason)
	assert.Contains(t, notes[1], "entering at release")
	assert.True(t, e.decomAudited("decommission.retry", id), "audit entry for the retry")
	// Each run's event, whatever order the bus got them in (occurred_at
	// orders them).
	assert.ElementsMatch(t, []string{"node.decommission.started", "node.decommission.manual_intervention_required",
		"node.decommission.manual_intervention_required", "node.decommission.completed"}, e.decommissionEvents(id, 4))

	// Completed: nothing is allowed, and the 409 says so.
	status, body = e.raw("POST", e.stack.APIURL+"/api/v1/admin/decommissions/"+id+"/rerun", e.stack.AdminToken, nil)
	assert.Equal(t, http.StatusConflict, status)
	assert.Contains(t, string(body), "is completed at stage finish: rerun is not allowed; allowed operations: none")
	e.admin("POST", "/api/v1/admin/decommissions/"+id+"/restart-clean", nil, http.StatusNotFound)
}

// TestDecommissionCancelDuringRelease: a decommission whose erase is under
// way is cancelled; MAAS's erase is aborted (the one abort MAAS allows
// there), the execution stops, and the node, whose machine no longer runs
// the tenant's OS, is retired rather than returned to service.
func TestDecommissionCancelDuringRelease(t *testing.T) {
	t.Parallel()
	e := startStack(t)
	f := e.setup(map[string]any{"erase_timeout_seconds": 3 * 24 * 3600}, nil)
	nodeID, systemID := e.onboarded(f, "gpu-dx2", "10.10.12.21", "52:54:00:00:c2:01", map[string]any{"erase_hangs": 1})

	id := e.decommission(nodeID, "")
	e.waitDecomStage(id, "release", systemID, func(s maas.Status) bool { return s == maas.StatusDiskErasing })

	// Freeze first: the run stops, the node stays held.
	frozen := e.recoverDecommission(id, domain.OpMarkManualIntervention, map[string]any{"reason": "check the erase"})
	assert.Equal(t, "manual_intervention", frozen["status"])
	assert.Equal(t, "FrozenByOperator", frozen["error"].(map[string]any)["code"])
	ex, err := e.stack.Engine.DescribeExecution(frozen["execution_id"].(string))
	require.NoError(t, err)
	assert.Equal(t, asl.StatusAborted, ex.Status, "the execution is stopped")
	again := e.recoverDecommission(id, domain.OpMarkManualIntervention, nil)
	assert.Equal(t, frozen["updated_at"], again["updated_at"], "a repeated freeze changes nothing")
	assert.Equal(t, "decommissioning", e.node(nodeID)["status"])

	const reason = "tenant asked to keep the disks"
	c := e.recoverDecommission(id, domain.OpCancel, map[string]any{"reason": reason})
	assert.Equal(t, "cancelled", c["status"])
	assert.Equal(t, "Cancelled", c["error"].(map[string]any)["code"])
	assert.NotEmpty(t, c["completed_at"])
	assert.Equal(t, []any{}, c["allowed_operations"])
	repeat := e.recoverDecommission(id, domain.OpCancel, nil)
	assert.Equal(t, c["updated_at"], repeat["updated_at"], "a repeated cancel answers the same record")

	e.waitMAAS(systemID, maas.StatusFailedDiskErasing)
	assert.Equal(t, 1, callsWithOp(e.simCalls(), "abort"), "MAAS's erase was aborted")
	assert.Equal(t, "retired", e.node(nodeID)["status"], "the release went out: unschedulable until an operator decides")
	notes := e.decomNotes(id, "cancel")
	require.Len(t, notes, 1)
	assert.Contains(t, notes[0], reason)
	assert.Contains(t, notes[0], "MAAS showed Disk erasing: abort sent")
	assert.True(t, e.decomAudited("decommission.mark-manual-intervention", id))
	assert.True(t, e.decomAudited("decommission.cancel", id))

	// The node is free for the next workflow.
	e.decommission(nodeID, "full")
}

// TestDecommissionCancelRevokesTheReimageToken: cancelling a reimage while
// its onboarding waits for the node cancels that onboarding and revokes
// the token the reimage handed out, so the node cannot enroll with it.
func TestDecommissionCancelRevokesTheReimageToken(t *testing.T) {
	t.Parallel()
	e := startStack(t)
	f := e.setup(nil, map[string]any{"enrollment_timeout_seconds": 86400})
	e.hardware("gpu-dx3", "10.10.12.31", "52:54:00:00:c3:01", map[string]any{"never_enrolls": true})
	first := e.onboard(f, "gpu-dx3", "10.10.12.31")
	e.waitStage(first, "wait_enrollment")
	old := e.nodeBundle("gpu-dx3")
	status, body := e.enroll(old.NodeID, old.Token)
	require.Equal(t, http.StatusOK, status, body)
	require.Equal(t, "completed", e.waitTerminal(first)["status"])

	id := e.decommission(old.NodeID, "reimage")
	deadline := time.Now().Add(terminalWait)
	var obID string
	for obID == "" {
		d := e.decommissionRecord(id)
		// The reimage stores its onboarding's id on the decommission
		// before it creates the onboarding (so a repeat creates no second
		// one): wait for the onboarding itself.
		if ob, _ := d["onboarding_id"].(string); ob != "" && d["stage"] == "reimage" {
			if status, _ := e.raw("GET", e.stack.APIURL+"/api/v1/admin/onboardings/"+ob, e.stack.AdminToken, nil); status == http.StatusOK {
				obID = ob
			}
		}
		require.False(t, time.Now().After(deadline), "the reimage never started: %v", d)
		time.Sleep(20 * time.Millisecond)
	}
	e.waitStage(obID, "wait_enrollment")
	fresh := e.nodeBundle("gpu-dx3")
	require.NotEqual(t, old.Token, fresh.Token)

	c := e.recoverDecommission(id, domain.OpCancel, map[string]any{"reason": "wrong host"})
	assert.Equal(t, "cancelled", c["status"])
	ob := e.onboarding(obID)
	assert.Equal(t, "cancelled", ob["status"], "the reimage's onboarding is cancelled with it")
	status, body = e.enroll(fresh.NodeID, fresh.Token)
	assert.Equal(t, http.StatusUnauthorized, status, "the reimage's token is refused: %s", body)
	tok, err := e.stack.Store.GetEnrollmentToken(context.Background(), enroll.HashToken(fresh.Token))
	require.NoError(t, err)
	assert.NotNil(t, tok.RevokedAt, "the reimage's token is revoked")
	assert.Nil(t, tok.ConsumedAt, "and was never used")
	assert.Equal(t, "retired", e.node(old.NodeID)["status"])
	notes := strings.Join(e.decomNotes(id, "cancel"), "\n")
	assert.Contains(t, notes, "reimage onboarding "+obID+" cancelled")
	assert.Contains(t, notes, "enrollment tokens revoked")
	assert.True(t, e.decomAudited("decommission.cancel", id))
}

// TestDecommissionResumeAfterTheDrainIsFixed: a drain the allocation
// service refuses stops for an operator; once the allocation is released
// and MAAS still shows the machine deployed (what the drain checkpoint
// expects), resume continues the same attempt from the drain.
func TestDecommissionResumeAfterTheDrainIsFixed(t *testing.T) {
	t.Parallel()
	e := startStack(t)
	f := e.setup(nil, nil)
	nodeID, _ := e.onboarded(f, "gpu-dx4", "10.10.12.41", "52:54:00:00:c4:01", nil)
	e.allocation(nodeID, "alloc-stuck", "release_failed")

	id := e.decommission(nodeID, "")
	d := e.waitDecommission(id)
	require.Equal(t, "manual_intervention", d["status"], d)
	require.Equal(t, "DrainFailedError", errorCode(d))
	require.Equal(t, "drain", d["stage"])
	// adopt would skip the tenants' allocations.
	status, body := e.raw("POST", e.stack.APIURL+"/api/v1/admin/decommissions/"+id+"/adopt", e.stack.AdminToken, nil)
	assert.Equal(t, http.StatusConflict, status)
	assert.Contains(t, string(body), "before its drain finished")

	e.allocation(nodeID, "alloc-stuck", "released")
	r := e.recoverDecommission(id, domain.OpResume, map[string]any{"reason": "tenant released by hand"})
	assert.EqualValues(t, 1, r["attempt"])

	done := e.waitDecommission(id)
	require.Equal(t, "completed", done["status"], done)
	assert.Equal(t, "erased", erase(done)["outcome"])
	assert.Equal(t, "retired", e.node(nodeID)["status"])
	notes := e.decomNotes(id, "resume")
	require.Len(t, notes, 1)
	assert.Contains(t, notes[0], "entering at drain")
	assert.True(t, e.decomAudited("decommission.resume", id))
}

// TestDecommissionAdoptsAMachineReleasedByHand: after a failed erase an
// operator releases the machine in MAAS without erase; adopt records the
// Ready machine, says plainly the disks may not be erased, and finishes.
func TestDecommissionAdoptsAMachineReleasedByHand(t *testing.T) {
	t.Parallel()
	e := startStack(t)
	f := e.setup(nil, nil)
	nodeID, systemID := e.onboarded(f, "gpu-dx5", "10.10.12.51", "52:54:00:00:c5:01", map[string]any{"erase_failures": 1})

	id := e.decommission(nodeID, "")
	require.Equal(t, "manual_intervention", e.waitDecommission(id)["status"])
	_, err := e.maasClient().Release(context.Background(), systemID, maas.MachineReleaseParams{Comment: "operator: release without erase"})
	require.NoError(t, err)
	e.waitMAAS(systemID, maas.StatusReady)

	r := e.recoverDecommission(id, domain.OpAdopt, nil)
	assert.EqualValues(t, 1, r["attempt"])
	done := e.waitDecommission(id)
	require.Equal(t, "completed", done["status"], done)
	ev := erase(done)
	assert.Equal(t, "not_erased", ev["outcome"], ev)
	assert.Contains(t, ev["detail"], "may NOT be erased")
	assert.Equal(t, "retired", e.node(nodeID)["status"])
	notes := e.decomNotes(id, "adopt")
	require.Len(t, notes, 1)
	assert.Contains(t, notes[0], "MAAS shows Ready")
	assert.True(t, e.decomAudited("decommission.adopt", id))
}

// TestDecommissionRerunIsANewAttempt: rerun starts attempt 2 from the top
// with fresh erase evidence; its events carry the new attempt.
func TestDecommissionRerunIsANewAttempt(t *testing.T) {
	t.Parallel()
	e := startStack(t)
	f := e.setup(nil, nil)
	nodeID, _ := e.onboarded(f, "gpu-dx6", "10.10.12.61", "52:54:00:00:c6:01", map[string]any{"erase_failures": 1})

	id := e.decommission(nodeID, "")
	require.Equal(t, "manual_intervention", e.waitDecommission(id)["status"])
	r := e.recoverDecommission(id, domain.OpRerun, nil)
	assert.EqualValues(t, 2, r["attempt"])
	assert.NotEqual(t, "failed", erase(r)["outcome"], "fresh erase evidence")

	done := e.waitDecommission(id)
	require.Equal(t, "completed", done["status"], done)
	assert.EqualValues(t, 2, done["attempt"])
	assert.Equal(t, "erased", erase(done)["outcome"])
	assert.Contains(t, erase(done)["maas_events"], "Disks erased", "attempt 2's erase")
	assert.Equal(t, []string{"node.decommission.started", "node.decommission.manual_intervention_required",
		"node.decommission.started", "node.decommission.completed"}, e.decommissionEvents(id, 4))
	assert.True(t, e.decomAudited("decommission.rerun", id))
}
