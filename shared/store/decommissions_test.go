package store

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
)

func newDecom(id, node string) domain.Decommission {
	return domain.Decommission{ID: id, NodeID: node, SiteID: "s1", Hostname: "gpu-01", Mode: domain.DecommissionFull, Attempt: 1}
}

func TestDecommissionHoldsItsNodeUntilClosed(t *testing.T) {
	ctx := context.Background()
	for name, s := range map[string]*Store{"native": must(newTestStore(t)), "plain": mustPlain(newPlainStore(t))} {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, s.CreateDecommission(ctx, newDecom("d1", "n1")))
			err := s.CreateDecommission(ctx, newDecom("d2", "n1"))
			var open *OpenWorkflowExistsError
			require.ErrorAs(t, err, &open)
			assert.Equal(t, "decommission", open.Workflow)
			assert.Equal(t, "d1", open.ID)

			// manual_intervention stays open; completed frees the node.
			_, err = s.UpdateDecommission(ctx, "d1", func(d *domain.Decommission) error {
				d.Status = domain.DecommissionManualIntervention
				return nil
			})
			require.NoError(t, err)
			require.ErrorAs(t, s.CreateDecommission(ctx, newDecom("d2", "n1")), &open)
			_, err = s.UpdateDecommission(ctx, "d1", func(d *domain.Decommission) error {
				d.Status = domain.DecommissionCompleted
				d.NodeID = "changed" // may not change
				return nil
			})
			require.NoError(t, err)
			got, err := s.GetDecommission(ctx, "d1")
			require.NoError(t, err)
			assert.Equal(t, "n1", got.NodeID)
			require.NoError(t, s.CreateDecommission(ctx, newDecom("d2", "n1")))

			_, err = s.UpdateDecommission(ctx, "d1", func(d *domain.Decommission) error {
				d.Status = domain.DecommissionRunning
				return nil
			})
			var invalid *InvalidRecordError
			require.ErrorAs(t, err, &invalid, "a closed decommission cannot reopen")
		})
	}
}

func TestDecommissionRefusedWhileTheHostOnboards(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newTestStore(t)
	require.NoError(t, s.CreateOnboarding(ctx, domain.Onboarding{ID: "o1", SiteID: "s1", Hostname: "GPU-01", Attempt: 1}))
	err := s.CreateDecommission(ctx, newDecom("d1", "n1"))
	var open *OpenWorkflowExistsError
	require.ErrorAs(t, err, &open)
	assert.Equal(t, "onboarding", open.Workflow)
	assert.Equal(t, "o1", open.ID)
	_, err = s.GetDecommission(ctx, "d1")
	var nf *ItemNotFoundError
	require.ErrorAs(t, err, &nf, "nothing half-written")
}

func TestListDecommissionsAndTimeline(t *testing.T) {
	ctx := context.Background()
	s, clk, _ := newTestStore(t)
	for i, node := range []string{"n1", "n2", "n3"} {
		d := newDecom("d"+node, node)
		if i == 2 {
			d.SiteID = "s2"
		}
		require.NoError(t, s.CreateDecommission(ctx, d))
		clk.Advance(1)
	}
	page, err := s.ListDecommissions(ctx, DecommissionFilter{Limit: 2})
	require.NoError(t, err)
	require.Len(t, page.Items, 2)
	assert.Equal(t, "dn3", page.Items[0].ID, "newest first")
	require.NotEmpty(t, page.NextCursor)
	page, err = s.ListDecommissions(ctx, DecommissionFilter{Limit: 2, Cursor: page.NextCursor})
	require.NoError(t, err)
	require.Len(t, page.Items, 1)
	assert.Empty(t, page.NextCursor)

	page, err = s.ListDecommissions(ctx, DecommissionFilter{SiteID: "s1", NodeID: "n2"})
	require.NoError(t, err)
	require.Len(t, page.Items, 1)
	assert.Equal(t, "dn2", page.Items[0].ID)

	require.NoError(t, s.AppendDecommissionEvents(ctx,
		domain.DecommissionEvent{DecommissionID: "dn1", Kind: domain.TimelineNote, Detail: "a"},
		domain.DecommissionEvent{DecommissionID: "dn1", Kind: domain.TimelineMAASEvent, MAASEventID: 7, Detail: "m"}))
	require.NoError(t, s.AppendDecommissionEvents(ctx,
		domain.DecommissionEvent{DecommissionID: "dn1", Kind: domain.TimelineMAASEvent, MAASEventID: 7, Detail: "m"}))
	rows, err := s.ListDecommissionEvents(ctx, "dn1")
	require.NoError(t, err)
	assert.Len(t, rows, 2, "a MAAS event is written once")
}

