package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/client"
	schemas "github.com/maasflow/maasflow/events"
	"github.com/maasflow/maasflow/shared/maas"
)

// onboarded onboards a fresh host and returns its node id and MAAS system
// id once the onboarding completed.
func (e *env) onboarded(f fixture, hostname, bmcIP, mac string, faults map[string]any) (nodeID, systemID string) {
	e.t.Helper()
	e.hardware(hostname, bmcIP, mac, faults)
	o := e.waitTerminal(e.onboard(f, hostname, bmcIP))
	require.Equal(e.t, "completed", o["status"], o)
	return o["node_id"].(string), o["maas_system_id"].(string)
}

// decommission starts a decommission of the node (mode "" is the
// storage-cleanup endpoint) and returns its id.
func (e *env) decommission(nodeID, mode string) string {
	e.t.Helper()
	var raw []byte
	var err error
	if mode == "" {
		_, err = e.api.StorageCleanup(e.ctx(), nodeID, "tenant change", client.RawResponse(&raw))
	} else {
		_, err = e.api.DecommissionNode(e.ctx(), nodeID, client.DecommissionCreate{Mode: mode, Reason: "e2e"}, client.RawResponse(&raw))
	}
	require.NoError(e.t, err)
	out := e.asMap(raw)
	// The answer is the record as read after the start: a run that fails
	// at once (a drain refused by the allocation service) may already have
	// closed by then.
	require.Contains(e.t, []any{"pending", "running", "manual_intervention", "failed"}, out["status"], out)
	require.NotEmpty(e.t, out["id"], out)
	return out["id"].(string)
}

