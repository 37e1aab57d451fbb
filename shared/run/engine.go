package run

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/maasflow/maasflow/shared/asl"
)

// Engine starts, stops and answers the executions of state machines: the
// embedded runtime (Local) or Step Functions (StepFunctions). Its answers
// mean the same on both, so a starter above it cannot tell them apart.
type Engine interface {
	// Start starts an execution named name and returns its ARN.
	Start(ctx context.Context, stateMachineARN, name string, input []byte) (string, error)
	// Stop aborts the execution with errName. An execution that already
	// ended, or one the engine no longer knows, runs nothing: not an error.
	Stop(ctx context.Context, executionARN, errName, cause string) error
	// CompleteTask completes a .waitForTaskToken task; a task that already
	// ended (or that the engine does not know) is a TaskEndedError.
	CompleteTask(ctx context.Context, taskToken string, output []byte) error
}

// Runtime is the part of the embedded ASL runtime (shared/asl) Local
// calls.
type Runtime interface {
	StartExecution(ctx context.Context, stateMachineARN, name string, input []byte) (string, error)
	SendTaskSuccess(taskToken string, output []byte) error
	StopExecution(executionARN, errName, cause string) error
}

// Local is the embedded runtime as an Engine.
type Local struct{ Runtime Runtime }

// Start starts the execution; a name already used is the runtime's
// duplicate-name error.
func (l Local) Start(ctx context.Context, stateMachineARN, name string, input []byte) (string, error) {
	return l.Runtime.StartExecution(ctx, stateMachineARN, name, input)
}

// Stop aborts the execution and returns once it has unwound, so no later
// state of it writes a record. The runtime keeps executions in memory, so
// one it no longer knows (after a restart) runs nothing either.
func (l Local) Stop(_ context.Context, executionARN, errName, cause string) error {
	err := l.Runtime.StopExecution(executionARN, errName, cause)
	if _, gone := errors.AsType[*asl.ExecutionDoesNotExistError](err); err != nil && !gone {
		return err
	}
	return nil
}

// CompleteTask completes the task; a restart forgets every execution, so
// an unknown token is a task that ended.
func (l Local) CompleteTask(_ context.Context, taskToken string, output []byte) error {
	err := l.Runtime.SendTaskSuccess(taskToken, output)
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

// SFNAPI is the part of the Step Functions client StepFunctions calls.
type SFNAPI interface {
	StartExecution(ctx context.Context, in *sfn.StartExecutionInput, opts ...func(*sfn.Options)) (*sfn.StartExecutionOutput, error)
	SendTaskSuccess(ctx context.Context, in *sfn.SendTaskSuccessInput, opts ...func(*sfn.Options)) (*sfn.SendTaskSuccessOutput, error)
	StopExecution(ctx context.Context, in *sfn.StopExecutionInput, opts ...func(*sfn.Options)) (*sfn.StopExecutionOutput, error)
}

// StepFunctions is AWS Step Functions (Standard) as an Engine.
type StepFunctions struct{ Client SFNAPI }

// Start starts the execution. Step Functions answers a repeated start with
// the same name and input with the running execution (idempotent); a
// different input is ExecutionAlreadyExists.
func (s StepFunctions) Start(ctx context.Context, stateMachineARN, name string, input []byte) (string, error) {
	out, err := s.Client.StartExecution(ctx, &sfn.StartExecutionInput{
		StateMachineArn: aws.String(stateMachineARN),
		Name:            aws.String(name),
		Input:           aws.String(string(input)),
	})
	if err != nil {
		return "", err
	}
	return aws.ToString(out.ExecutionArn), nil
}

// maxStopCause is Step Functions' limit on StopExecution's cause.
const maxStopCause = 32768

// Stop stops the execution. Step Functions answers a stop of an execution
// that already ended with success and leaves it as it was;
// ExecutionDoesNotExist (its history expired, 90 days after it closed)
// means nothing runs either. The stop is final once answered.
func (s StepFunctions) Stop(ctx context.Context, executionARN, errName, cause string) error {
	if len(cause) > maxStopCause {
		cause = cause[:maxStopCause]
	}
	_, err := s.Client.StopExecution(ctx, &sfn.StopExecutionInput{
		ExecutionArn: aws.String(executionARN),
		Error:        aws.String(errName),
		Cause:        aws.String(cause),
	})
	if _, gone := errors.AsType[*sfntypes.ExecutionDoesNotExist](err); err != nil && !gone {
		return err
	}
	return nil
}

// CompleteTask sends SendTaskSuccess. A task that already ended
// (TaskDoesNotExist, TaskTimedOut) is a TaskEndedError, so callers can
// tell it from a transport failure. The error never quotes the token.
func (s StepFunctions) CompleteTask(ctx context.Context, taskToken string, output []byte) error {
	_, err := s.Client.SendTaskSuccess(ctx, &sfn.SendTaskSuccessInput{
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

// TaskEndedError: the task a callback was meant for has already ended.
type TaskEndedError struct{}

func (e *TaskEndedError) Error() string { return "workflow task already ended" }

// TaskEnded marks the error for callers that match it by behaviour, without
// importing this package (the activities).
func (e *TaskEndedError) TaskEnded() bool { return true }
