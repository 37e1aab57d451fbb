package e2e

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/asl"
)

// TestMachineWatchRunsOnTheStack: local mode runs the machine watch on its
// schedule; an onboarding's waits park on it and leave no watch behind.
func TestMachineWatchRunsOnTheStack(t *testing.T) {
	t.Parallel()
	e := startStack(t)
	f := e.setup(nil, nil)
	e.hardware("gpu-w1", "10.10.0.91", "52:54:00:00:09:01", nil)

	id := e.onboard(f, "gpu-w1", "10.10.0.91")
	o := e.waitTerminal(id)
	require.Equal(t, "completed", o["status"], o)

	arn := e.stack.Engine.StateMachineARN("machine-watch")
	runs := e.stack.Engine.ListExecutions(arn, "")
	require.NotEmpty(t, runs, "the schedule started the machine watch")
	var succeeded int
	for _, r := range runs {
		if r.Status == asl.StatusSucceeded {
			succeeded++
		}
	}
	assert.Positive(t, succeeded)
	left, err := e.stack.Store.ListMachineWatches(context.Background())
	require.NoError(t, err)
	assert.Empty(t, left.Watches, "the waits were woken and their watches deleted")
}
