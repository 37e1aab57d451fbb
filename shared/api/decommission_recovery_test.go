package api

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
)

// fakeDecomRunner records the decommission runs started and stopped.
type fakeDecomRunner struct {
	mu       sync.Mutex
	starts   []domain.DecommissionStage
	stops    []string
	startErr error
	stopErr  error
	// onStart, when set, runs while a start is in flight (before it
	// answers): what a concurrent request does meanwhile.
	onStart func(d domain.Decommission)
}

func (f *fakeDecomRunner) StartDecommission(ctx context.Context, d domain.Decommission) (string, error) {
	return f.StartDecommissionAt(ctx, d, "")
}

func (f *fakeDecomRunner) StartDecommissionAt(_ context.Context, d domain.Decommission, start domain.DecommissionStage) (string, error) {
	f.mu.Lock()
	hook := f.onStart
	f.onStart = nil
	f.mu.Unlock()
	if hook != nil {
		hook(d)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.startErr != nil {
		return "", f.startErr
	}
	f.starts = append(f.starts, start)
	return "exec-" + d.ID + "-" + string(start), nil
}

func (f *fakeDecomRunner) StopDecommission(_ context.Context, executionID, _ string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopErr != nil {
		return f.stopErr
	}
	f.stops = append(f.stops, executionID)
	return nil
}

// fakeDecomMachines is MAAS as the recovery operations see it: one status.
type fakeDecomMachines struct {
	mu      sync.Mutex
	status  maas.Status
	gone    bool
	aborted int
}

func (f *fakeDecomMachines) GetMachine(_ context.Context, _, systemID string) (maas.Machine, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.gone {
		return maas.Machine{}, &maas.MAASNotFoundError{}
	}
	return maas.Machine{SystemID: systemID, Status: f.status}, nil
}

func (f *fakeDecomMachines) AbortMachine(_ context.Context, _, systemID, _ string) (maas.Machine, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.aborted++
	return maas.Machine{SystemID: systemID, Status: f.status}, nil
}

// decomHarness is the API harness with a decommission runner and MAAS.
func decomHarness(t *testing.T, machines MachineOps) (*harness, *fakeDecomRunner) {
	t.Helper()
	h := newHarness(t)
	runner := &fakeDecomRunner{}
	h.handler = New(Config{}, Deps{
		Store: h.store, Secrets: h.secrets, Starter: h.starter, Stopper: h.stopper, Completer: h.completer, Prober: h.prober,
		Auth:  NewStaticTokens(map[string]Principal{adminToken: {Subject: "alice", Admin: true}}),
		Clock: h.clock, Logger: slog.New(slog.NewJSONHandler(h.logs, nil)),
		Decommissions: runner, Machines: machines,
	})
	return h, runner
}

// seedDecommission stores a node and its decommission in status st at
// stage.
func seedDecommission(t *testing.T, h *harness, st domain.DecommissionStatus, stage domain.DecommissionStage, eraseSent bool) domain.Decommission {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, h.store.CreateNode(ctx, domain.Node{ID: "node-1", SiteID: "site-1", Hostname: "gpu-01",
		Status: domain.NodeDecommissioning, MAASSystemID: "abc123"}))
	d := domain.Decommission{ID: "dec-1", NodeID: "node-1", SiteID: "site-1", Hostname: "gpu-01", Mode: domain.DecommissionStorageCleanup,
		Status: st, Stage: stage, Attempt: 1, MAASSystemID: "abc123", NodeStatusBefore: "active", ExecutionID: "exec-0",
		Erase: domain.EraseEvidence{Mode: domain.EraseSecure, Outcome: domain.EraseFailed}, CorrelationID: "c0", CreatedBy: "alice"}
	if eraseSent {
		sent := t0
		d.Erase.StartedAt = &sent
	}
	if st == domain.DecommissionManualIntervention {
		d.Error = &domain.Failure{Code: "EraseFailed", Message: "Failed disk erasing", Stage: domain.Stage(stage)}
	}
	require.NoError(t, h.store.CreateDecommission(ctx, d))
	return d
}

