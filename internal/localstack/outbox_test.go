package localstack

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/clock"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/events"
	"github.com/maasflow/maasflow/shared/store"
)

// A workflow that wrote its terminal status and died before publishing
// still gets its event, once; one that published gets no second.
func TestOutboxRelayPublishesWhatTheWorkflowDidNot(t *testing.T) {
	ctx := context.Background()
	r, st, _, bus := newTestRelay(t)

	for _, id := range []string{"lost", "published"} {
		require.NoError(t, st.CreateOnboarding(ctx, domain.Onboarding{ID: id, SiteID: "s1", ProfileID: "p1", SKUID: "k", Hostname: "gpu-" + id, IPMIIP: "10.0.0.1", Attempt: 1}))
		_, err := st.UpdateOnboarding(ctx, id, func(o *domain.Onboarding) error {
			o.Status, o.Error = domain.OnboardingFailed, &domain.Failure{Code: "States.Timeout", Message: "FinishOnboarding timed out"}
			return nil
		})
		require.NoError(t, err)
	}
	require.NoError(t, st.AppendOnboardingEvents(ctx, domain.TimelineEntry{OnboardingID: "published", Attempt: 1,
		Kind: domain.TimelineNote, Source: eventMarkerSource, Detail: events.OnboardingFailed}))

	now := time.Now()
	n, err := r.once(ctx, now)
	require.NoError(t, err)
	assert.Zero(t, n, "the finishing activity gets its grace first")
	n, err = r.once(ctx, now.Add(relayGrace))
	require.NoError(t, err)
	assert.Equal(t, 1, n)

	got, err := bus.ReadAll()
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, events.OnboardingFailed, got[0].DetailType)
	assert.Contains(t, string(got[0].Detail), `"onboarding_id":"lost"`)
	left, err := st.ListOutbox(ctx, 10)
	require.NoError(t, err)
	assert.Empty(t, left, "both entries are settled")
	n, err = r.once(ctx, now.Add(2*relayGrace))
	require.NoError(t, err)
	assert.Zero(t, n, "never twice")
}

// newTestRelay is an outbox relay over a fresh local store and a local bus
// in the store's temporary database file, on a fake clock.
func newTestRelay(t *testing.T) (*outboxRelay, *store.Store, *clockwork.FakeClock, *events.LocalBus) {
	t.Helper()
	db, err := store.NewLocalDB(context.Background(), "")
	require.NoError(t, err)
	clk := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	st := store.New(db, "", clk.Now)
	t.Cleanup(func() { _ = db.Close() })
	bus, err := events.NewLocalBus(db)
	require.NoError(t, err)
	t.Cleanup(func() { _ = bus.Close() })
	return &outboxRelay{store: st, bus: bus, clock: clk, log: slog.New(slog.DiscardHandler), seen: map[string]time.Time{}}, st, clk, bus
}
