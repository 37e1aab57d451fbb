package workflow

import (
	"context"
	"errors"
	"fmt"

	"github.com/maasflow/maasflow/shared/asl"
	"github.com/maasflow/maasflow/shared/domain"
)

// LocalEngine is the part of the embedded ASL runtime (shared/asl) Local
// calls.
type LocalEngine interface {
	StartExecution(ctx context.Context, stateMachineARN, name string, input []byte) (string, error)
	SendTaskSuccess(taskToken string, output []byte) error
	StopExecution(executionARN, errName, cause string) error
}

// Local starts onboardings on the embedded ASL runtime.
type Local struct {
	engine        LocalEngine
	onboardingARN string
	batchARN      string // the batch state machine; empty: no batches
}

// NewLocal returns a Local that starts executions of the onboarding state
// machine registered under onboardingARN.
func NewLocal(engine LocalEngine, onboardingARN string) *Local {
	return &Local{engine: engine, onboardingARN: onboardingARN}
}

// StartOnboarding starts the onboarding's current attempt and returns the
// execution ARN. Starting an attempt that is already running fails with the
// runtime's duplicate-name error.
func (l *Local) StartOnboarding(ctx context.Context, o domain.Onboarding) (string, error) {
	return l.StartOnboardingAt(ctx, o, "")
}

// OnboardingExecutionID is the ARN StartOnboarding gives o's execution.
func (l *Local) OnboardingExecutionID(o domain.Onboarding) string {
	return executionARN(l.onboardingARN, ExecutionName(o))
}

// StartOnboardingAt starts the onboarding's current attempt at stage start
// (after the guardrails); an empty start is StartOnboarding.
func (l *Local) StartOnboardingAt(ctx context.Context, o domain.Onboarding, start domain.Stage) (string, error) {
	input, err := marshalInput(o, start)
	if err != nil {
		return "", err
	}
	arn, err := l.engine.StartExecution(ctx, l.onboardingARN, ExecutionName(o), input)
	if err != nil {
		return "", fmt.Errorf("start onboarding %s: %w", o.ID, err)
	}
	return arn, nil
}

// CompleteEnrollment completes the task token the enrollment wait handed
// out (CompleteTask).
func (l *Local) CompleteEnrollment(ctx context.Context, taskToken string, output []byte) error {
	return l.CompleteTask(ctx, taskToken, output)
}

// CompleteTask completes a .waitForTaskToken task. A token whose task
// already ended, or one the runtime does not know (a restart forgets every
// execution), is a TaskEndedError: nothing will ever wait on it.
func (l *Local) CompleteTask(_ context.Context, taskToken string, output []byte) error {
	err := l.engine.SendTaskSuccess(taskToken, output)
	var timedOut *asl.TaskTimedOutError
	var invalid *asl.InvalidTokenError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &timedOut), errors.As(err, &invalid):
		return &TaskEndedError{}
	default:
		return fmt.Errorf("complete task: %w", err)
	}
}

// StopOnboarding aborts the execution with the error OnboardingCancelled and
// returns once it has unwound, so no later state of it writes the read
// model. An execution that already ended is left as it is; one the runtime
// no longer knows (the local runtime keeps executions in memory, so a
// restart forgets them) runs nothing either, so neither is an error.
func (l *Local) StopOnboarding(_ context.Context, executionID, cause string) error {
	err := l.engine.StopExecution(executionID, CancelledErrorName, cause)
	var gone *asl.ExecutionDoesNotExistError
	if err != nil && !errors.As(err, &gone) {
		return fmt.Errorf("stop onboarding execution %s: %w", executionID, err)
	}
	return nil
}