func TestDecommissionRetryEntersAtTheStoppedStage(t *testing.T) {
	h, runner := decomHarness(t, &fakeDecomMachines{status: maas.StatusFailedDiskErasing})
	seedDecommission(t, h, domain.DecommissionManualIntervention, domain.DecomStageRelease, true)

	out := h.mustAdmin(http.StatusOK, "POST", "/api/v1/admin/decommissions/dec-1/retry", map[string]any{"reason": "cable"})
	assert.Equal(t, "pending", out["status"])
	assert.EqualValues(t, 1, out["run"])
	assert.Equal(t, "exec-dec-1-release", out["execution_id"])
	assert.Nil(t, out["error"], "the stop is cleared")
	ev := out["erase"].(map[string]any)
	assert.Equal(t, "pending", ev["outcome"])
	assert.Nil(t, ev["started_at"], "the erasing release is sent again")
	assert.Equal(t, []any{"cancel", "mark-manual-intervention"}, out["allowed_operations"])
	assert.Equal(t, []domain.DecommissionStage{domain.DecomStageRelease}, runner.starts)

	again := h.mustAdmin(http.StatusOK, "POST", "/api/v1/admin/decommissions/dec-1/retry", nil)
	assert.EqualValues(t, 1, again["run"], "a repeat answers the run it started")
	assert.Len(t, runner.starts, 1, "nothing started twice")
	assert.NotEmpty(t, h.auditFor("decommission.retry"))
}

func TestDecommissionRunThatDoesNotStartStaysWithTheOperator(t *testing.T) {
	h, runner := decomHarness(t, &fakeDecomMachines{status: maas.StatusFailedDiskErasing})
	seedDecommission(t, h, domain.DecommissionManualIntervention, domain.DecomStageRelease, true)
	runner.startErr = errors.New("throttled")

	r := h.admin("POST", "/api/v1/admin/decommissions/dec-1/retry", nil)
	require.Equal(t, http.StatusServiceUnavailable, r.status, "%s", r.body)
	d, err := h.store.GetDecommission(context.Background(), "dec-1")
	require.NoError(t, err)
	assert.Equal(t, domain.DecommissionManualIntervention, d.Status, "the drained node is not handed back")
	require.NotNil(t, d.Error)
	assert.Equal(t, startFailure, d.Error.Code)
}

func TestDecommissionResumeAndAdoptReadMAAS(t *testing.T) {
	machines := &fakeDecomMachines{status: maas.StatusFailedDiskErasing}
	h, runner := decomHarness(t, machines)
	seedDecommission(t, h, domain.DecommissionManualIntervention, domain.DecomStageRelease, true)

	r := h.admin("POST", "/api/v1/admin/decommissions/dec-1/resume", nil)
	require.Equal(t, http.StatusConflict, r.status)
	_, msg := r.errorOf(t)
	assert.Contains(t, msg, "MAAS shows Failed disk erasing; the release failed; retry sends it again")
	r = h.admin("POST", "/api/v1/admin/decommissions/dec-1/adopt", nil)
	require.Equal(t, http.StatusConflict, r.status)
	_, msg = r.errorOf(t)
	assert.Contains(t, msg, "not released")
	assert.Empty(t, runner.starts, "nothing started")

	machines.status = maas.StatusReady
	out := h.mustAdmin(http.StatusOK, "POST", "/api/v1/admin/decommissions/dec-1/adopt", nil)
	assert.Equal(t, "not_erased", out["erase"].(map[string]any)["outcome"])
	assert.Contains(t, out["erase"].(map[string]any)["detail"], "may NOT be erased")
	assert.Equal(t, []domain.DecommissionStage{domain.DecomStageFinish}, runner.starts, "storage_cleanup finishes after Ready")
}

