package run_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/run"
)

func TestFenceHoldsOnlyItsOwnAttemptAndRun(t *testing.T) {
	f := run.Fence{Attempt: 2, Run: 1}
	assert.True(t, f.Holds(2, 1))
	assert.False(t, f.Holds(2, 2), "a recovery operation's new run")
	assert.False(t, f.Holds(3, 0), "a new attempt")
}

func TestExitOutcomeFollowsTheErrorClass(t *testing.T) {
	assert.Equal(t, run.OutcomeRetry, run.ExitOutcome(domain.ErrorRetryable))
	assert.Equal(t, run.OutcomeManual, run.ExitOutcome(domain.ErrorNeedsOperator))
	assert.Equal(t, run.OutcomeFailed, run.ExitOutcome(domain.ErrorTerminal))
	assert.Equal(t, "from start", run.EnteredDetail(domain.Stage("")))
	assert.Equal(t, "from drain", run.EnteredDetail(domain.DecomStageDrain))
}
