package decommission_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/internal/crashtest"
	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/activities/decommission"
	"github.com/maasflow/maasflow/shared/allocation"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/store"
)

// stageEntryChildEnv makes the test binary play a local-mode process that
// enters a decommission stage and dies right after the first write the
// entry makes.
const stageEntryChildEnv = "MAASFLOW_DECOM_STAGE_ENTRY_CRASH_CHILD"

const crashDBFile = "maasflow.db"

func TestMain(m *testing.M) {
	crashtest.PlayChild(stageEntryChildEnv, enterStageThenDie)
	os.Exit(m.Run())
}

// haltAfterFirstWrite is the decommission store of a process that dies
// after its first acknowledged write: it prints "wrote" and never returns,
// so the parent kills it there, between that write and any next one.
type haltAfterFirstWrite struct{ *store.Store }

func (h haltAfterFirstWrite) halt() {
	fmt.Println("wrote")
	select {} // until killed
}

func (h haltAfterFirstWrite) UpdateDecommission(ctx context.Context, id string, mutate store.Mutator[domain.Decommission]) (domain.Decommission, error) {
	d, err := h.Store.UpdateDecommission(ctx, id, mutate)
	if err == nil {
		h.halt()
	}
	return d, err
}

func (h haltAfterFirstWrite) UpdateDecommissionWithTimeline(ctx context.Context, id string, mutate store.Mutator[domain.Decommission],
	rows func(prev, next domain.Decommission) []domain.DecommissionEvent,
) (domain.Decommission, error) {
	d, err := h.Store.UpdateDecommissionWithTimeline(ctx, id, mutate, rows)
	if err == nil {
		h.halt()
	}
	return d, err
}

func (h haltAfterFirstWrite) AppendDecommissionEvents(ctx context.Context, events ...domain.DecommissionEvent) error {
	err := h.Store.AppendDecommissionEvents(ctx, events...)
	if err == nil {
		h.halt()
	}
	return err
}

var crashT0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// enterStageThenDie runs DrainAllocations on the decommission the parent
// stored, over a decommission store that halts after its first write.
func enterStageThenDie(dir string) {
	ctx := context.Background()
	db, err := store.OpenLocalDB(ctx, filepath.Join(dir, crashDBFile), "", false)
	if err == nil {
		s := store.New(db, "", time.Now)
		a := decommission.New(activities.Deps{Store: s, Decommissions: haltAfterFirstWrite{s}, Allocations: allocation.NewLocal(time.Now)})
		_, err = a.DrainAllocations(ctx, decommission.DrainAllocationsInput{DecommissionRef: decommission.DecommissionRef{
			DecommissionID: "dec-1", NodeID: "node-d", SiteID: "site-1", Mode: domain.DecommissionStorageCleanup, Attempt: 1,
		}})
		fmt.Println("returned without a write", err)
		os.Exit(1)
	}
	fmt.Println("error", err)
	os.Exit(1)
}

// TestDecommissionStageEntryAndItsRowSurviveACrashTogether kills a process
// right after the first write of a decommission's stage entry: the stage
// and its stage_entered row are one write, so the record reopened is
// either still at its old stage with no new row, or at the new stage with
// its row, never moved without it.
func TestDecommissionStageEntryAndItsRowSurviveACrashTogether(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	path := filepath.Join(dir, crashDBFile)
	db, err := store.OpenLocalDB(ctx, path, "", false)
	require.NoError(t, err)
	s := store.New(db, "", func() time.Time { return crashT0 })
	require.NoError(t, s.CreateNode(ctx, domain.Node{ID: "node-d", SiteID: "site-1", Hostname: "gpu-d",
		Status: domain.NodeDecommissioning, MAASSystemID: "abc123", CreatedAt: crashT0}))
	require.NoError(t, s.CreateDecommission(ctx, domain.Decommission{ID: "dec-1", NodeID: "node-d", SiteID: "site-1",
		Hostname: "gpu-d", Mode: domain.DecommissionStorageCleanup, Status: domain.DecommissionRunning,
		Stage: domain.DecomStageStart, Attempt: 1, MAASSystemID: "abc123", CreatedAt: crashT0}))
	require.NoError(t, db.Close())

	lines := crashtest.KillWhen(t, dir, stageEntryChildEnv, func(lines []string) bool {
		return len(lines) > 0
	})
	require.Equal(t, []string{"wrote"}, lines, "the child must die right after its first write")

	db, err = store.OpenLocalDB(ctx, path, "", false)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	s = store.New(db, "", time.Now)
	d, err := s.GetDecommission(ctx, "dec-1")
	require.NoError(t, err)
	rows, err := s.ListDecommissionEvents(ctx, "dec-1")
	require.NoError(t, err)
	entered := slices.IndexFunc(rows, func(r domain.DecommissionEvent) bool {
		return r.Kind == domain.TimelineStageEntered && r.Stage == domain.DecomStageDrain
	})
	assert.Equal(t, domain.DecomStageDrain, d.Stage, "the first write is the stage entry")
	assert.GreaterOrEqual(t, entered, 0, "the stage moved to drain without its stage_entered row: %+v", rows)
}
