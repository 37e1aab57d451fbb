package e2e

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/store"
)

// TestSiteThrottleOfFive onboards twenty hosts through one batch on a site
// whose policy allows five at once. The proof that no more than five ran
// at once is read from what was recorded, not from when the test looked:
// each onboarding's run past the queue spans from its validate stage
// entered to its completion, and at no instant do more than five spans
// overlap. Every slot is given back at the end.
func TestSiteThrottleOfFive(t *testing.T) {
	const hosts, limit = 20, 5
	e := startStack(t)
	f := e.setup(map[string]any{"max_concurrent_onboardings": limit}, nil)
	var nodes []any
	for i := 1; i <= hosts; i++ {
		host, bmc := fmt.Sprintf("thr-%02d", i), fmt.Sprintf("10.60.0.%d", i)
		e.hardware(host, bmc, fmt.Sprintf("52:54:00:60:00:%02x", i), nil)
		nodes = append(nodes, map[string]any{"hostname": host, "ipmi_ip": bmc})
	}
	b := e.admin("POST", "/api/v1/admin/onboardings/batch", map[string]any{
		"site_id": f.SiteID, "profile_id": f.ProfileID, "sku_id": f.SKUID, "nodes": nodes,
	}, http.StatusAccepted)
	id := b["id"].(string)
	var ids []string
	for _, raw := range b["items"].([]any) {
		ids = append(ids, raw.(map[string]any)["onboarding_id"].(string))
	}
	require.Len(t, ids, hosts)

	deadline := time.Now().Add(terminalWait)
	for b["status"] == "running" {
		require.True(t, time.Now().Before(deadline), "batch still running: %v", b["counts"])
		time.Sleep(50 * time.Millisecond)
		b = e.batch(id)
	}
	assert.Equal(t, "completed", b["status"])
	assert.Equal(t, map[string]any{"completed": float64(hosts)}, b["counts"])

	// Spans past the queue, from the timeline and the record.
	type edge struct {
		at    time.Time
		delta int
		id    string
	}
	var edges []edge
	queued := 0
	for _, oid := range ids {
		o := e.onboarding(oid)
		require.Equal(t, "completed", o["status"], oid)
		end, err := time.Parse(time.RFC3339Nano, o["completed_at"].(string))
		require.NoError(t, err)
		var start time.Time
		for _, raw := range o["timeline"].([]any) {
			row := raw.(map[string]any)
			if row["stage"] == "queued" && row["kind"] == "stage_entered" {
				queued++
			}
			if row["stage"] == "validate" && row["kind"] == "stage_entered" && start.IsZero() {
				start, err = time.Parse(time.RFC3339Nano, row["time"].(string))
				require.NoError(t, err)
			}
		}
		require.False(t, start.IsZero(), "onboarding %s entered validate", oid)
		require.False(t, end.Before(start), oid)
		edges = append(edges, edge{start, +1, oid}, edge{end, -1, oid})
	}
	// At one instant, an end counts before a start: a slot given back is
	// taken after.
	sort.SliceStable(edges, func(i, j int) bool {
		if !edges[i].at.Equal(edges[j].at) {
			return edges[i].at.Before(edges[j].at)
		}
		return edges[i].delta < edges[j].delta
	})
	running, peak := 0, 0
	for _, ed := range edges {
		running += ed.delta
		peak = max(peak, running)
	}
	assert.LessOrEqual(t, peak, limit, "never more than %d past queued", limit)
	assert.Positive(t, peak)
	t.Logf("peak %d past queued; %d onboardings queued", peak, queued)

	// Every slot and place is given back.
	ctx := context.Background()
	held, err := e.stack.Store.SiteSlotsHeld(ctx, f.SiteID)
	require.NoError(t, err)
	assert.Zero(t, held)
	holders, err := e.stack.Store.ListSlotHolders(ctx, f.SiteID)
	require.NoError(t, err)
	assert.Empty(t, holders)
	waiters, err := e.stack.Store.ListSlotWaiters(ctx, f.SiteID)
	require.NoError(t, err)
	assert.Empty(t, waiters)
}

// TestAQueuedOnboardingShowsItsPlace: a site whose one slot is held keeps
// the next onboarding pending in stage queued with its place shown, until
// the holder's run ends (here, cancelled) and gives the slot back.
func TestAQueuedOnboardingShowsItsPlace(t *testing.T) {
	e := startStack(t)
	f := e.setup(map[string]any{"max_concurrent_onboardings": 1}, nil)
	ctx := context.Background()
	st := e.stack.Store
	blocker := domain.Onboarding{ID: "blocker-onb", SiteID: f.SiteID, ProfileID: f.ProfileID, SKUID: f.SKUID,
		Hostname: "blocker-01", IPMIIP: "10.61.0.99", Attempt: 1, Status: domain.OnboardingPending}
	require.NoError(t, st.CreateOnboarding(ctx, blocker))
	res, err := st.TakeSiteSlot(ctx, store.SlotRequest{OnboardingID: blocker.ID, Attempt: 1, Limit: 1})
	require.NoError(t, err)
	require.True(t, res.Granted)

	e.hardware("thr-q", "10.61.0.1", "52:54:00:61:00:01", nil)
	id := e.onboard(f, "thr-q", "10.61.0.1")
	deadline := time.Now().Add(terminalWait)
	for {
		o := e.onboarding(id)
		if o["stage"] == "queued" {
			assert.Equal(t, "pending", o["status"])
			assert.InDelta(t, 1, o["queue_position"], 0)
			break
		}
		require.True(t, time.Now().Before(deadline), "never queued: %v at %v", o["status"], o["stage"])
		time.Sleep(20 * time.Millisecond)
	}
	listed := e.admin("GET", "/api/v1/admin/onboardings?site_id="+f.SiteID+"&status=pending", nil, http.StatusOK)
	assert.Len(t, listed["items"], 2, "the holder and the queued one")

	_, err = st.CloseOnboarding(ctx, blocker.ID, func(o *domain.Onboarding) error {
		o.Status = domain.OnboardingCancelled
		return nil
	})
	require.NoError(t, err)
	o := e.waitTerminal(id)
	assert.Equal(t, "completed", o["status"])
	var queuedIn, queuedOut bool
	for _, raw := range o["timeline"].([]any) {
		row := raw.(map[string]any)
		if row["stage"] == "queued" {
			queuedIn = queuedIn || row["kind"] == "stage_entered"
			queuedOut = queuedOut || (row["kind"] == "stage_exited" && row["outcome"] == "ok")
		}
	}
	assert.True(t, queuedIn && queuedOut, "the timeline shows the wait")
	assert.NotContains(t, o, "queue_position")
	held, err := st.SiteSlotsHeld(ctx, f.SiteID)
	require.NoError(t, err)
	assert.Zero(t, held)
}
