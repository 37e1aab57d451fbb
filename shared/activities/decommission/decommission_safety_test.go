package decommission_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/internal/maassim"
	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/activities/activitiestest"
	"github.com/maasflow/maasflow/shared/activities/decommission"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
)

func (e *decomEnv) client() *maas.Client {
	e.t.Helper()
	c, err := maas.NewClient(e.f.SimServer.URL+"/MAAS", activitiestest.APIKey)
	require.NoError(e.t, err)
	return c
}

func (e *decomEnv) node() domain.Node {
	e.t.Helper()
	n, err := e.f.Store.GetNode(context.Background(), "node-d")
	require.NoError(e.t, err)
	return n
}

func (e *decomEnv) timeline() []domain.DecommissionEvent {
	e.t.Helper()
	rows, err := e.f.Store.ListDecommissionEvents(context.Background(), "dec-1")
	require.NoError(e.t, err)
	return rows
}

// TestBrokenMachineIsReleasedAsItIs: MAAS releases from Broken
// (RELEASABLE_STATUSES), so the decommission releases with erase straight
// from there and leaves data-centre staff's mark alone; mark_fixed is sent
// first only when the policy asks.
func TestBrokenMachineIsReleasedAsItIs(t *testing.T) {
	for _, markFixed := range []bool{false, true} {
		e := newDecomEnv(t, maassim.Faults{}, domain.Policy{DecommissionPolicy: domain.DecommissionPolicy{MarkFixedBeforeRelease: &markFixed}})
		_, err := e.client().MarkBroken(context.Background(), e.sid, "disk controller errors")
		require.NoError(t, err)
		require.Equal(t, maas.StatusBroken, e.status())

		_, err = e.a.ReleaseMachine(context.Background(), decommission.ReleaseMachineInput{DecommissionRef: e.ref})
		require.NoError(t, err)
		assert.Equal(t, 1, e.calls("release"))
		if markFixed {
			assert.Equal(t, 1, e.calls("mark_fixed"), "the policy asks for mark_fixed")
		} else {
			assert.Zero(t, e.calls("mark_fixed"), "released from Broken as it is")
		}
		assert.Equal(t, maas.StatusDiskErasing, e.status())
		assert.Equal(t, activities.OutcomeDone, e.checkUntil().Outcome)
		assert.Equal(t, domain.EraseDone, e.record().Erase.Outcome)
	}
}

// TestEraseEvidenceCountsEachMAASEventOnce: after a failed erase and the
// fallback's release without erase, the poll reads MAAS's events from the
// release's mark again; the evidence still lists MAAS's "Failed to erase
// disks." once, as MAAS wrote it once (and as the timeline does).
func TestEraseEvidenceCountsEachMAASEventOnce(t *testing.T) {
	fallback := true
	e := newDecomEnv(t, maassim.Faults{EraseFailures: 1}, domain.Policy{DecommissionPolicy: domain.DecommissionPolicy{ReleaseFallback: &fallback}})
	ctx := context.Background()
	_, err := e.a.ReleaseMachine(ctx, decommission.ReleaseMachineInput{DecommissionRef: e.ref})
	require.NoError(t, err)
	require.Equal(t, decommission.OutcomeEraseFailed, e.checkUntil().Outcome)
	step, err := e.a.FallbackRelease(ctx, decommission.FallbackReleaseInput{DecommissionRef: e.ref})
	require.NoError(t, err)
	require.Equal(t, decommission.OutcomeReleased, step.Outcome)
	require.Equal(t, activities.OutcomeDone, e.checkUntil().Outcome)

	d := e.record()
	n := 0
	for _, ev := range d.Erase.MAASEvents {
		if ev == "Failed to erase disks." {
			n++
		}
	}
	assert.Equal(t, 1, n, "evidence %v", d.Erase.MAASEvents)
	assert.Equal(t, domain.EraseNotDone, d.Erase.Outcome)
}

// TestEraseOutcomeFollowsMAASWhateverStopsTheRun: MAAS said "Disks erased",
// then the machine ended somewhere other than Ready (here marked Broken
// while Releasing): the release failed, and the evidence says erased.
func TestEraseOutcomeFollowsMAASWhateverStopsTheRun(t *testing.T) {
	e := newDecomEnv(t, maassim.Faults{}, domain.Policy{})
	ctx := context.Background()
	_, err := e.a.ReleaseMachine(ctx, decommission.ReleaseMachineInput{DecommissionRef: e.ref})
	require.NoError(t, err)
	var p activities.Poll
	for range 400 { // 3 simulated minutes of erase, then 30 s of release
		if e.status() == maas.StatusReleasing {
			break
		}
		e.clk.Advance(time.Second)
	}
	require.Equal(t, maas.StatusReleasing, e.status(), "the erase finished, the release has not")
	out, err := e.a.CheckRelease(ctx, decommission.CheckReleaseInput{DecommissionRef: e.ref, Poll: p})
	require.NoError(t, err)
	require.Equal(t, activities.OutcomeInProgress, out.Outcome)
	p = out.Poll
	_, err = e.client().MarkBroken(ctx, e.sid, "PSU failure while releasing")
	require.NoError(t, err)

	out, err = e.a.CheckRelease(ctx, decommission.CheckReleaseInput{DecommissionRef: e.ref, Poll: p})
	require.NoError(t, err)
	require.Equal(t, activities.OutcomeFailed, out.Outcome, out.Reason)
	d := e.record()
	assert.Contains(t, d.Erase.MAASEvents, "Disks erased")
	assert.Equal(t, domain.EraseDone, d.Erase.Outcome, "MAAS said the disks were erased: %s", d.Erase.Detail)
}

