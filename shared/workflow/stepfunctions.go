package workflow

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/maasflow/maasflow/shared/domain"
)

// SFNAPI is the part of the Step Functions client StepFunctions calls.
type SFNAPI interface {
	StartExecution(ctx context.Context, in *sfn.StartExecutionInput, opts ...func(*sfn.Options)) (*sfn.StartExecutionOutput, error)
	SendTaskSuccess(ctx context.Context, in *sfn.SendTaskSuccessInput, opts ...func(*sfn.Options)) (*sfn.SendTaskSuccessOutput, error)
	StopExecution(ctx context.Context, in *sfn.StopExecutionInput, opts ...func(*sfn.Options)) (*sfn.StopExecutionOutput, error)
}

// StepFunctions starts onboardings on AWS Step Functions (Standard).
type StepFunctions struct {
	client        SFNAPI
	onboardingARN string
	batchARN      string // the batch state machine; empty: no batches
}

var (
	_ interface {
		StartOnboarding(context.Context, domain.Onboarding) (string, error)
		OnboardingExecutionID(domain.Onboarding) string
		CompleteEnrollment(context.Context, string, []byte) error
		CompleteTask(context.Context, string, []byte) error
		StopOnboarding(context.Context, string, string) error
	} = (*StepFunctions)(nil)
	_ interface {
		StartOnboarding(context.Context, domain.Onboarding) (string, error)
		OnboardingExecutionID(domain.Onboarding) string
		CompleteEnrollment(context.Context, string, []byte) error
		CompleteTask(context.Context, string, []byte) error
		StopOnboarding(context.Context, string, string) error
	} = (*Local)(nil)
)

// NewStepFunctions returns a StepFunctions starting executions of the state
// machine onboardingARN.
func NewStepFunctions(client SFNAPI, onboardingARN string) *StepFunctions {
	return &StepFunctions{client: client, onboardingARN: onboardingARN}
}

// StartOnboarding starts the onboarding's current attempt. Step Functions
// answers a repeated start with the same name and input with the running
// execution (idempotent); a different input is ExecutionAlreadyExists.
func (s *StepFunctions) StartOnboarding(ctx context.Context, o domain.Onboarding) (string, error) {
	return s.StartOnboardingAt(ctx, o, "")
}

// OnboardingExecutionID is the ARN StartOnboarding gives o's execution.
func (s *StepFunctions) OnboardingExecutionID(o domain.Onboarding) string {
	return executionARN(s.onboardingARN, ExecutionName(o))
}

// StartOnboardingAt starts the onboarding's current attempt at stage start
// (after the guardrails); an empty start is StartOnboarding.
func (s *StepFunctions) StartOnboardingAt(ctx context.Context, o domain.Onboarding, start domain.Stage) (string, error) {
	input, err := marshalInput(o, start)
	if err != nil {
		return "", err
	}
	out, err := s.client.StartExecution(ctx, &sfn.StartExecutionInput{
		StateMachineArn: aws.String(s.onboardingARN),
		Name:            aws.String(ExecutionName(o)),
		Input:           aws.String(string(input)),
	})
	if err != nil {
		return "", fmt.Errorf("start onboarding %s: %w", o.ID, err)
	}
	return aws.ToString(out.ExecutionArn), nil
}

// CompleteEnrollment sends SendTaskSuccess for the enrollment wait
// (CompleteTask).
func (s *StepFunctions) CompleteEnrollment(ctx context.Context, taskToken string, output []byte) error {
	return s.CompleteTask(ctx, taskToken, output)
}

// CompleteTask sends SendTaskSuccess for a .waitForTaskToken task. A task
// that already ended (TaskDoesNotExist, TaskTimedOut) is reported as
// TaskEndedError so callers can tell it from a transport failure. The
// error never quotes the token.
func (s *StepFunctions) CompleteTask(ctx context.Context, taskToken string, output []byte) error {
	_, err := s.client.SendTaskSuccess(ctx, &sfn.SendTaskSuccessInput{
		TaskToken: aws.String(taskToken),
		Output:    aws.String(string(output)),
	})
	var gone *sfntypes.TaskDoesNotExist
	var timedOut *sfntypes.TaskTimedOut
	switch {
	case err == nil:
		return nil
	case errors.As(err, &gone), errors.As(err, &timedOut):
		return &TaskEndedError{}
	default:
		return fmt.Errorf("complete task: %w", err)
	}
}

// maxStopCause is Step Functions' limit on StopExecution's cause.
const maxStopCause = 32768

// StopOnboarding stops the execution with the error OnboardingCancelled.
// Step Functions answers a stop of an execution that already ended with
// success and leaves it as it was; ExecutionDoesNotExist (its history
// expired, 90 days after it closed) means nothing runs either, so neither is
// an error. The stop is final once answered: no later state of the
// execution starts.
func (s *StepFunctions) StopOnboarding(ctx context.Context, executionID, cause string) error {
	if len(cause) > maxStopCause {
		cause = cause[:maxStopCause]
	}
	_, err := s.client.StopExecution(ctx, &sfn.StopExecutionInput{
		ExecutionArn: aws.String(executionID),
		Error:        aws.String(CancelledErrorName),
		Cause:        aws.String(cause),
	})
	var gone *sfntypes.ExecutionDoesNotExist
	if err != nil && !errors.As(err, &gone) {
		return fmt.Errorf("stop onboarding execution %s: %w", executionID, err)
	}
	return nil
}

// TaskEndedError: the task a callback was meant for has already ended.
type TaskEndedError struct{}

func (e *TaskEndedError) Error() string { return "workflow task already ended" }

// TaskEnded marks the error for callers that match it by behaviour, without
// importing this package (the activities).
func (e *TaskEndedError) TaskEnded() bool { return true }
