package asl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// The Step Functions integrations that start another state machine's
// execution from a Task state.
const (
	// ResStartExecution starts a child execution and goes on at once with
	// {"ExecutionArn","StartDate"}.
	ResStartExecution = "arn:aws:states:::states:startExecution"
	// ResStartExecutionSync waits for the child and returns its
	// DescribeExecution response with Input and Output as JSON text.
	ResStartExecutionSync = "arn:aws:states:::states:startExecution.sync"
	// ResStartExecutionSync2 is ResStartExecutionSync with Input and Output
	// as JSON values.
	ResStartExecutionSync2 = "arn:aws:states:::states:startExecution.sync:2"
)

// statesPrefix marks the resources served by the engine itself; they are
// not Lambda functions, so Options.FunctionConcurrency does not apply.
const statesPrefix = "arn:aws:states:::states:"

// executionTask runs one of the startExecution integrations on the engine
// that runs the parent. It is a TaskHandler so that the Task state around it
// (Parameters, timeouts, Retry, Catch, history) works as for any task.
type executionTask struct {
	e    *Engine
	wait bool // .sync or .sync:2
	json bool // .sync:2: Input and Output as JSON values
}

// registerExecutionTasks adds the startExecution integrations to tasks
// unless the caller registered its own handler under the same resource.
func registerExecutionTasks(e *Engine, tasks map[string]TaskHandler) map[string]TaskHandler {
	out := make(map[string]TaskHandler, len(tasks)+3)
	out[ResStartExecution] = &executionTask{e: e}
	out[ResStartExecutionSync] = &executionTask{e: e, wait: true}
	out[ResStartExecutionSync2] = &executionTask{e: e, wait: true, json: true}
	for k, v := range tasks {
		out[k] = v
	}
	return out
}

// startExecutionParams are the Parameters of a startExecution Task. Input is
// a JSON value (sent as its text) or a string holding JSON text, as on AWS.
type startExecutionParams struct {
	StateMachineArn string          `json:"StateMachineArn"`
	Name            string          `json:"Name"`
	Input           json.RawMessage `json:"Input"`
}

// Invoke starts the child execution and, for .sync, waits for it. A child
// that does not succeed fails the Task with States.TaskFailed and its
// DescribeExecution response as the cause; a parent Task cancelled (the
// parent stopped, timed out or its branch was cancelled) stops the child.
func (t *executionTask) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	var p startExecutionParams
	if err := json.Unmarshal(payload, &p); err != nil || p.StateMachineArn == "" {
		return nil, &TaskFailedError{Name: "StepFunctions.InvalidArnException",
			Cause: "The Parameters must include a StateMachineArn string (Service: AWSStepFunctions; Status Code: 400; Error Code: InvalidArn)"}
	}
	input := []byte("{}")
	if len(p.Input) > 0 && string(p.Input) != "null" {
		input = p.Input
		var text string
		if json.Unmarshal(p.Input, &text) == nil {
			input = []byte(text)
		}
	}
	arn, err := t.e.StartExecution(ctx, p.StateMachineArn, p.Name, input)
	if err != nil {
		return nil, startFailure(err)
	}
	if !t.wait {
		d, err := t.e.DescribeExecution(arn)
		if err != nil {
			return nil, startFailure(err)
		}
		return json.Marshal(map[string]any{"ExecutionArn": arn, "StartDate": d.StartDate.UnixMilli()})
	}
	d := t.await(ctx, arn)
	out, err := json.Marshal(t.describeOutput(d))
	if err != nil {
		return nil, fmt.Errorf("encode child execution %s: %w", arn, err)
	}
	if d.Status != StatusSucceeded {
		return nil, &TaskFailedError{Name: ErrTaskFailed, Cause: string(out)}
	}
	return out, nil
}

// await waits for the child to end; a cancelled parent task stops it first.
// While it waits, the handler counts as idle on a virtual clock, so that a
// child's Wait states can move time; the child's end marks the handler busy
// again before the child goes idle, so time cannot jump past the end (to the
// parent task's timeout) before the handler has seen it.
func (t *executionTask) await(ctx context.Context, arn string) Execution {
	x, err := t.e.execution(arn)
	if err != nil {
		d, _ := t.e.DescribeExecution(arn)
		return d
	}
	x.mu.Lock()
	if x.status != StatusRunning {
		x.mu.Unlock()
		return x.describe()
	}
	x.endHooks = append(x.endHooks, t.e.busy)
	x.mu.Unlock()
	t.e.idle()
	select {
	case <-x.done:
	case <-ctx.Done():
		// The parent no longer waits: stop the child as Step Functions
		// stops the child of a stopped parent.
		x.stop("", "")
	}
	return x.describe()
}

// describeOutput is the DescribeExecution response a .sync task returns,
// with dates in epoch milliseconds as the service integrations render them.
func (t *executionTask) describeOutput(d Execution) map[string]any {
	out := map[string]any{
		"ExecutionArn":    d.ExecutionARN,
		"StateMachineArn": d.StateMachineARN,
		"Name":            d.Name,
		"Status":          d.Status,
		"StartDate":       d.StartDate.UnixMilli(),
		"Input":           t.value(d.Input),
		"InputDetails":    map[string]any{"Included": true},
	}
	if !d.StopDate.IsZero() {
		out["StopDate"] = d.StopDate.UnixMilli()
	}
	if d.Status == StatusSucceeded {
		out["Output"] = t.value(d.Output)
		out["OutputDetails"] = map[string]any{"Included": true}
	}
	if d.Error != "" {
		out["Error"] = d.Error
	}
	if d.Cause != "" {
		out["Cause"] = d.Cause
	}
	return out
}

// value is a child's Input or Output as the integration returns it: JSON
// text for .sync, the JSON value for .sync:2.
func (t *executionTask) value(text string) any {
	if !t.json {
		return text
	}
	return json.RawMessage(text)
}

// startFailure names a refused StartExecution as the integration does:
// StepFunctions.<AWS error code>.
func startFailure(err error) error {
	code := "StepFunctions.SdkClientException"
	var exists *ExecutionAlreadyExistsError
	var noMachine *StateMachineDoesNotExistError
	var badName *InvalidNameError
	var badInput *InvalidExecutionInputError
	switch {
	case errors.As(err, &exists):
		code = "StepFunctions.ExecutionAlreadyExistsException"
	case errors.As(err, &noMachine):
		code = "StepFunctions.StateMachineDoesNotExistException"
	case errors.As(err, &badName):
		code = "StepFunctions.InvalidNameException"
	case errors.As(err, &badInput):
		code = "StepFunctions.InvalidExecutionInputException"
	}
	return &TaskFailedError{Name: code, Cause: err.Error() + " (Service: AWSStepFunctions; Status Code: 400; Error Code: " + strings.TrimPrefix(code, "StepFunctions.") + ")"}
}
