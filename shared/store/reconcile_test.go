package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
)

func TestListNodesBySite(t *testing.T) {
	eachBackend(t, func(t *testing.T, mk func(testing.TB) (*Store, *clockwork.FakeClock)) {
		t.Helper()
		s, _ := mk(t)
		ctx := context.Background()
		for i, site := range []string{"s1", "s1", "s2"} {
			require.NoError(t, s.CreateNode(ctx, domain.Node{ID: fmt.Sprintf("n%d", i), SiteID: site, Hostname: fmt.Sprintf("gpu%d", 2-i), Status: domain.NodeActive}))
		}
		nodes, err := s.ListNodesBySite(ctx, "s1")
		require.NoError(t, err)
		require.Len(t, nodes, 2)
		assert.ElementsMatch(t, []string{"gpu1", "gpu2"}, []string{nodes[0].Hostname, nodes[1].Hostname}, "only the site's nodes")

		// A node that moves site moves in the index.
		_, err = s.UpdateNode(ctx, "n2", func(n *domain.Node) error { n.SiteID = "s1"; return nil })
		require.NoError(t, err)
		nodes, err = s.ListNodesBySite(ctx, "s1")
		require.NoError(t, err)
		assert.Len(t, nodes, 3)
		nodes, err = s.ListNodesBySite(ctx, "s2")
		require.NoError(t, err)
		assert.Empty(t, nodes)
	})
}

func TestNodeMAASState(t *testing.T) {
	s, _, _ := newTestStore(t)
	ctx := context.Background()
	st := domain.NodeMAASState{NodeID: "n1", SiteID: "s1", Hostname: "gpu1", MAASSystemID: "abc", Found: true, StatusName: "Deployed", PowerState: "on", ObservedAt: t0, RunID: "r1"}
	require.NoError(t, s.PutNodeMAASState(ctx, st))
	st.StatusName, st.RunID = "Broken", "r2"
	require.NoError(t, s.PutNodeMAASState(ctx, st))
	got, err := s.ListNodeMAASStates(ctx, "s1")
	require.NoError(t, err)
	require.Len(t, got, 1, "one state per node, overwritten")
	assert.Equal(t, "Broken", got[0].StatusName)

	var invalid *InvalidRecordError
	require.ErrorAs(t, s.PutNodeMAASState(ctx, domain.NodeMAASState{SiteID: "s1"}), &invalid)
	assert.Equal(t, "node_id", invalid.Field)
}

func drift(id, site, node, kind string, at time.Time) domain.DriftItem {
	return domain.DriftItem{ID: id, SiteID: site, NodeID: node, Hostname: "h-" + node, Kind: kind,
		Expected: "Deployed", Observed: "Broken", State: domain.DriftOpen, FirstSeen: at, LastSeen: at, RunID: "r1"}
}

func TestDriftItems(t *testing.T) {
	eachBackend(t, func(t *testing.T, mk func(testing.TB) (*Store, *clockwork.FakeClock)) {
		t.Helper()
		s, _ := mk(t)
		ctx := context.Background()
		require.NoError(t, s.CreateDriftItem(ctx, drift("d1", "s1", "n1", domain.DriftStatusMismatch, t0)))
		require.NoError(t, s.CreateDriftItem(ctx, drift("d2", "s1", "n2", domain.DriftPowerOff, t0.Add(time.Second))))
		require.NoError(t, s.CreateDriftItem(ctx, drift("d3", "s2", "n3", domain.DriftStatusMismatch, t0.Add(2*time.Second))))

		var conflict *ItemConflictError
		require.ErrorAs(t, s.CreateDriftItem(ctx, drift("d1", "s1", "n1", domain.DriftStatusMismatch, t0)), &conflict, "a repeated create")

		open, err := s.ListOpenDrift(ctx, "s1")
		require.NoError(t, err)
		assert.Equal(t, []string{"d1", "d2"}, driftIDs(open))

		// Closing moves the item out of the site's open partition, keeps it
		// in the node's history.
		closedAt := t0.Add(time.Minute)
		got, err := s.UpdateDriftItem(ctx, "d1", func(d *domain.DriftItem) error {
			d.State, d.ClosedAt, d.ClosedBy = domain.DriftClosed, &closedAt, "r2"
			d.NodeID = "changed" // may not change
			return nil
		})
		require.NoError(t, err)
		assert.Equal(t, "n1", got.NodeID)
		open, err = s.ListOpenDrift(ctx, "s1")
		require.NoError(t, err)
		assert.Equal(t, []string{"d2"}, driftIDs(open))

		page, err := s.ListDrift(ctx, DriftFilter{State: domain.DriftClosed})
		require.NoError(t, err)
		assert.Equal(t, []string{"d1"}, driftIDs(page.Items))
		page, err = s.ListDrift(ctx, DriftFilter{NodeID: "n1"})
		require.NoError(t, err)
		assert.Equal(t, []string{"d1"}, driftIDs(page.Items), "a node filter lists its history")
		page, err = s.ListDrift(ctx, DriftFilter{Kind: domain.DriftStatusMismatch})
		require.NoError(t, err)
		assert.Equal(t, []string{"d3"}, driftIDs(page.Items))
		page, err = s.ListDrift(ctx, DriftFilter{SiteID: "s1", Kind: domain.DriftStatusMismatch})
		require.NoError(t, err)
		assert.Empty(t, page.Items)

		// Paging: newest first, one per page.
		page, err = s.ListDrift(ctx, DriftFilter{Limit: 1})
		require.NoError(t, err)
		assert.Equal(t, []string{"d3"}, driftIDs(page.Items))
		require.NotEmpty(t, page.NextCursor)
		first := page.NextCursor
		page, err = s.ListDrift(ctx, DriftFilter{Limit: 1, Cursor: first})
		require.NoError(t, err)
		assert.Equal(t, []string{"d2"}, driftIDs(page.Items))
		assert.Empty(t, page.NextCursor, "the last page")
		_, err = s.ListDrift(ctx, DriftFilter{SiteID: "s1", Cursor: first})
		var bad *InvalidCursorError
		require.ErrorAs(t, err, &bad, "a cursor of another filter")
	})
}