// waitDecommission polls the decommission until it is no longer pending
// or running.
func (e *env) waitDecommission(id string) map[string]any {
	e.t.Helper()
	deadline := time.Now().Add(terminalWait)
	for {
		d := e.decommissionRecord(id)
		if d["status"] != "pending" && d["status"] != "running" {
			return d
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("decommission %s still %v at stage %v", id, d["status"], d["stage"])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (e *env) node(id string) map[string]any {
	e.t.Helper()
	return e.admin("GET", "/api/v1/admin/nodes/"+id, nil, http.StatusOK)
}

// decommissionEvents returns the detail types emitted for one
// decommission once n are on the bus, each detail checked against its
// schema.
func (e *env) decommissionEvents(id string, n int) []string {
	e.t.Helper()
	deadline := time.Now().Add(terminalWait)
	for {
		envs, err := e.stack.Bus.ReadAll()
		require.NoError(e.t, err)
		var types []string
		for _, ev := range envs {
			if !strings.Contains(string(ev.Detail), `"decommission_id":"`+id+`"`) {
				continue
			}
			require.NoError(e.t, schemas.Validate(ev.DetailType, ev.Detail), "event %s", ev.DetailType)
			types = append(types, ev.DetailType)
		}
		if len(types) >= n || time.Now().After(deadline) {
			return types
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func erase(d map[string]any) map[string]any {
	ev, _ := d["erase"].(map[string]any)
	return ev
}

func (e *env) allocation(nodeID, id, state string) {
	e.t.Helper()
	e.admin("POST", "/_local/allocations", map[string]any{"node_id": nodeID, "allocation_id": id, "state": state}, http.StatusCreated)
}

func (e *env) allocations(nodeID string) map[string]string {
	e.t.Helper()
	out := e.admin("GET", "/_local/allocations?node_id="+nodeID, nil, http.StatusOK)
	states := map[string]string{}
	for _, it := range out["items"].([]any) {
		m := it.(map[string]any)
		states[m["allocation_id"].(string)] = m["state"].(string)
	}
	return states
}

func TestFullDecommissionDrainsErasesDeletesAndRemoves(t *testing.T) {
	t.Parallel()
	e := startStack(t)
	f := e.setup(nil, nil)
	nodeID, systemID := e.onboarded(f, "gpu-d1", "10.10.5.11", "52:54:00:00:51:01", nil)
	old := e.nodeBundle("gpu-d1")
	e.allocation(nodeID, "alloc-1", "active")

	id := e.decommission(nodeID, "full")
	d := e.waitDecommission(id)

	require.Equal(t, "completed", d["status"], d)
	assert.Equal(t, "full", d["mode"])
	assert.Equal(t, systemID, d["maas_system_id"])
	assert.Equal(t, true, d["machine_deleted"])
	ev := erase(d)
	assert.Equal(t, "secure", ev["mode"])
	assert.Equal(t, "erased", ev["outcome"], ev)
	assert.Contains(t, ev["maas_events"], "Disks erased")
	assert.Equal(t, "released", e.allocations(nodeID)["alloc-1"], "the allocation was drained before the release")

	n := e.node(nodeID)
	assert.Equal(t, "removed", n["status"])
	_, err := e.maasClient().Get(context.Background(), systemID)
	var nf *maas.MAASNotFoundError
	require.ErrorAs(t, err, &nf, "the machine is deleted from MAAS")

	status, body := e.enroll(nodeID, old.Token)
	assert.Equal(t, http.StatusUnauthorized, status, "a removed node's token is refused: %s", body)
	assert.Equal(t, []string{"node.decommission.started", "node.decommission.completed"}, e.decommissionEvents(id, 2))

	calls := e.simCalls()
	assert.Equal(t, 1, callsWithOp(calls, "release"))
	assert.Equal(t, 1, calls["DELETE /MAAS/api/2.0/machines/{system_id}/"])

	// A removed node is terminal: no second decommission, no reissue.
	e.admin("POST", "/api/v1/admin/nodes/"+nodeID+"/decommission", map[string]any{"mode": "full"}, http.StatusConflict)
	e.admin("POST", "/api/v1/admin/nodes/"+nodeID+"/bootstrap-bundle", nil, http.StatusConflict)
}

func TestReimageOnboardsTheSameNodeAgain(t *testing.T) {
	t.Parallel()
	e := startStack(t)
	f := e.setup(nil, nil)
	nodeID, systemID := e.onboarded(f, "gpu-r1", "10.10.5.21", "52:54:00:00:52:01", nil)
	old := e.nodeBundle("gpu-r1")
	first := e.node(nodeID)["onboarding_id"]

	id := e.decommission(nodeID, "reimage")
	d := e.waitDecommission(id)

	require.Equal(t, "completed", d["status"], d)
	obID, _ := d["onboarding_id"].(string)
	require.NotEmpty(t, obID, "the decommission links its onboarding")
	assert.NotEqual(t, first, obID)
	o := e.onboarding(obID)
	assert.Equal(t, "completed", o["status"])
	assert.Equal(t, nodeID, o["node_id"], "same node identity")
	assert.Equal(t, systemID, o["maas_system_id"], "the Ready machine was adopted")
	assert.Equal(t, "erased", erase(d)["outcome"])

	n := e.node(nodeID)
	assert.Equal(t, "active", n["status"])
	assert.Equal(t, obID, n["onboarding_id"])
	fresh := e.nodeBundle("gpu-r1")
	assert.NotEqual(t, old.Token, fresh.Token, "a new token")
	status, _ := e.enroll(nodeID, old.Token)
	assert.Equal(t, http.StatusUnauthorized, status, "the old token is refused")
	assert.Equal(t, []string{"node.decommission.started", "node.decommission.completed"}, e.decommissionEvents(id, 2))
	assert.Equal(t, 2, callsWithOp(e.simCalls(), "deploy"), "deployed again")
}

func TestStorageCleanupRetiresWithEraseEvidence(t *testing.T) {
	t.Parallel()
	e := startStack(t)
	f := e.setup(map[string]any{"erase_mode": "quick"}, nil)
	nodeID, systemID := e.onboarded(f, "gpu-s1", "10.10.5.31", "52:54:00:00:53:01", nil)

	d := e.waitDecommission(e.decommission(nodeID, ""))

	require.Equal(t, "completed", d["status"], d)
	assert.Equal(t, "storage_cleanup", d["mode"])
	ev := erase(d)
	assert.Equal(t, "quick", ev["mode"])
	assert.Equal(t, "erased", ev["outcome"], ev)
	assert.Equal(t, false, ev["fallback"])
	results, _ := ev["script_results"].([]any)
	require.Len(t, results, 1, "MAAS's release script results are kept")
	assert.Equal(t, "wipe-disks", results[0].(map[string]any)["name"])
	assert.Equal(t, "Passed", results[0].(map[string]any)["status"])
	assert.Equal(t, "retired", e.node(nodeID)["status"])
	m, err := e.maasClient().Get(context.Background(), systemID)
	require.NoError(t, err)
	assert.Equal(t, maas.StatusReady, m.Status, "the machine stays, Ready")
}

func TestEraseFailureWithFallbackCompletesNotErased(t *testing.T) {
	t.Parallel()
	e := startStack(t)
	f := e.setup(map[string]any{"release_fallback": true}, nil)
	nodeID, _ := e.onboarded(f, "gpu-f1", "10.10.5.41", "52:54:00:00:54:01", map[string]any{"erase_failures": 1})

	d := e.waitDecommission(e.decommission(nodeID, ""))

	require.Equal(t, "completed", d["status"], d)
	ev := erase(d)
	assert.Equal(t, "not_erased", ev["outcome"], ev)
	assert.Equal(t, true, ev["fallback"])
	assert.Contains(t, ev["detail"], "NOT erased")
	assert.Contains(t, ev["maas_events"], "Failed to erase disks.")
	assert.Equal(t, "retired", e.node(nodeID)["status"])
	calls := e.simCalls()
	assert.Equal(t, 2, callsWithOp(calls, "release"), "the erase, then the release without erase")
	assert.Zero(t, callsWithOp(calls, "mark_fixed"), "mark_fixed only for a Broken machine")
}

func TestEraseFailureWithoutFallbackNeedsAnOperator(t *testing.T) {
	t.Parallel()
	e := startStack(t)
	f := e.setup(nil, nil)
	nodeID, systemID := e.onboarded(f, "gpu-f2", "10.10.5.51", "52:54:00:00:55:01", map[string]any{"erase_failures": 1})

	id := e.decommission(nodeID, "full")
	d := e.waitDecommission(id)

	require.Equal(t, "manual_intervention", d["status"], d)
	assert.Equal(t, "EraseFailed", errorCode(d))
	assert.Equal(t, "failed", erase(d)["outcome"])
	assert.Equal(t, "decommissioning", e.node(nodeID)["status"], "out of service until an operator acts")
	m, err := e.maasClient().Get(context.Background(), systemID)
	require.NoError(t, err)
	assert.Equal(t, maas.StatusFailedDiskErasing, m.Status, "nothing was released without erase")
	assert.Equal(t, []string{"node.decommission.started", "node.decommission.manual_intervention_required"}, e.decommissionEvents(id, 2))
	// The node stays held: a second decommission is refused.
	e.admin("POST", "/api/v1/admin/nodes/"+nodeID+"/decommission", map[string]any{"mode": "full"}, http.StatusConflict)
}

// TestBrokenMachineIsReleasedFromBroken: a machine data-centre staff
// marked Broken is released with erase straight from Broken (MAAS's
// RELEASABLE_STATUSES hold Broken), keeping their mark until the release;
// mark_fixed is sent first only when the policy says so.
func TestBrokenMachineIsReleasedFromBroken(t *testing.T) {
	t.Parallel()
	e := startStack(t)
	for i, markFixed := range []bool{false, true} {
		f := e.setup(map[string]any{"mark_fixed_before_release": markFixed}, nil)
		host := fmt.Sprintf("gpu-b9%d", i)
		nodeID, systemID := e.onboarded(f, host, fmt.Sprintf("10.10.5.6%d", i), fmt.Sprintf("52:54:00:00:56:0%d", i), nil)
		before := e.simCalls()
		_, err := e.maasClient().MarkBroken(context.Background(), systemID, "disk controller errors")
		require.NoError(t, err)

		d := e.waitDecommission(e.decommission(nodeID, ""))

		require.Equal(t, "completed", d["status"], d)
		assert.Equal(t, "erased", erase(d)["outcome"])
		calls := e.simCalls()
		fixes := callsWithOp(calls, "mark_fixed") - callsWithOp(before, "mark_fixed")
		assert.Equal(t, 1, callsWithOp(calls, "release")-callsWithOp(before, "release"))
		var notes []string
		for _, r := range d["timeline"].([]any) {
			notes = append(notes, fmt.Sprint(r.(map[string]any)["detail"]))
		}
		if markFixed {
			assert.Equal(t, 1, fixes, "the policy asks for mark_fixed")
			assert.Contains(t, strings.Join(notes, "\n"), "machine was Broken: mark_fixed")
		} else {
			assert.Zero(t, fixes, "released from Broken as it is")
			assert.NotContains(t, strings.Join(notes, "\n"), "mark_fixed")
		}
	}
}

func TestDrainFailureStopsBeforeMAASIsTouched(t *testing.T) {
	t.Parallel()
	e := startStack(t)
	f := e.setup(nil, nil)
	nodeID, _ := e.onboarded(f, "gpu-dr", "10.10.5.71", "52:54:00:00:57:01", nil)
	e.allocation(nodeID, "alloc-stuck", "release_failed")
	before := callsWithOp(e.simCalls(), "release")

	d := e.waitDecommission(e.decommission(nodeID, "full"))

	require.Equal(t, "manual_intervention", d["status"], d)
	assert.Equal(t, "DrainFailedError", errorCode(d))
	assert.Equal(t, before, callsWithOp(e.simCalls(), "release"), "no release while a tenant holds the node")
}

func TestNodeLifecycle(t *testing.T) {
	t.Parallel()
	e := startStack(t)
	f := e.setup(nil, nil)
	nodeID, _ := e.onboarded(f, "gpu-l1", "10.10.5.81", "52:54:00:00:58:01", nil)

	list := e.admin("GET", "/api/v1/admin/nodes?site_id="+f.SiteID+"&status=active", nil, http.StatusOK)
	require.Len(t, list["items"], 1)
	n := e.node(nodeID)
	assert.Equal(t, "active", n["status"])
	assert.Equal(t, f.SKUID, n["sku_id"])
	assert.NotEmpty(t, n["maas_system_id"])
	assert.NotNil(t, n["last_onboarding"])

	// Remove needs a retired node; retire needs no allocation in use.
	out := e.admin("POST", "/api/v1/admin/nodes/"+nodeID+"/remove", nil, http.StatusConflict)
	assert.Equal(t, "invalid_request", out["error"].(map[string]any)["code"])
	e.allocation(nodeID, "alloc-7", "active")
	out = e.admin("POST", "/api/v1/admin/nodes/"+nodeID+"/retire", nil, http.StatusConflict)
	assert.Equal(t, "node_in_use", out["error"].(map[string]any)["code"])
	e.allocation(nodeID, "alloc-7", "released")
	assert.Equal(t, "retired", e.nodeOp(nodeID, "retire")["status"])
	assert.Equal(t, "active", e.nodeOp(nodeID, "reactivate")["status"])
	e.admin("POST", "/api/v1/admin/nodes/"+nodeID+"/reactivate", nil, http.StatusConflict)

	// Reissue: the newest bundle's token works, every earlier one is revoked.
	first := e.nodeOp(nodeID, "bootstrap-bundle")
	second := e.nodeOp(nodeID, "bootstrap-bundle")
	tok := func(r map[string]any) string {
		return r["bootstrap_bundle"].(map[string]any)["GPUAAS_ENROLLMENT_TOKEN"].(string)
	}
	require.NotEqual(t, tok(first), tok(second))
	status, body := e.enroll(nodeID, tok(first))
	assert.Equal(t, http.StatusUnauthorized, status)
	assert.Contains(t, body, "revoked")
	status, body = e.enroll(nodeID, tok(second))
	assert.Equal(t, http.StatusOK, status, body)
	assert.NotContains(t, e.logs.String(), tok(second), "the token never reaches a log")
	audit := e.audit(0)
	raw, _ := json.Marshal(audit)
	assert.Contains(t, string(raw), "node.bootstrap_bundle.reissue")

	e.nodeOp(nodeID, "retire")
	third := e.nodeOp(nodeID, "bootstrap-bundle")
	status, body = e.enroll(nodeID, tok(third))
	assert.Equal(t, http.StatusOK, status, body)
	assert.Equal(t, "retired", e.node(nodeID)["status"], "a retired node re-enrolls without returning to service")
	unused := e.nodeOp(nodeID, "bootstrap-bundle")
	assert.Equal(t, "removed", e.nodeOp(nodeID, "remove")["status"])
	refused := e.admin("POST", "/api/v1/admin/nodes/"+nodeID+"/bootstrap-bundle", nil, http.StatusConflict)
	assert.Contains(t, refused["error"].(map[string]any)["message"], "removed")
	status, _ = e.enroll(nodeID, tok(unused))
	assert.Equal(t, http.StatusUnauthorized, status, "a removed node's enroll is refused")
}

func TestDecommissionRefusedWhileAnOnboardingIsOpen(t *testing.T) {
	t.Parallel()
	e := startStack(t)
	f := e.setup(nil, map[string]any{"enrollment_timeout_seconds": 86400})
	e.hardware("gpu-o1", "10.10.5.91", "52:54:00:00:59:01", map[string]any{"never_enrolls": true})
	obID := e.onboard(f, "gpu-o1", "10.10.5.91")
	o := e.onboarding(obID)
	nodeID := o["node_id"].(string)

	out := e.admin("POST", "/api/v1/admin/nodes/"+nodeID+"/decommission", map[string]any{"mode": "full"}, http.StatusConflict)
	assert.Equal(t, "workflow_open", out["error"].(map[string]any)["code"])
	assert.Contains(t, out["error"].(map[string]any)["message"], obID)
	e.admin("POST", "/api/v1/admin/nodes/"+nodeID+"/decommission", map[string]any{"mode": "sideways"}, http.StatusBadRequest)
	page := e.admin("GET", "/api/v1/admin/decommissions?node_id="+nodeID, nil, http.StatusOK)
	assert.Empty(t, page["items"], "nothing half-written")
}

func TestHungEraseIsAbortedAndReleasedWithoutErase(t *testing.T) {
	t.Parallel()
	e := startStack(t)
	f := e.setup(map[string]any{"release_fallback": true, "erase_timeout_seconds": 600}, nil)
	nodeID, systemID := e.onboarded(f, "gpu-h1", "10.10.5.101", "52:54:00:00:5a:01", map[string]any{"erase_hangs": 1})

	d := e.waitDecommission(e.decommission(nodeID, "full"))

	require.Equal(t, "completed", d["status"], d)
	ev := erase(d)
	assert.Equal(t, "not_erased", ev["outcome"], ev)
	assert.Equal(t, true, ev["fallback"])
	assert.Contains(t, ev["fallback_reason"], "Disk erasing")
	assert.Contains(t, ev["maas_events"], "Aborted disk erasing")
	calls := e.simCalls()
	assert.Equal(t, 1, callsWithOp(calls, "abort"), "the hung erase is aborted, not forced")
	assert.Equal(t, 2, callsWithOp(calls, "release"))
	_, err := e.maasClient().Get(context.Background(), systemID)
	var nf *maas.MAASNotFoundError
	require.ErrorAs(t, err, &nf, "full decommission deleted it")
}
