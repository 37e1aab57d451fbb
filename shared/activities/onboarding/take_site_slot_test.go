package onboarding_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/activities/activitiestest"
	"github.com/maasflow/maasflow/shared/activities/onboarding"
	"github.com/maasflow/maasflow/shared/domain"
)

// limitSite sets the fixture site's max_concurrent_onboardings.
func (e *env) limitSite(n int) {
	e.t.Helper()
	_, err := e.f.Store.UpdateSite(context.Background(), e.f.Site.ID, func(s *domain.Site) error {
		s.Policy.MaxConcurrentOnboardings = &n
		return nil
	})
	require.NoError(e.t, err)
}

func TestTakeSiteSlotQueuesOverTheLimit(t *testing.T) {
	e := newEnv(t, activitiestest.Options{})
	e.limitSite(1)
	first := e.f.AddOnboarding(t, "gpu-01", "10.0.0.11")
	second := e.f.AddOnboarding(t, "gpu-02", "10.0.0.12")

	var out onboarding.TakeSiteSlotOutput
	e.must("TakeSiteSlot", refIn{ref(first)}, &out)
	assert.Equal(t, onboarding.TakeSiteSlotOutput{Granted: true, Limit: 1}, out)

	e.must("TakeSiteSlot", refIn{ref(second)}, &out)
	assert.Equal(t, onboarding.TakeSiteSlotOutput{Granted: false, QueuePosition: 1, Limit: 1, WaitSeconds: 15}, out)
	third := e.f.AddOnboarding(t, "gpu-03", "10.0.0.13")
	var behind onboarding.TakeSiteSlotOutput
	e.must("TakeSiteSlot", refIn{ref(third)}, &behind)
	assert.Equal(t, onboarding.TakeSiteSlotOutput{Granted: false, QueuePosition: 2, Limit: 1, WaitSeconds: 30}, behind, "one step more per place behind")
	o := e.onboarding(second.ID)
	assert.Equal(t, domain.OnboardingPending, o.Status)
	assert.Equal(t, domain.StageQueued, o.Stage)
	rows := e.timeline(second.ID)
	require.NotEmpty(t, rows)
	assert.Equal(t, domain.TimelineStageEntered, rows[len(rows)-1].Kind)
	assert.Equal(t, domain.StageQueued, rows[len(rows)-1].Stage)
	assert.Contains(t, rows[len(rows)-1].Detail, "place 1 in the queue")

	// Asking again keeps the place and writes nothing new.
	e.must("TakeSiteSlot", refIn{ref(second)}, &out)
	assert.Equal(t, 1, out.QueuePosition)
	assert.Len(t, e.timeline(second.ID), len(rows))

	// The first run ends: the second takes the slot on its next ask.
	_, err := e.f.Store.CloseOnboarding(context.Background(), first.ID, func(o *domain.Onboarding) error {
		o.Status = domain.OnboardingFailed
		return nil
	})
	require.NoError(t, err)
	e.must("TakeSiteSlot", refIn{ref(second)}, &out)
	assert.True(t, out.Granted)
	assert.Zero(t, out.WaitSeconds)
	rows = e.timeline(second.ID)
	last := rows[len(rows)-1]
	assert.Equal(t, domain.TimelineStageExited, last.Kind)
	assert.Equal(t, "ok", last.Outcome)

	// Once granted, asking again is granted again and records nothing.
	e.must("TakeSiteSlot", refIn{ref(second)}, &out)
	assert.True(t, out.Granted)
	assert.Len(t, e.timeline(second.ID), len(rows))
}

func TestTakeSiteSlotWithoutALimitGrants(t *testing.T) {
	e := newEnv(t, activitiestest.Options{})
	for _, host := range []string{"gpu-01", "gpu-02", "gpu-03"} {
		o := e.f.AddOnboarding(t, host, "10.0.0."+host[len(host)-1:])
		var out onboarding.TakeSiteSlotOutput
		e.must("TakeSiteSlot", refIn{ref(o)}, &out)
		assert.Equal(t, onboarding.TakeSiteSlotOutput{Granted: true}, out)
		assert.Empty(t, e.timeline(o.ID), "nothing to say without a limit")
	}
}

func TestTakeSiteSlotIsFencedByAttemptAndStatus(t *testing.T) {
	e := newEnv(t, activitiestest.Options{})
	o := e.f.AddOnboarding(t, "gpu-01", "10.0.0.11")
	stale := ref(o)
	stale.Attempt++
	requireErrorName(t, e.call("TakeSiteSlot", refIn{stale}, nil), "StaleAttemptError")
	_, err := e.f.Store.CloseOnboarding(context.Background(), o.ID, func(o *domain.Onboarding) error {
		o.Status = domain.OnboardingCancelled
		return nil
	})
	require.NoError(t, err)
	requireErrorName(t, e.call("TakeSiteSlot", refIn{ref(o)}, nil), "OnboardingClosedError")
}
