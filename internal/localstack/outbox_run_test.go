package localstack

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/events"
)

// A retried run that stops again owes its own event: the marker the first
// run left for the same attempt and type does not settle it.
func TestOutboxRelayOwesEachRunItsEvent(t *testing.T) {
	ctx := context.Background()
	r, st, clk, bus := newTestRelay(t)

	const id = "ob-run"
	require.NoError(t, st.CreateOnboarding(ctx, domain.Onboarding{ID: id, SiteID: "s1", ProfileID: "p1", SKUID: "k", Hostname: "gpu-run", IPMIIP: "10.0.0.1", Attempt: 1}))
	stop := func() {
		_, err := st.UpdateOnboarding(ctx, id, func(o *domain.Onboarding) error {
			o.Status, o.Error = domain.OnboardingManualIntervention, &domain.Failure{Code: "DeployFailed", Message: "deploy failed"}
			return nil
		})
		require.NoError(t, err)
	}
	stop()
	// The first run published its event and marked it.
	require.NoError(t, st.AppendOnboardingEvents(ctx, domain.TimelineEntry{OnboardingID: id, Attempt: 1, Time: clk.Now(),
		Kind: domain.TimelineNote, Source: eventMarkerSource, Detail: events.OnboardingManualInterventionRequired}))
	now := time.Now()
	_, err := r.once(ctx, now)
	require.NoError(t, err)
	n, err := r.once(ctx, now.Add(relayGrace))
	require.NoError(t, err)
	require.Zero(t, n, "the first run's event was published by its activity")

	// retry: a new run of attempt 1 that stops again and dies before
	// publishing.
	clk.Advance(time.Minute)
	_, err = st.UpdateOnboarding(ctx, id, func(o *domain.Onboarding) error {
		o.Status, o.Error, o.Run = domain.OnboardingPending, nil, 1
		return nil
	})
	require.NoError(t, err)
	require.NoError(t, st.AppendOnboardingEvents(ctx, domain.TimelineEntry{OnboardingID: id, Attempt: 1, Time: clk.Now(),
		Kind: domain.TimelineNote, Source: string(domain.OpRetry), Detail: "run 1"}))
	clk.Advance(time.Minute)
	stop()

	_, err = r.once(ctx, now.Add(2*relayGrace))
	require.NoError(t, err)
	n, err = r.once(ctx, now.Add(3*relayGrace))
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the second run's event is owed")
	got, err := bus.ReadAll()
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, events.OnboardingManualInterventionRequired, got[0].DetailType)
	assert.Contains(t, string(got[0].Detail), `"attempt":1`)
}