func TestListNodesAndTokenRefs(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newTestStore(t)
	require.NoError(t, s.CreateNode(ctx, domain.Node{ID: "n1", SiteID: "s1", Hostname: "a", SKUID: "h100", Status: domain.NodeActive}))
	require.NoError(t, s.CreateNode(ctx, domain.Node{ID: "n2", SiteID: "s1", Hostname: "b", SKUID: "a100", Status: domain.NodeActive}))
	_, err := s.UpdateNode(ctx, "n2", func(n *domain.Node) error { n.Status = domain.NodeRetired; return nil })
	require.NoError(t, err)

	page, err := s.ListNodes(ctx, NodeFilter{Status: domain.NodeRetired})
	require.NoError(t, err)
	require.Len(t, page.Items, 1)
	assert.Equal(t, "n2", page.Items[0].ID, "the status index follows updates")
	page, err = s.ListNodes(ctx, NodeFilter{SiteID: "s1", SKUID: "h100"})
	require.NoError(t, err)
	require.Len(t, page.Items, 1)
	assert.Equal(t, "n1", page.Items[0].ID)

	require.NoError(t, s.AddNodeTokenRef(ctx, "n1", "h1"))
	require.NoError(t, s.AddNodeTokenRef(ctx, "n1", "h1"))
	require.NoError(t, s.AddNodeTokenRef(ctx, "n1", "h2"))
	refs, err := s.ListNodeTokenRefs(ctx, "n1")
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"h1", "h2"}, refs)
	n, err := s.GetNode(ctx, "n1")
	require.NoError(t, err)
	assert.Equal(t, "a", n.Hostname, "refs live beside the node record")
}

func must[A, B, C any](a A, _ B, _ C) A { return a }

func mustPlain[A, B any](a A, _ B) A { return a }

func TestDecommissionUpdateWritesItsTimelineRowsInTheSameWrite(t *testing.T) {
	ctx := context.Background()
	for name, s := range map[string]*Store{"native": must(newTestStore(t)), "plain": mustPlain(newPlainStore(t))} {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, s.CreateDecommission(ctx, newDecom("d1", "n1")))
			entered := func(prev, next domain.Decommission) []domain.DecommissionEvent {
				return []domain.DecommissionEvent{{Attempt: 1, Kind: domain.TimelineStageEntered, Stage: next.Stage, Detail: "from " + string(prev.Stage)}}
			}
			d, err := s.UpdateDecommissionWithTimeline(ctx, "d1", func(d *domain.Decommission) error {
				d.Status, d.Stage = domain.DecommissionRunning, domain.DecomStageDrain
				return nil
			}, entered)
			require.NoError(t, err)
			assert.Equal(t, domain.DecomStageDrain, d.Stage)
			rows, err := s.ListDecommissionEvents(ctx, "d1")
			require.NoError(t, err)
			require.Len(t, rows, 1)
			assert.Equal(t, "d1", rows[0].DecommissionID, "the store stamps the record's id")
			assert.Equal(t, domain.DecomStageDrain, rows[0].Stage)

			// A refused change writes neither the record nor its rows.
			_, err = s.UpdateDecommissionWithTimeline(ctx, "d1", func(*domain.Decommission) error {
				return &InvalidRecordError{Kind: kindDecommission, Field: "stage", Reason: "refused"}
			}, entered)
			require.Error(t, err)
			// MAAS events keep their own at-most-once append.
			_, err = s.UpdateDecommissionWithTimeline(ctx, "d1", func(*domain.Decommission) error { return nil },
				func(_, _ domain.Decommission) []domain.DecommissionEvent {
					return []domain.DecommissionEvent{{Kind: domain.TimelineMAASEvent, MAASEventID: 7}}
				})
			var invalid *InvalidRecordError
			require.ErrorAs(t, err, &invalid)

			// Closing frees the node's lock with the closing rows, in one write.
			_, err = s.UpdateDecommissionWithTimeline(ctx, "d1", func(d *domain.Decommission) error {
				d.Status = domain.DecommissionCompleted
				return nil
			}, func(_, _ domain.Decommission) []domain.DecommissionEvent {
				return []domain.DecommissionEvent{{Attempt: 1, Kind: domain.TimelineNote, Source: "finish", Detail: "status completed"}}
			})
			require.NoError(t, err)
			rows, err = s.ListDecommissionEvents(ctx, "d1")
			require.NoError(t, err)
			require.Len(t, rows, 2)
			assert.Equal(t, "status completed", rows[1].Detail)
			_, found, err := s.FindOpenDecommission(ctx, "n1")
			require.NoError(t, err)
			assert.False(t, found, "the close released the node")
			got, err := s.GetDecommission(ctx, "d1")
			require.NoError(t, err)
			assert.Equal(t, int64(3), got.Version, "the refused updates wrote nothing")
		})
	}
}
