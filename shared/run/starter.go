package run

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// Workflow is what a starter needs to know of one workflow: its name (the
// "onboarding" of an execution name), how a record names its run and
// becomes the execution's input, optionally entering at a stage, and the
// error its executions end with when an operator stops them.
type Workflow[R any, S ~string] struct {
	Kind string
	// Run is the record's id, attempt and run.
	Run func(R) (id string, attempt, run int)
	// Input is the execution input of the record's current run entering
	// at stage start ("" = the beginning).
	Input func(r R, start S) any
	// StopError is the error a stopped execution ends with.
	StopError string
}

// Starter starts and stops the runs of one workflow's records on an engine.
type Starter[R any, S ~string] struct {
	Workflow[R, S]
	Engine Engine
	// ARN is the state machine's.
	ARN string
}

// ExecutionName names a run's execution: "<kind>-<id>-<attempt>", with
// "-r<run>" from the second run of an attempt on. Both engines refuse a
// second execution of one name, so a repeated start of the same run
// cannot run the workflow twice; a recovery operation that runs the same
// attempt again counts a new run and so gets a new name. Names stay within
// Step Functions' 80 characters for the ids the API accepts.
func ExecutionName(kind, id string, attempt, run int) string {
	if run == 0 {
		return fmt.Sprintf("%s-%s-%d", kind, id, attempt)
	}
	return fmt.Sprintf("%s-%s-%d-r%d", kind, id, attempt, run)
}

// ExecutionARN is the ARN of the execution named name of the state
// machine stateMachineARN: a Standard execution's ARN is its state
// machine's with "execution" for "stateMachine" and the name appended, on
// Step Functions and on the embedded runtime alike.
func ExecutionARN(stateMachineARN, name string) string {
	return strings.Replace(stateMachineARN, ":stateMachine:", ":execution:", 1) + ":" + name
}

// Name is the execution name of r's current run.
func (s Starter[R, S]) Name(r R) string {
	id, attempt, run := s.Run(r)
	return ExecutionName(s.Kind, id, attempt, run)
}

// ExecutionID is the ARN Start gives r's execution.
func (s Starter[R, S]) ExecutionID(r R) string { return ExecutionARN(s.ARN, s.Name(r)) }

// Start starts r's current run at the beginning and returns the execution
// ARN.
func (s Starter[R, S]) Start(ctx context.Context, r R) (string, error) { return s.StartAt(ctx, r, "") }

// StartAt starts r's current run entering at stage start (the state
// machine's EnterAtStage Choice routes on it); "" is Start.
func (s Starter[R, S]) StartAt(ctx context.Context, r R, start S) (string, error) {
	id, _, _ := s.Run(r)
	input, err := json.Marshal(s.Input(r, start))
	if err != nil {
		return "", fmt.Errorf("marshal %s input: %w", s.Kind, err)
	}
	arn, err := s.Engine.Start(ctx, s.ARN, s.Name(r), input)
	if err != nil {
		return "", fmt.Errorf("start %s %s: %w", s.Kind, id, err)
	}
	return arn, nil
}

// Stop aborts the execution with the workflow's StopError; once it
// returns no later state of the execution starts. An execution that
// already ended, or that the engine no longer knows, is not an error.
func (s Starter[R, S]) Stop(ctx context.Context, executionID, cause string) error {
	if err := s.Engine.Stop(ctx, executionID, s.StopError, cause); err != nil {
		return fmt.Errorf("stop %s execution %s: %w", s.Kind, executionID, err)
	}
	return nil
}
