package activities

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
	"github.com/maasflow/maasflow/shared/run"
	"github.com/maasflow/maasflow/shared/store"
)

// ErrorRoutes is the contract between the activities and the state
// machines: every error name an activity can return, with its class. It is
// built from the types in the shared vocabulary and a workflow package's
// own (extra), never written by hand; the contract tests check it against
// the declared types and the ASL.
func ErrorRoutes(extra ...domain.ClassifiedError) map[string]domain.ErrorClass {
	routes := make(map[string]domain.ErrorClass, len(vocabulary)+len(extra))
	for _, e := range slices.Concat(vocabulary, extra) {
		routes[errorName(e)] = e.Class()
	}
	return routes
}

// WorkflowCodes are the error names the state machine writes itself.
func WorkflowCodes() []string {
	return []string{CodeCommissioningFailed, CodeDeployFailed, CodeDeployRecoveryFailed, CodeEnrollmentTimeout, CodeInvalidStartStage, CodeMachineNeverBooted, CodeMachineResetFailed}
}

// boundary turns whatever an activity produced into an error whose type
// name the state machine knows: a classified error (the activities' own
// types and the MAAS client's) passes unchanged, unwrapped so that
// aws-lambda-go sees its type; an expired context that no MAAS call
// reported is a MAASTimeoutError, retryable like one; anything else is the
// catch-all ActivityFailedError.
func boundary(activity string, err error) error {
	if err == nil {
		return nil
	}
	var classified domain.ClassifiedError
	if errors.As(err, &classified) {
		return classified
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &maas.MAASTimeoutError{Op: activity}
	}
	return &ActivityFailedError{Activity: activity, Message: err.Error()}
}

// StoreError maps a store failure to the activities' error vocabulary:
// the store's types describe a table item, the activities' a read-model
// record the workflow needs, so they never cross the boundary as they are.
func StoreError(what string, err error) error {
	var nf *store.ItemNotFoundError
	var conflict *store.ItemConflictError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &nf):
		return &RecordNotFoundError{Kind: nf.Kind, ID: nf.ID}
	case errors.As(err, &conflict):
		return &RecordConflictError{Kind: conflict.Kind, ID: conflict.ID, Reason: conflict.Reason}
	}
	var classified domain.ClassifiedError
	if errors.As(err, &classified) {
		// A mutator's refusal (the onboarding's StaleAttemptError,
		// OnboardingClosedError).
		return classified
	}
	var (
		invalid  *store.InvalidRecordError
		open     *store.OpenOnboardingExistsError
		rejected *store.TokenRejectedError
		cursor   *store.InvalidCursorError
	)
	if errors.As(err, &invalid) || errors.As(err, &open) || errors.As(err, &rejected) || errors.As(err, &cursor) {
		// The record itself is refused: repeating the write cannot help.
		return &ActivityFailedError{Activity: what, Message: err.Error()}
	}
	return &StoreUnavailableError{Op: what, Message: err.Error()}
}

// classOf returns how the state machine treats err (after boundary); an
// error outside the vocabulary is terminal.
func classOf(err error) domain.ErrorClass {
	if err == nil {
		return ""
	}
	var classified domain.ClassifiedError
	if errors.As(err, &classified) {
		return classified.Class()
	}
	return domain.ErrorTerminal
}

// errorName is the name aws-lambda-go reports for err: the dereferenced
// type name.
func errorName(err error) string {
	t := fmt.Sprintf("%T", err)
	t = strings.TrimPrefix(t, "*")
	if i := strings.LastIndex(t, "."); i >= 0 {
		t = t[i+1:]
	}
	return t
}

// Platform error names: Lambda and Step Functions report these themselves;
// no Go type carries them.
var (
	// lambdaService: the invoke never reached the function (throttling, a
	// Lambda service fault). Every Task retries them.
	lambdaService = nameSet("Lambda.ClientExecutionTimeoutException", "Lambda.ServiceException",
		"Lambda.AWSLambdaException", "Lambda.SdkClientException", "Lambda.TooManyRequestsException")
	// lambdaLevel: the function ran and died without an answer: it timed
	// out (the Task's TimeoutSeconds, or the function's own), crashed or
	// ran out of memory. What it did in MAAS before dying is unknown.
	lambdaLevel = nameSet("States.Timeout", "Sandbox.Timedout", "Runtime.ExitError", "Runtime.OutOfMemory",
		"Runtime.Unknown", "Lambda.Unknown")
)

func nameSet(names ...string) map[string]bool {
	s := make(map[string]bool, len(names))
	for _, n := range names {
		s[n] = true
	}
	return s
}

// LambdaServiceErrors are the error names of an invoke that never reached
// the function, which every Task of every state machine retries.
func LambdaServiceErrors() []string { return slices.Sorted(maps.Keys(lambdaService)) }

// LambdaLevelErrors are the error names of a function that ran and died
// without an answer (timed out, crashed, out of memory).
func LambdaLevelErrors() []string { return slices.Sorted(maps.Keys(lambdaLevel)) }

// failAtBoundary maps err to the error vocabulary (boundary) and logs it
// once: a warning when the state machine will retry it, an error otherwise.
func failAtBoundary(ctx context.Context, log *slog.Logger, activity string, err error) error {
	err = boundary(activity, err)
	attrs := []any{slog.String("error_name", errorName(err)), slog.String("error", err.Error())}
	if classOf(err) == domain.ErrorRetryable {
		log.WarnContext(ctx, "activity failed, retryable", attrs...)
	} else {
		log.ErrorContext(ctx, "activity failed", attrs...)
	}
	return err
}

// exitOutcome is the failed stage exit's outcome on the timeline: what the
// state machine does next with err's class.
func exitOutcome(err error) string { return run.ExitOutcome(classOf(err)) }