// cancellingPublisher is the event bus of an execution an operator stops
// while it publishes: the stop cancels the handler's context (as the local
// runtime does), so the publish fails with it.
type cancellingPublisher struct{ cancel context.CancelFunc }

func (p cancellingPublisher) Publish(ctx context.Context, _ string, _ any) error {
	p.cancel()
	return ctx.Err()
}

// TestStoppedDecommissionRunWritesNothing: an execution stopped while its
// activity runs (the context cancelled, the record cancelled by the
// operator) leaves no row, no record change and no event after the stop.
func TestStoppedDecommissionRunWritesNothing(t *testing.T) {
	e := newDecomEnv(t, maassim.Faults{}, domain.Policy{})
	_, err := e.f.Store.UpdateDecommission(context.Background(), "dec-1", func(d *domain.Decommission) error {
		d.Status = domain.DecommissionPending
		return nil
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	deps := e.f.Deps
	deps.Decommissions, deps.Allocations = e.f.Store, e.allocs
	deps.Events = cancellingPublisher{cancel: cancel}
	a := decommission.New(deps)

	before := len(e.timeline())
	_, err = a.BeginDecommission(ctx, decommission.BeginDecommissionInput{DecommissionRef: e.ref})
	require.Error(t, err)
	rows := e.timeline()
	for _, r := range rows[before:] {
		assert.NotEqual(t, domain.TimelineStageExited, r.Kind, "the stopped run wrote %s %s: %s", r.Kind, r.Outcome, r.Detail)
	}

	// The record was cancelled by the operator meanwhile: the stopped
	// run's last activity writes nothing either, and publishes nothing.
	_, err = e.f.Store.UpdateDecommission(context.Background(), "dec-1", func(d *domain.Decommission) error {
		d.Status = domain.DecommissionCancelled
		return nil
	})
	require.NoError(t, err)
	before = len(e.timeline())
	_, err = e.a.FinishDecommission(context.Background(), decommission.FinishDecommissionInput{DecommissionRef: e.ref,
		Status: domain.DecommissionFailed, Error: &activities.CatchResult{Error: "EventPublishError", Cause: "{}"}})
	require.NoError(t, err)
	assert.Len(t, e.timeline(), before, "nothing after the cancel")
	assert.Equal(t, domain.DecommissionCancelled, e.record().Status)
}

// TestFailedRunAfterAReleaseRetiresTheNode: a run that takes the failed
// path after an earlier attempt released the machine (a rerun whose first
// step fails) never hands the node back to service: retired, saying why.
func TestFailedRunAfterAReleaseRetiresTheNode(t *testing.T) {
	e := newDecomEnv(t, maassim.Faults{EraseFailures: 1}, domain.Policy{})
	ctx := context.Background()
	_, err := e.a.ReleaseMachine(ctx, decommission.ReleaseMachineInput{DecommissionRef: e.ref})
	require.NoError(t, err)
	require.Equal(t, decommission.OutcomeEraseFailed, e.checkUntil().Outcome)
	// rerun: attempt 2 from the top, evidence cleared, back at the start.
	_, err = e.f.Store.UpdateDecommission(ctx, "dec-1", func(d *domain.Decommission) error {
		d.Attempt, d.Run, d.Stage, d.Status = 2, 0, domain.DecomStageStart, domain.DecommissionRunning
		d.Erase = domain.EraseEvidence{}
		return nil
	})
	require.NoError(t, err)
	ref := e.ref
	ref.Attempt = 2
	out, err := e.a.FinishDecommission(ctx, decommission.FinishDecommissionInput{DecommissionRef: ref,
		Status: domain.DecommissionFailed, Error: &activities.CatchResult{Error: "ActivityFailedError", Cause: "{}"}})
	require.NoError(t, err)
	assert.Equal(t, domain.NodeRetired, out.NodeStatus)
	assert.Equal(t, domain.NodeRetired, e.node().Status)
	found := false
	for _, r := range e.timeline() {
		found = found || strings.Contains(r.Detail, "node node-d: decommissioning → retired: an attempt of this decommission released the machine")
	}
	assert.True(t, found, "the timeline says why the node is retired")
}

// TestFailedRunBeforeAnyReleaseGivesTheNodeBack: nothing was sent and MAAS
// still shows the machine Deployed: the node gets its status back.
func TestFailedRunBeforeAnyReleaseGivesTheNodeBack(t *testing.T) {
	e := newDecomEnv(t, maassim.Faults{}, domain.Policy{})
	out, err := e.a.FinishDecommission(context.Background(), decommission.FinishDecommissionInput{DecommissionRef: e.ref,
		Status: domain.DecommissionFailed, Error: &activities.CatchResult{Error: "ActivityFailedError", Cause: "{}"}})
	require.NoError(t, err)
	assert.Equal(t, domain.NodeActive, out.NodeStatus)
	found := false
	for _, r := range e.timeline() {
		found = found || strings.Contains(r.Detail, "MAAS still shows the machine Deployed and no release was sent")
	}
	assert.True(t, found, "the timeline says why the node is back")
}
