package reconcile

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
)

func TestSteps(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	h.addNode(t, "n1", "gpu1", "sida")
	delete(h.maas.machines, "sida")

	begin, err := h.r.Step(ctx, StepInput{Action: StepBegin, Request: &StepRequest{}})
	require.NoError(t, err)
	assert.False(t, begin.Joined)
	assert.Equal(t, []string{"s1"}, begin.Sites)

	again, err := h.r.Step(ctx, StepInput{Action: StepBegin, Request: &StepRequest{Trigger: TriggerSchedule}})
	require.NoError(t, err)
	assert.True(t, again.Joined, "a tick while a run is under way joins it")
	assert.Equal(t, begin.RunID, again.RunID)

	for range 2 { // a retried site step changes nothing the first did not
		site, err := h.r.Step(ctx, StepInput{Action: StepSite, RunID: begin.RunID, SiteID: "s1"})
		require.NoError(t, err)
		assert.Equal(t, 1, site.Site.NodesChecked)
	}
	assert.Len(t, h.bus.events, 1, "one event for the one new item")
	done, err := h.r.Step(ctx, StepInput{Action: StepFinish, RunID: begin.RunID})
	require.NoError(t, err)
	assert.Equal(t, domain.RunSucceeded, done.Status)
	run, err := h.st.GetReconcileRun(ctx, begin.RunID)
	require.NoError(t, err)
	assert.Len(t, run.Sites, 1)
	assert.Equal(t, map[string]int{domain.DriftMachineMissing: 1}, run.DriftByKind)

	var invalid *InvalidStepError
	_, err = h.r.Step(ctx, StepInput{Action: "explode"})
	require.ErrorAs(t, err, &invalid)
	_, err = h.r.Step(ctx, StepInput{Action: StepSite, RunID: begin.RunID})
	require.ErrorAs(t, err, &invalid)
}

type failingStarter struct{ calls int }

func (f *failingStarter) StartReconcile(context.Context, string) error {
	f.calls++
	return errors.New("throttled")
}

func TestRemoteTriggerReleasesTheLockWhenTheExecutionDoesNotStart(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	starter := &failingStarter{}
	_, _, err := Remote{Runner: h.r, Starter: starter}.Trigger(ctx, "")
	require.Error(t, err)
	assert.Equal(t, 1, starter.calls)
	_, found, err := h.st.CurrentReconcileRun(ctx)
	require.NoError(t, err)
	assert.False(t, found, "the lock is free again")
}
