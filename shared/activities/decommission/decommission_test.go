package decommission_test

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/internal/maassim"
	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/activities/activitiestest"
	"github.com/maasflow/maasflow/shared/activities/decommission"
	"github.com/maasflow/maasflow/shared/allocation"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
)

// t0 is the tests' start of time.
var t0 = time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)

// decomEnv is a node with a Deployed machine and one running decommission
// placed at a stage directly, the way an entry at any step finds it.
type decomEnv struct {
	t      *testing.T
	clk    *clockwork.FakeClock
	f      *activitiestest.Fixture
	allocs *allocation.Local
	a      *decommission.Activities
	ref    decommission.DecommissionRef
	sid    string
}

func newDecomEnv(t *testing.T, faults maassim.Faults, policy domain.Policy) *decomEnv {
	t.Helper()
	clk := clockwork.NewFakeClockAt(t0)
	f := activitiestest.New(t, activitiestest.Options{Clock: clk, Seed: 1, SitePolicy: policy})
	ctx := context.Background()
	require.NoError(t, f.Sim.AddHardware(maassim.Hardware{Hostname: "gpu-d", BMCIP: "10.20.0.5", PXEMAC: "52:54:00:20:00:05", Faults: faults}))
	sid, err := f.Sim.AddMachine(maassim.MachineSeed{Hostname: "gpu-d", BMCIP: "10.20.0.5", PXEMAC: "52:54:00:20:00:05", Status: "deployed"})
	require.NoError(t, err)
	now := clk.Now().UTC()
	node := domain.Node{ID: "node-d", SiteID: activitiestest.SiteID, Hostname: "gpu-d", SKUID: activitiestest.SKUID,
		Status: domain.NodeDecommissioning, MAASSystemID: sid, CreatedAt: now}
	require.NoError(t, f.Store.CreateNode(ctx, node))
	d := domain.Decommission{ID: "dec-1", NodeID: node.ID, SiteID: node.SiteID, Hostname: node.Hostname,
		Mode: domain.DecommissionStorageCleanup, Status: domain.DecommissionRunning, Stage: domain.DecomStageStart,
		Attempt: 1, MAASSystemID: sid, NodeStatusBefore: domain.NodeActive, CorrelationID: "corr-d", CreatedAt: now}
	require.NoError(t, f.Store.CreateDecommission(ctx, d))
	allocs := allocation.NewLocal(clk.Now)
	deps := f.Deps
	deps.Decommissions, deps.Allocations = f.Store, allocs
	return &decomEnv{t: t, clk: clk, f: f, allocs: allocs, a: decommission.New(deps), sid: sid,
		ref: decommission.DecommissionRef{DecommissionID: d.ID, NodeID: node.ID, SiteID: node.SiteID, Mode: d.Mode, Attempt: 1, CorrelationID: "corr-d"}}
}

func (e *decomEnv) record() domain.Decommission {
	e.t.Helper()
	d, err := e.f.Store.GetDecommission(context.Background(), "dec-1")
	require.NoError(e.t, err)
	return d
}

func (e *decomEnv) status() maas.Status {
	e.t.Helper()
	c, err := maas.NewClient(e.f.SimServer.URL+"/MAAS", activitiestest.APIKey)
	require.NoError(e.t, err)
	m, err := c.Get(context.Background(), e.sid)
	require.NoError(e.t, err)
	return m.Status
}

func (e *decomEnv) calls(op string) int {
	n := 0
	for _, c := range e.f.Sim.Calls().Calls {
		if c.Op == op {
			n += c.Count
		}
	}
	return n
}

// checkUntil polls the release as the ASL's loop does, advancing the clock
// by each wait, until the outcome is not in_progress.
func (e *decomEnv) checkUntil() decommission.CheckReleaseOutput {
	e.t.Helper()
	var p activities.Poll
	for range 50 {
		out, err := e.a.CheckRelease(context.Background(), decommission.CheckReleaseInput{DecommissionRef: e.ref, Poll: p})
		require.NoError(e.t, err)
		if out.Outcome != activities.OutcomeInProgress {
			return out
		}
		p = out.Poll
		e.clk.Advance(time.Duration(out.Poll.WaitSeconds) * time.Second)
	}
	e.t.Fatal("the release never ended")
	return decommission.CheckReleaseOutput{}
}

