package asl

import (
	"fmt"
	"strings"
)

// Problem is one reason a definition is refused: the state (empty for the
// top level; "Outer/Branch 0/Inner" for states inside Parallel branches and
// Map processors), the field and what is wrong with it.
type Problem struct {
	State   string `json:"state,omitempty"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}

func (p Problem) String() string {
	var b strings.Builder
	if p.State != "" {
		fmt.Fprintf(&b, "state %q: ", p.State)
	}
	if p.Field != "" {
		fmt.Fprintf(&b, "field %q: ", p.Field)
	}
	b.WriteString(p.Message)
	return b.String()
}

// DefinitionError refuses a definition and lists every problem found, each
// naming its state and field.
type DefinitionError struct {
	Problems []Problem
}

func (e *DefinitionError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.String()
	}
	return "invalid state machine definition: " + strings.Join(parts, "; ")
}

// StateMachineDoesNotExistError is returned for an unknown state machine ARN.
type StateMachineDoesNotExistError struct{ ARN string }

func (e *StateMachineDoesNotExistError) Error() string {
	return fmt.Sprintf("state machine does not exist: %s", e.ARN)
}

// StateMachineAlreadyExistsError is returned when a name is registered
// twice with different definitions.
type StateMachineAlreadyExistsError struct{ Name string }

func (e *StateMachineAlreadyExistsError) Error() string {
	return fmt.Sprintf("state machine already exists with a different definition: %s", e.Name)
}

// ExecutionAlreadyExistsError is returned, as AWS does, when StartExecution
// reuses the name of an execution that has ended, or of a running one with a
// different input.
type ExecutionAlreadyExistsError struct{ Name, ARN string }

func (e *ExecutionAlreadyExistsError) Error() string {
	return fmt.Sprintf("execution already exists: %s", e.ARN)
}

// ExecutionDoesNotExistError is returned for an unknown execution ARN.
type ExecutionDoesNotExistError struct{ ARN string }

func (e *ExecutionDoesNotExistError) Error() string {
	return fmt.Sprintf("execution does not exist: %s", e.ARN)
}

// InvalidNameError is returned for an execution or state machine name AWS
// would refuse (1 to 80 characters, no whitespace, brackets, wildcards,
// punctuation or control characters).
type InvalidNameError struct{ Name string }

func (e *InvalidNameError) Error() string { return fmt.Sprintf("invalid name: %q", e.Name) }

// InvalidExecutionInputError is returned when the execution input is not
// JSON or exceeds the 256 KiB payload limit.
type InvalidExecutionInputError struct{ Reason string }

func (e *InvalidExecutionInputError) Error() string {
	return "invalid execution input: " + e.Reason
}

// InvalidTokenError is returned for a task token this engine never issued.
type InvalidTokenError struct{}

func (e *InvalidTokenError) Error() string { return "invalid task token" }

// TaskTimedOutError is returned, as AWS does, for a task token whose task
// has already ended (succeeded, failed, timed out or been aborted).
type TaskTimedOutError struct{}

func (e *TaskTimedOutError) Error() string {
	return "task token has expired or its task has already been closed"
}

// InvalidOutputError is returned by SendTaskSuccess when the output is not
// JSON or exceeds the 256 KiB payload limit.
type InvalidOutputError struct{ Reason string }

func (e *InvalidOutputError) Error() string { return "invalid task output: " + e.Reason }
