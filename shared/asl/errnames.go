package asl

import (
	"fmt"
	"strings"
)

// The reserved error names of the Amazon States Language.
const (
	ErrALL                             = "States.ALL"
	ErrTimeout                         = "States.Timeout"
	ErrHeartbeatTimeout                = "States.HeartbeatTimeout"
	ErrTaskFailed                      = "States.TaskFailed"
	ErrPermissions                     = "States.Permissions"
	ErrResultPathMatchFailure          = "States.ResultPathMatchFailure"
	ErrParameterPathFailure            = "States.ParameterPathFailure"
	ErrBranchFailed                    = "States.BranchFailed"
	ErrNoChoiceMatched                 = "States.NoChoiceMatched"
	ErrIntrinsicFailure                = "States.IntrinsicFailure"
	ErrDataLimitExceeded               = "States.DataLimitExceeded"
	ErrRuntime                         = "States.Runtime"
	ErrExceedToleratedFailureThreshold = "States.ExceedToleratedFailureThreshold"
	ErrItemReaderFailed                = "States.ItemReaderFailed"
	ErrResultWriterFailed              = "States.ResultWriterFailed"
	ErrQueryEvaluationError            = "States.QueryEvaluationError"
	ErrHTTPSocket                      = "States.Http.Socket"
)

// ErrLambdaTooManyRequests is the error of a Lambda invocation refused
// because the function is at its concurrency limit (Options.FunctionConcurrency).
const ErrLambdaTooManyRequests = "Lambda.TooManyRequestsException"

var reservedErrorNames = map[string]bool{
	ErrALL: true, ErrTimeout: true, ErrHeartbeatTimeout: true, ErrTaskFailed: true,
	ErrPermissions: true, ErrResultPathMatchFailure: true, ErrParameterPathFailure: true,
	ErrBranchFailed: true, ErrNoChoiceMatched: true, ErrIntrinsicFailure: true,
	ErrDataLimitExceeded: true, ErrRuntime: true, ErrExceedToleratedFailureThreshold: true,
	ErrItemReaderFailed: true, ErrResultWriterFailed: true, ErrQueryEvaluationError: true,
	ErrHTTPSocket: true,
}

// failure is an error raised inside an execution: an ASL error name and a
// cause. HasCause distinguishes an empty cause (States.Timeout records "")
// from none at all (a Fail state without Cause).
type failure struct {
	Error    string
	Cause    string
	HasCause bool
	// unplaced marks a States.Runtime failure whose cause does not yet say
	// which state raised it; see thread.runState.
	unplaced bool
}

func runtimeFailure(cause string) *failure {
	return &failure{Error: ErrRuntime, Cause: cause, HasCause: true, unplaced: true}
}

// placed returns f with AWS's prefix naming the state that raised it and
// the id of that state's *StateEntered event, as AWS words every
// States.Runtime cause of a state's own processing.
func (f *failure) placed(state string, enteredID int64) *failure {
	return &failure{Error: f.Error, HasCause: true,
		Cause: fmt.Sprintf("An error occurred while executing the state '%s' (entered at the event id #%d). %s", state, enteredID, f.Cause)}
}

// matchesError reports whether a retrier's or catcher's ErrorEquals list
// matches an error name, with the rules AWS applies (recorded behaviour where
// it differs from the prose):
//   - States.Runtime is never retried or caught, not even by name;
//   - States.ALL matches every other name, States.DataLimitExceeded included;
//   - States.TaskFailed matches every name except States.Timeout.
func matchesError(list []string, name string) bool {
	if name == ErrRuntime {
		return false
	}
	for _, e := range list {
		switch {
		case e == name:
			return true
		case e == ErrALL:
			return true
		case e == ErrTaskFailed && name != ErrTimeout:
			return true
		}
	}
	return false
}

func isReservedPrefix(name string) bool { return strings.HasPrefix(name, "States.") }