func TestReleaseMachineNeedsNoPredecessorStageAndSendsOnce(t *testing.T) {
	e := newDecomEnv(t, maassim.Faults{}, domain.Policy{})
	ctx := context.Background()

	// Straight from start: no drain stage before it, no complaint.
	out, err := e.a.ReleaseMachine(ctx, decommission.ReleaseMachineInput{DecommissionRef: e.ref})
	require.NoError(t, err)
	assert.Equal(t, domain.EraseSecure, out.EraseMode)
	assert.Equal(t, maas.StatusDiskErasing, e.status())
	d := e.record()
	assert.Equal(t, domain.DecomStageRelease, d.Stage)
	assert.Equal(t, domain.ErasePending, d.Erase.Outcome)

	_, err = e.a.ReleaseMachine(ctx, decommission.ReleaseMachineInput{DecommissionRef: e.ref})
	require.NoError(t, err)
	assert.Equal(t, 1, e.calls("release"), "a repeat sends nothing")

	got := e.checkUntil()
	assert.Equal(t, activities.OutcomeDone, got.Outcome)
	d = e.record()
	assert.Equal(t, domain.EraseDone, d.Erase.Outcome)
	assert.Contains(t, d.Erase.MAASEvents, "Disks erased")
	require.Len(t, d.Erase.ScriptResults, 1)
	assert.Equal(t, "wipe-disks", d.Erase.ScriptResults[0].Name)
}

func TestEraseFailureIsReportedWithThePolicysFallback(t *testing.T) {
	for _, fallback := range []bool{false, true} {
		e := newDecomEnv(t, maassim.Faults{EraseFailures: 1}, domain.Policy{DecommissionPolicy: domain.DecommissionPolicy{ReleaseFallback: &fallback}})
		_, err := e.a.ReleaseMachine(context.Background(), decommission.ReleaseMachineInput{DecommissionRef: e.ref})
		require.NoError(t, err)
		out := e.checkUntil()
		assert.Equal(t, decommission.OutcomeEraseFailed, out.Outcome)
		assert.Equal(t, fallback, out.ReleaseFallback, "the ASL decides from the policy it is handed")
		assert.Equal(t, domain.EraseFailed, e.record().Erase.Outcome)
		assert.Equal(t, maas.StatusFailedDiskErasing, e.status(), "nothing is released without erase here")
	}
}

func TestFallbackReleaseAbortsAHungEraseAndSaysNotErased(t *testing.T) {
	e := newDecomEnv(t, maassim.Faults{EraseHangs: 1}, domain.Policy{})
	ctx := context.Background()
	_, err := e.a.ReleaseMachine(ctx, decommission.ReleaseMachineInput{DecommissionRef: e.ref})
	require.NoError(t, err)
	e.clk.Advance(3 * time.Hour)
	out := e.checkUntil()
	require.Equal(t, decommission.OutcomeEraseHung, out.Outcome, out.Reason)

	step, err := e.a.FallbackRelease(ctx, decommission.FallbackReleaseInput{DecommissionRef: e.ref})
	require.NoError(t, err)
	assert.Equal(t, activities.OutcomeInProgress, step.Outcome, "abort first")
	assert.Equal(t, 1, e.calls("abort"))
	e.clk.Advance(time.Duration(step.WaitSeconds) * time.Second)
	assert.Equal(t, maas.StatusFailedDiskErasing, e.status())

	step, err = e.a.FallbackRelease(ctx, decommission.FallbackReleaseInput{DecommissionRef: e.ref})
	require.NoError(t, err)
	assert.Equal(t, decommission.OutcomeReleased, step.Outcome)
	assert.Zero(t, e.calls("mark_fixed"), "mark_fixed is for Broken machines only")
	assert.Equal(t, activities.OutcomeDone, e.checkUntil().Outcome)
	d := e.record()
	assert.True(t, d.Erase.Fallback)
	assert.Equal(t, domain.EraseNotDone, d.Erase.Outcome)
	assert.Contains(t, d.Erase.Detail, "NOT erased")
	assert.Contains(t, d.Erase.FallbackReason, "Disk erasing")
}

func TestClosedDecommissionIsLeftAlone(t *testing.T) {
	e := newDecomEnv(t, maassim.Faults{}, domain.Policy{})
	_, err := e.f.Store.UpdateDecommission(context.Background(), "dec-1", func(d *domain.Decommission) error {
		d.Status = domain.DecommissionManualIntervention
		return nil
	})
	require.NoError(t, err)
	_, err = e.a.ReleaseMachine(context.Background(), decommission.ReleaseMachineInput{DecommissionRef: e.ref})
	var closed *decommission.DecommissionClosedError
	require.ErrorAs(t, err, &closed)
	assert.Zero(t, e.calls("release"))

	stale := e.ref
	stale.Attempt = 2
	_, err = e.a.DrainAllocations(context.Background(), decommission.DrainAllocationsInput{DecommissionRef: stale})
	require.ErrorAs(t, err, &closed)
}

