package workflow

import (
	"context"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/run"
)

// SFNAPI is the part of the Step Functions client StepFunctions calls.
type SFNAPI = run.SFNAPI

// StepFunctions starts onboardings on AWS Step Functions (Standard):
// Onboardings over run.StepFunctions.
type StepFunctions = Onboardings

// NewStepFunctions returns a StepFunctions starting executions of the state
// machine onboardingARN. Step Functions answers a repeated start with the
// same name and input with the running execution (idempotent).
func NewStepFunctions(client SFNAPI, onboardingARN string) *StepFunctions {
	return newOnboardings(run.StepFunctions{Client: client}, onboardingARN)
}

// Onboardings starts, stops and answers onboarding executions (and
// batches of them) on either engine.
type Onboardings struct {
	starter  run.Starter[domain.Onboarding, domain.Stage]
	batchARN string // the batch state machine; empty: no batches
}

var _ interface {
	StartOnboarding(context.Context, domain.Onboarding) (string, error)
	OnboardingExecutionID(domain.Onboarding) string
	CompleteEnrollment(context.Context, string, []byte) error
	CompleteTask(context.Context, string, []byte) error
	StopOnboarding(context.Context, string, string) error
} = (*Onboardings)(nil)

func newOnboardings(engine run.Engine, onboardingARN string) *Onboardings {
	return &Onboardings{starter: run.Starter[domain.Onboarding, domain.Stage]{Workflow: onboardingWorkflow, Engine: engine, ARN: onboardingARN}}
}

// StartOnboarding starts the onboarding's current attempt and returns the
// execution ARN.
func (s *Onboardings) StartOnboarding(ctx context.Context, o domain.Onboarding) (string, error) {
	return s.starter.Start(ctx, o)
}

// OnboardingExecutionID is the ARN StartOnboarding gives o's execution.
func (s *Onboardings) OnboardingExecutionID(o domain.Onboarding) string {
	return s.starter.ExecutionID(o)
}

// StartOnboardingAt starts the onboarding's current attempt at stage start
// (after the guardrails); an empty start is StartOnboarding.
func (s *Onboardings) StartOnboardingAt(ctx context.Context, o domain.Onboarding, start domain.Stage) (string, error) {
	return s.starter.StartAt(ctx, o, start)
}

// CompleteEnrollment completes the task token the enrollment wait handed
// out (CompleteTask).
func (s *Onboardings) CompleteEnrollment(ctx context.Context, taskToken string, output []byte) error {
	return s.CompleteTask(ctx, taskToken, output)
}

// CompleteTask completes a .waitForTaskToken task. A task that already
// ended, or one the engine does not know, is a run.TaskEndedError: nothing
// will ever wait on it. The error never quotes the token.
func (s *Onboardings) CompleteTask(ctx context.Context, taskToken string, output []byte) error {
	return s.starter.Engine.CompleteTask(ctx, taskToken, output)
}

// StopOnboarding aborts the execution with the error OnboardingCancelled;
// once it returns, no later state of the execution writes the read model.
// An execution that already ended, or one the engine no longer knows,
// runs nothing: neither is an error.
func (s *Onboardings) StopOnboarding(ctx context.Context, executionID, cause string) error {
	return s.starter.Stop(ctx, executionID, cause)
}