func driftIDs(items []domain.DriftItem) []string {
	ids := []string{}
	for _, d := range items {
		ids = append(ids, d.ID)
	}
	return ids
}

func TestReconcileRunLock(t *testing.T) {
	eachBackend(t, func(t *testing.T, mk func(testing.TB) (*Store, *clockwork.FakeClock)) {
		t.Helper()
		s, clk := mk(t)
		ctx := context.Background()
		run := domain.ReconcileRun{ID: "r1", Trigger: "api", Status: domain.RunRunning, StartedAt: t0}
		got, joined, err := s.BeginReconcileRun(ctx, run, time.Hour)
		require.NoError(t, err)
		assert.False(t, joined)
		assert.Equal(t, "r1", got.ID)

		got, joined, err = s.BeginReconcileRun(ctx, domain.ReconcileRun{ID: "r2", StartedAt: t0}, time.Hour)
		require.NoError(t, err)
		assert.True(t, joined, "a second run joins the running one")
		assert.Equal(t, "r1", got.ID)
		_, err = s.GetReconcileRun(ctx, "r2")
		var nf *ItemNotFoundError
		require.ErrorAs(t, err, &nf, "the joining run is not stored")

		_, err = s.UpdateReconcileRun(ctx, "r1", false, func(r *domain.ReconcileRun) error {
			r.Sites = append(r.Sites, domain.SiteRunInfo{SiteID: "s1", NodesChecked: 3})
			return nil
		})
		require.NoError(t, err)
		cur, found, err := s.CurrentReconcileRun(ctx)
		require.NoError(t, err)
		require.True(t, found)
		assert.Equal(t, 3, cur.Sites[0].NodesChecked)

		end := t0.Add(time.Minute)
		_, err = s.UpdateReconcileRun(ctx, "r1", true, func(r *domain.ReconcileRun) error {
			r.Status, r.EndedAt = domain.RunSucceeded, &end
			return nil
		})
		require.NoError(t, err)
		_, found, err = s.CurrentReconcileRun(ctx)
		require.NoError(t, err)
		assert.False(t, found, "finishing releases the lock")

		_, joined, err = s.BeginReconcileRun(ctx, domain.ReconcileRun{ID: "r3", StartedAt: t0.Add(2 * time.Minute)}, time.Minute)
		require.NoError(t, err)
		assert.False(t, joined)

		// A run that died keeps the lock only for its lease.
		clk.Advance(2 * time.Minute)
		_, joined, err = s.BeginReconcileRun(ctx, domain.ReconcileRun{ID: "r4", StartedAt: t0.Add(4 * time.Minute)}, time.Minute)
		require.NoError(t, err)
		assert.False(t, joined, "an expired lease is taken over")

		runs, err := s.ListReconcileRuns(ctx, 10)
		require.NoError(t, err)
		var ids []string
		for _, r := range runs {
			ids = append(ids, r.ID)
		}
		assert.Equal(t, []string{"r4", "r3", "r1"}, ids, "newest first")
	})
}
