package localstack

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/events"
)

func startIn(t *testing.T, dir string) *Stack {
	t.Helper()
	st, err := Start(context.Background(), Config{Listen: "127.0.0.1:0", SimListen: "127.0.0.1:0", TimeScale: 600, DataDir: dir})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// failedEvents are the node.onboarding.failed events of onboarding id on
// s's event bus.
func failedEvents(t *testing.T, s *Stack, id string) []events.OnboardingDetail {
	t.Helper()
	return eventsOf(t, s, events.OnboardingFailed, func(d events.OnboardingDetail) bool { return d.OnboardingID == id })
}

// eventsOf are the events of detailType on s's event bus whose detail
// keep accepts.
func eventsOf[D any](t *testing.T, s *Stack, detailType string, keep func(D) bool) []D {
	t.Helper()
	all, err := s.Bus.ReadAll()
	require.NoError(t, err)
	var out []D
	for _, env := range all {
		if env.DetailType != detailType {
			continue
		}
		var d D
		require.NoError(t, json.Unmarshal(env.Detail, &d))
		if keep(d) {
			out = append(out, d)
		}
	}
	return out
}

// runAhead moves s's clock past t, as a process under --time-scale runs
// ahead of the wall clock: the records it writes are stamped from it.
func runAhead(t *testing.T, s *Stack, t0 time.Time) {
	t.Helper()
	resume, ok := s.Engine.Clock().(*resumeClock)
	require.True(t, ok, "the stack runs on its resuming clock")
	resume.resumeAfter(t0)
}

// TestInterruptedOnboardingClosesProperly: a run the previous process left
// running is closed with completed_at, its failed event and a revoked
// token, and no time written at the restart is earlier than what the
// previous process wrote under its faster clock.
func TestInterruptedOnboardingClosesProperly(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	first := startIn(t, dir)
	// The previous process's scaled clock ran days ahead of the wall clock.
	ahead := time.Now().UTC().Add(30 * 24 * time.Hour)
	runAhead(t, first, ahead.Add(time.Minute))
	require.NoError(t, first.Store.CreateOnboarding(ctx, domain.Onboarding{
		ID: "o1", SiteID: "s1", ProfileID: "p1", SKUID: "k1", Hostname: "gpu-01", IPMIIP: "10.0.0.21", NodeID: "n1",
		Status: domain.OnboardingRunning, Stage: domain.StageWaitEnrollment, Attempt: 1, CorrelationID: "c1",
		EnrollmentTokenHash: "h1", CreatedAt: ahead.Add(-time.Hour), UpdatedAt: ahead,
	}))
	require.NoError(t, first.Store.PutEnrollmentToken(ctx, domain.EnrollmentToken{
		Hash: "h1", NodeID: "n1", OnboardingID: "o1", Attempt: 1, ExpiresAt: ahead.Add(time.Hour), CreatedAt: ahead,
	}))
	require.NoError(t, first.Store.AppendOnboardingEvents(ctx, domain.TimelineEntry{
		OnboardingID: "o1", Time: ahead.Add(time.Minute), Attempt: 1, Kind: domain.TimelineStageEntered, Stage: domain.StageWaitEnrollment,
	}))
	require.NoError(t, first.Close())

	second := startIn(t, dir)
	o, err := second.Store.GetOnboarding(ctx, "o1")
	require.NoError(t, err)
	assert.Equal(t, domain.OnboardingFailed, o.Status)
	require.NotNil(t, o.Error)
	assert.Equal(t, interruptedCode, o.Error.Code)
	require.NotNil(t, o.CompletedAt, "closed means completed_at")
	assert.True(t, o.CompletedAt.After(ahead.Add(time.Minute)), "completed_at %s is after the last write %s", o.CompletedAt, ahead.Add(time.Minute))
	assert.False(t, o.UpdatedAt.Before(*o.CompletedAt))
	assert.True(t, second.Engine.Clock().Now().After(ahead), "the clock resumes past the data dir")

	rows, err := second.Store.ListOnboardingEvents(ctx, "o1")
	require.NoError(t, err)
	times := make([]time.Time, 0, len(rows))
	for _, r := range rows {
		times = append(times, r.Time)
	}
	assert.True(t, slices.IsSortedFunc(times, func(a, b time.Time) int { return a.Compare(b) }), "timeline times never go backwards: %v", times)
	assert.Len(t, rows, 2, "stage row, close note")

	tok, err := second.Store.GetEnrollmentToken(ctx, "h1")
	require.NoError(t, err)
	assert.NotNil(t, tok.RevokedAt, "the run's token dies with it")

	// The close owes its event through the outbox; the relay publishes it.
	evs := failedEvents(t, second, "o1")
	for deadline := time.Now().Add(10 * time.Second); len(evs) == 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		evs = failedEvents(t, second, "o1")
	}
	require.Len(t, evs, 1)
	assert.Equal(t, interruptedCode, evs[0].Error.Code)
	assert.Equal(t, 1, evs[0].Attempt)
	assert.True(t, evs[0].OccurredAt.After(ahead))
	require.NoError(t, second.Close())

	// Another restart changes nothing and publishes nothing again.
	third := startIn(t, dir)
	again, err := third.Store.GetOnboarding(ctx, "o1")
	require.NoError(t, err)
	assert.Equal(t, o.Version, again.Version)
	assert.Len(t, failedEvents(t, third, "o1"), 1)
}

// TestEveryInterruptedOnboardingIsClosed: with more open onboardings than
// are closed at once and than a page holds, a restart closes every one,
// each once.
func TestEveryInterruptedOnboardingIsClosed(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	first := startIn(t, dir)
	const open = 230
	now := time.Now().UTC()
	for i := range open {
		status := domain.OnboardingRunning
		if i%2 == 0 {
			status = domain.OnboardingPending
		}
		require.NoError(t, first.Store.CreateOnboarding(ctx, domain.Onboarding{
			ID: fmt.Sprintf("o%03d", i), SiteID: "s1", ProfileID: "p1", SKUID: "k1", Hostname: fmt.Sprintf("gpu-%03d", i),
			IPMIIP: fmt.Sprintf("10.0.%d.%d", i/200, i%200+1), Status: status, Stage: domain.StageValidate, Attempt: 1,
			CorrelationID: "c", CreatedAt: now, UpdatedAt: now,
		}))
	}
	require.NoError(t, first.Close())

	second := startIn(t, dir)
	for i := range open {
		o, err := second.Store.GetOnboarding(ctx, fmt.Sprintf("o%03d", i))
		require.NoError(t, err)
		assert.Equal(t, domain.OnboardingFailed, o.Status, o.ID)
		rows, err := second.Store.ListOnboardingEvents(ctx, o.ID)
		require.NoError(t, err)
		assert.Len(t, rows, 1, "%s: one close note", o.ID)
	}
}