func TestDecommissionWithoutMAASAccess(t *testing.T) {
	h, _ := decomHarness(t, nil)
	seedDecommission(t, h, domain.DecommissionManualIntervention, domain.DecomStageDrain, false)

	r := h.admin("POST", "/api/v1/admin/decommissions/dec-1/resume", nil)
	assert.Equal(t, http.StatusServiceUnavailable, r.status, "resume needs to read MAAS")

	out := h.mustAdmin(http.StatusOK, "POST", "/api/v1/admin/decommissions/dec-1/cancel", map[string]any{"reason": "wrong node"})
	assert.Equal(t, "cancelled", out["status"])
	n, err := h.store.GetNode(context.Background(), "node-1")
	require.NoError(t, err)
	assert.Equal(t, domain.NodeRetired, n.Status, "MAAS could not confirm the machine is still Deployed: out of service until an operator checks")
	rows, err := h.store.ListDecommissionEvents(context.Background(), "dec-1")
	require.NoError(t, err)
	require.NotEmpty(t, rows)
	assert.Contains(t, rows[len(rows)-1].Detail, "nothing aborted")
	assert.Contains(t, rows[len(rows)-1].Detail, "MAAS could not confirm the machine is still Deployed")
}

func TestDecommissionCancelAbortsTheEraseAndRetiresTheNode(t *testing.T) {
	machines := &fakeDecomMachines{status: maas.StatusDiskErasing}
	h, runner := decomHarness(t, machines)
	seedDecommission(t, h, domain.DecommissionRunning, domain.DecomStageRelease, true)

	out := h.mustAdmin(http.StatusOK, "POST", "/api/v1/admin/decommissions/dec-1/cancel", nil)
	assert.Equal(t, "cancelled", out["status"])
	assert.Equal(t, "cancelled by alice", out["error"].(map[string]any)["message"])
	assert.Equal(t, []string{"exec-0"}, runner.stops, "the execution is stopped")
	assert.Equal(t, 1, machines.aborted)
	n, err := h.store.GetNode(context.Background(), "node-1")
	require.NoError(t, err)
	assert.Equal(t, domain.NodeRetired, n.Status)

	r := h.admin("POST", "/api/v1/admin/decommissions/dec-1/retry", nil)
	require.Equal(t, http.StatusConflict, r.status)
	_, msg := r.errorOf(t)
	assert.Equal(t, "decommission dec-1 is cancelled at stage release: retry is not allowed; allowed operations: none", msg)
	h.mustAdmin(http.StatusNotFound, "POST", "/api/v1/admin/decommissions/dec-1/restart-clean", nil)
}

func TestDecommissionFreezeStopsFirst(t *testing.T) {
	h, runner := decomHarness(t, &fakeDecomMachines{status: maas.StatusDiskErasing})
	seedDecommission(t, h, domain.DecommissionRunning, domain.DecomStageRelease, true)
	runner.stopErr = errors.New("sfn down")

	r := h.admin("POST", "/api/v1/admin/decommissions/dec-1/mark-manual-intervention", nil)
	assert.Equal(t, http.StatusServiceUnavailable, r.status)
	d, err := h.store.GetDecommission(context.Background(), "dec-1")
	require.NoError(t, err)
	assert.Equal(t, domain.DecommissionRunning, d.Status, "nothing changed")

	runner.stopErr = nil
	h.clock.Advance(time.Minute)
	out := h.mustAdmin(http.StatusOK, "POST", "/api/v1/admin/decommissions/dec-1/mark-manual-intervention", map[string]any{"reason": "look"})
	assert.Equal(t, "manual_intervention", out["status"])
	assert.Equal(t, domain.FrozenCode, out["error"].(map[string]any)["code"])
	assert.Equal(t, []any{"retry", "resume", "rerun", "adopt", "cancel"}, out["allowed_operations"])
}