func TestDrainAllocations(t *testing.T) {
	e := newDecomEnv(t, maassim.Faults{}, domain.Policy{})
	ctx := context.Background()
	e.allocs.Put(domain.Allocation{ID: "a1", NodeID: "node-d", State: domain.AllocationActive})
	e.allocs.Put(domain.Allocation{ID: "a0", NodeID: "node-d", State: domain.AllocationReleased})
	e.allocs.Put(domain.Allocation{ID: "other", NodeID: "node-x", State: domain.AllocationActive})

	out, err := e.a.DrainAllocations(ctx, decommission.DrainAllocationsInput{DecommissionRef: e.ref})
	require.NoError(t, err)
	assert.Equal(t, activities.OutcomeInProgress, out.Outcome)
	assert.Equal(t, 1, out.Pending)
	assert.Positive(t, out.Poll.WaitSeconds)
	e.clk.Advance(allocation.LocalReleaseDelay)
	out, err = e.a.DrainAllocations(ctx, decommission.DrainAllocationsInput{DecommissionRef: e.ref, Poll: out.Poll})
	require.NoError(t, err)
	assert.Equal(t, activities.OutcomeDone, out.Outcome)
	other, _ := e.allocs.List(ctx, "node-x")
	assert.Equal(t, domain.AllocationActive, other[0].State, "another node's allocation is untouched")

	e.allocs.Put(domain.Allocation{ID: "a2", NodeID: "node-d", State: domain.AllocationReleaseFailed})
	_, err = e.a.DrainAllocations(ctx, decommission.DrainAllocationsInput{DecommissionRef: e.ref})
	var failed *decommission.DrainFailedError
	require.ErrorAs(t, err, &failed)
	assert.Equal(t, "a2", failed.AllocationID)

	e.allocs.Put(domain.Allocation{ID: "a2", NodeID: "node-d", State: domain.AllocationReleasing})
	start := e.clk.Now().UTC().Add(-31 * time.Minute).Format(time.RFC3339Nano)
	_, err = e.a.DrainAllocations(ctx, decommission.DrainAllocationsInput{DecommissionRef: e.ref, Poll: activities.Poll{StartedAt: start, Count: 9}})
	var timeout *decommission.DrainTimeoutError
	require.ErrorAs(t, err, &timeout)
	assert.Equal(t, []string{"a2"}, timeout.Pending)
}

// A machine keeps its MAAS events across owners: a "Disks erased" from an
// earlier release is not this decommission's evidence. With erase_mode
// none the disks are reported not erased, whatever the history says.
func TestEraseEvidenceIsOnlyThisReleasesEvents(t *testing.T) {
	none := domain.EraseNone
	e := newDecomEnv(t, maassim.Faults{}, domain.Policy{DecommissionPolicy: domain.DecommissionPolicy{EraseMode: &none}})
	ctx := context.Background()
	c, err := maas.NewClient(e.f.SimServer.URL+"/MAAS", activitiestest.APIKey)
	require.NoError(t, err)
	waitFor := func(want maas.Status) {
		t.Helper()
		for range 240 {
			if e.status() == want {
				return
			}
			e.clk.Advance(30 * time.Second)
		}
		t.Fatalf("machine never reached %s", want)
	}
	// An earlier owner released it with erase, then it was deployed again.
	_, err = c.Release(ctx, e.sid, maas.MachineReleaseParams{Erase: true, Comment: "an earlier owner"})
	require.NoError(t, err)
	waitFor(maas.StatusReady)
	_, err = c.Allocate(ctx, e.sid)
	require.NoError(t, err)
	_, err = c.Deploy(ctx, e.sid, maas.MachineDeployParams{DistroSeries: "jammy"})
	require.NoError(t, err)
	waitFor(maas.StatusDeployed)

	_, err = e.a.ReleaseMachine(ctx, decommission.ReleaseMachineInput{DecommissionRef: e.ref})
	require.NoError(t, err)
	assert.Positive(t, e.record().Erase.EventsAfter, "the release marks the events it came after")
	assert.Equal(t, activities.OutcomeDone, e.checkUntil().Outcome)
	d := e.record()
	assert.Equal(t, domain.EraseNotDone, d.Erase.Outcome, "the earlier owner's erase is not this one's: %+v", d.Erase)
	assert.NotContains(t, d.Erase.MAASEvents, "Disks erased")
}
