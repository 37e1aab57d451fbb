package localstack

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/events"
)

// decomEvents are the decommission events of type detailType for id on
// s's event bus.
func decomEvents(t *testing.T, s *Stack, id, detailType string) []events.DecommissionDetail {
	t.Helper()
	return eventsOf(t, s, detailType, func(d events.DecommissionDetail) bool { return d.DecommissionID == id })
}

// TestInterruptedDecommissionStopsForAnOperator: a decommission the
// previous process left running (its execution gone with it) is never
// left running: it is manual_intervention with the reason, a timeline note
// and its node.decommission.manual_intervention_required event, the node
// still held out of service; a second restart changes nothing.
func TestInterruptedDecommissionStopsForAnOperator(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	first := startIn(t, dir)
	ahead := time.Now().UTC().Add(30 * 24 * time.Hour)
	runAhead(t, first, ahead.Add(time.Minute))
	started := ahead.Add(-time.Minute)
	require.NoError(t, first.Store.CreateNode(ctx, domain.Node{ID: "n1", SiteID: "s1", Hostname: "gpu-01", Status: domain.NodeDecommissioning,
		MAASSystemID: "abc123", CreatedAt: ahead.Add(-time.Hour)}))
	for _, d := range []domain.Decommission{
		{ID: "d-run", NodeID: "n1", SiteID: "s1", Hostname: "gpu-01", Mode: domain.DecommissionFull, Status: domain.DecommissionRunning,
			Stage: domain.DecomStageRelease, Attempt: 1, MAASSystemID: "abc123", NodeStatusBefore: domain.NodeActive, ExecutionID: "arn:gone",
			ReleaseStartedAt: &started, Erase: domain.EraseEvidence{Mode: domain.EraseSecure, Outcome: domain.ErasePending, StartedAt: &started},
			CorrelationID: "c1", CreatedAt: ahead.Add(-time.Hour), UpdatedAt: ahead},
		{ID: "d-pending", NodeID: "n2", SiteID: "s1", Hostname: "gpu-02", Mode: domain.DecommissionStorageCleanup, Status: domain.DecommissionPending,
			Attempt: 2, MAASSystemID: "def456", CorrelationID: "c2", CreatedAt: ahead.Add(-time.Hour), UpdatedAt: ahead},
	} {
		require.NoError(t, first.Store.CreateDecommission(ctx, d))
	}
	require.NoError(t, first.Store.AppendDecommissionEvents(ctx, domain.DecommissionEvent{
		DecommissionID: "d-run", Time: ahead.Add(time.Minute), Attempt: 1, Kind: domain.TimelineStageEntered, Stage: domain.DecomStageRelease,
	}))
	require.NoError(t, first.Close())

	second := startIn(t, dir)
	for _, id := range []string{"d-run", "d-pending"} {
		d, err := second.Store.GetDecommission(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, domain.DecommissionManualIntervention, d.Status, "%s is never left open without an execution", id)
		require.NotNil(t, d.Error)
		assert.Equal(t, interruptedCode, d.Error.Code)
		assert.Empty(t, d.ExecutionID, "no execution runs it")
		rows, err := second.Store.ListDecommissionEvents(ctx, id)
		require.NoError(t, err)
		var notes []string
		for _, r := range rows {
			if r.Source == "restart" {
				notes = append(notes, r.Detail)
				assert.True(t, r.Time.After(ahead), "the note is written after the previous process's last write")
			}
		}
		require.Len(t, notes, 1, "%s: one note saying why", id)
		assert.Contains(t, notes[0], "the local stack stopped while this decommission ran")
		evs := decomEvents(t, second, id, events.DecommissionManualInterventionRequired)
		require.Len(t, evs, 1, "%s: its event", id)
		assert.Equal(t, interruptedCode, evs[0].Error.Code)
		assert.Equal(t, d.Attempt, evs[0].Attempt)
	}
	n, err := second.Store.GetNode(ctx, "n1")
	require.NoError(t, err)
	assert.Equal(t, domain.NodeDecommissioning, n.Status, "the node stays held, out of service")
	require.NoError(t, second.Close())

	third := startIn(t, dir)
	again, err := third.Store.GetDecommission(ctx, "d-run")
	require.NoError(t, err)
	assert.Equal(t, domain.DecommissionManualIntervention, again.Status)
	assert.Len(t, decomEvents(t, third, "d-run", events.DecommissionManualInterventionRequired), 1, "published once")
	rows, err := third.Store.ListDecommissionEvents(ctx, "d-run")
	require.NoError(t, err)
	restarts := 0
	for _, r := range rows {
		if r.Source == "restart" && strings.Contains(r.Detail, "manual_intervention") {
			restarts++
		}
	}
	assert.Equal(t, 1, restarts, "a second restart adds nothing")
}
