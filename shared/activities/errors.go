package activities

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/maasflow/maasflow/shared/maas"
)

// The errors below are the activities' vocabulary. Each Go type name is the
// error name statemachines/onboarding.asl.json matches (aws-lambda-go
// reports the bare type name), so they are unique across the module and
// their messages are lower-case, name their fields and never hold a secret.
//
// Three outcomes (style §3): waiting is output, never an error; retryable
// errors are Retry'd by the ASL; terminal errors are Caught into manual
// intervention or the failed path.

// activityError marks the declared types, so the boundary lets them through.
type activityError interface {
	error
	activityError()
}

// --- retryable.

// RecordConflictError: the read model lost an optimistic-concurrency race
// more often than the store retries. Retryable.
type RecordConflictError struct {
	Kind   string `json:"kind"`
	ID     string `json:"id"`
	Reason string `json:"reason"`
}

func (e *RecordConflictError) Error() string {
	return fmt.Sprintf("read model %s %s: conflict: %s", e.Kind, e.ID, e.Reason)
}

// StoreUnavailableError: the read model could not be read or written
// (throttling, network). Retryable.
type StoreUnavailableError struct {
	Op      string `json:"op"`
	Message string `json:"message"`
}

func (e *StoreUnavailableError) Error() string {
	return fmt.Sprintf("read model unavailable: %s: %s", e.Op, e.Message)
}

// SecretsUnavailableError: the secrets store could not be read. Retryable.
type SecretsUnavailableError struct {
	SiteID  string `json:"site_id"`
	Message string `json:"message"`
}

func (e *SecretsUnavailableError) Error() string {
	return fmt.Sprintf("secrets of site %s unavailable: %s", e.SiteID, e.Message)
}

// EventPublishError: the bus refused an event. Retryable; the activity is
// idempotent and publishes only what it has not published yet.
type EventPublishError struct {
	DetailType string `json:"detail_type"`
	Message    string `json:"message"`
}

func (e *EventPublishError) Error() string {
	return fmt.Sprintf("publish %s: %s", e.DetailType, e.Message)
}

// EnrollmentCompletionError: completing the enrollment wait's task token
// failed. Retryable.
type EnrollmentCompletionError struct {
	Message string `json:"message"`
}

func (e *EnrollmentCompletionError) Error() string {
	return "complete the enrollment wait: " + e.Message
}

// --- terminal: manual intervention (the machine needs an operator).

// AmbiguousMachineMatchError: more than one MAAS machine matched, or the
// rules disagree; nothing was changed in MAAS (seed 000 §4.1 fail closed).
type AmbiguousMachineMatchError struct {
	Rule      string   `json:"rule"`
	SystemIDs []string `json:"system_ids"`
	Reason    string   `json:"reason"`
}

func (e *AmbiguousMachineMatchError) Error() string {
	return fmt.Sprintf("ambiguous machine match by %s (%s): %s", e.Rule, strings.Join(e.SystemIDs, ", "), e.Reason)
}

// MachineClaimNotAllowedError: a New machine matched that this onboarding
// did not create, and the policy does not allow auto-claiming it.
type MachineClaimNotAllowedError struct {
	SystemID string `json:"system_id"`
	Rule     string `json:"rule"`
}

func (e *MachineClaimNotAllowedError) Error() string {
	return fmt.Sprintf("machine %s (New, matched by %s) may not be claimed: policy auto_claim_new is off", e.SystemID, e.Rule)
}

// MachineStateUnsafeError: the machine is in a state the workflow must not
// act from (Deployed, Deploying, Broken, Failed testing, …).
type MachineStateUnsafeError struct {
	SystemID string `json:"system_id"`
	Status   string `json:"status"`
	Reason   string `json:"reason"`
}

func (e *MachineStateUnsafeError) Error() string {
	return fmt.Sprintf("machine %s is %s: %s", e.SystemID, e.Status, e.Reason)
}

// MachineWaitTimeoutError: a wait for a MAAS status ran past its bound.
type MachineWaitTimeoutError struct {
	SystemID      string `json:"system_id"`
	Target        string `json:"target"`
	Status        string `json:"status"`
	WaitedSeconds int    `json:"waited_seconds"`
	LimitSeconds  int    `json:"limit_seconds"`
}

func (e *MachineWaitTimeoutError) Error() string {
	return fmt.Sprintf("machine %s still %s after %ds waiting for %s (limit %ds)", e.SystemID, e.Status, e.WaitedSeconds, e.Target, e.LimitSeconds)
}

// PXEPreflightError: the boot interface cannot be made deploy-safe (no
// VLAN, no subnet, no gateway, no DHCP); nothing was deployed (seed 000
// §4.3).
type PXEPreflightError struct {
	SystemID  string `json:"system_id"`
	Interface string `json:"interface"`
	Reason    string `json:"reason"`
}

func (e *PXEPreflightError) Error() string {
	return fmt.Sprintf("PXE preflight of machine %s interface %s: %s", e.SystemID, e.Interface, e.Reason)
}

// RoCEAssignmentError: the site's RoCE assignment rows for the host do not
// fit the machine (none, unknown interface, no subnet, bad address).
type RoCEAssignmentError struct {
	Hostname  string `json:"hostname"`
	Interface string `json:"interface,omitempty"`
	Reason    string `json:"reason"`
}

func (e *RoCEAssignmentError) Error() string {
	if e.Interface == "" {
		return fmt.Sprintf("RoCE assignments of %s: %s", e.Hostname, e.Reason)
	}
	return fmt.Sprintf("RoCE assignment %s/%s: %s", e.Hostname, e.Interface, e.Reason)
}

// PredeployCheckError: a pre-deploy hardening check failed (seed 000 §8.1);
// Check names it.
type PredeployCheckError struct {
	Check  string `json:"check"`
	Reason string `json:"reason"`
}

func (e *PredeployCheckError) Error() string {
	return fmt.Sprintf("pre-deploy check %s failed: %s", e.Check, e.Reason)
}

// PayloadRenderError: a part of the first-boot payload could not be
// rendered; Part and Version say which (seed 000 §3.4).
type PayloadRenderError struct {
	Part    string `json:"part"`
	Version string `json:"version"`
	Reason  string `json:"reason"`
}

func (e *PayloadRenderError) Error() string {
	return fmt.Sprintf("render %s %s: %s", e.Part, e.Version, e.Reason)
}

// TokenPersistenceError: the enrollment token's stored side did not read
// back consistent, so the node could not enroll (seed 000 §8.1, §8.5).
type TokenPersistenceError struct {
	Reason string `json:"reason"`
}

func (e *TokenPersistenceError) Error() string {
	return "enrollment token persistence: " + e.Reason
}

// MachineNotDeployableError: deploy asked of a machine that is neither
// Ready nor Allocated (maas-behaviour §14.2).
type MachineNotDeployableError struct {
	SystemID string `json:"system_id"`
	Status   string `json:"status"`
}

func (e *MachineNotDeployableError) Error() string {
	return fmt.Sprintf("machine %s is %s: deploy needs Ready or Allocated", e.SystemID, e.Status)
}

// CompletionGateError: a completion gate is not met (seed 000 §8.2); Gate
// names it.
type CompletionGateError struct {
	Gate   string `json:"gate"`
	Reason string `json:"reason"`
}

func (e *CompletionGateError) Error() string {
	return fmt.Sprintf("completion gate %s not met: %s", e.Gate, e.Reason)
}

// --- terminal: failed path (nothing in MAAS needs an operator).

// GuardrailError: a first-run guardrail refused the onboarding (seed 000
// §6): site disabled, probe unhealthy, credentials missing, profile or SKU
// inactive, bad policy.
type GuardrailError struct {
	Check  string `json:"check"`
	Reason string `json:"reason"`
}

func (e *GuardrailError) Error() string {
	return fmt.Sprintf("guardrail %s: %s", e.Check, e.Reason)
}

// SiteCredentialsError: the site's credentials are missing or unusable.
type SiteCredentialsError struct {
	SiteID string `json:"site_id"`
	Reason string `json:"reason"`
}

func (e *SiteCredentialsError) Error() string {
	return fmt.Sprintf("credentials of site %s: %s", e.SiteID, e.Reason)
}

// RecordNotFoundError: a record the activity needs does not exist.
type RecordNotFoundError struct {
	Kind string `json:"kind"`
	ID   string `json:"id"`
}

func (e *RecordNotFoundError) Error() string {
	return fmt.Sprintf("read model %s %s not found", e.Kind, e.ID)
}

// StaleAttemptError: the onboarding moved on to another attempt; this
// execution must stop without touching it.
type StaleAttemptError struct {
	OnboardingID string `json:"onboarding_id"`
	Attempt      int    `json:"attempt"`
	Current      int    `json:"current"`
}

func (e *StaleAttemptError) Error() string {
	return fmt.Sprintf("onboarding %s is on attempt %d, not %d", e.OnboardingID, e.Current, e.Attempt)
}

// OnboardingClosedError: the onboarding is no longer running (completed,
// failed, cancelled or waiting for an operator).
type OnboardingClosedError struct {
	OnboardingID string `json:"onboarding_id"`
	Status       string `json:"status"`
}

func (e *OnboardingClosedError) Error() string {
	return fmt.Sprintf("onboarding %s is %s", e.OnboardingID, e.Status)
}

// StageConflictError: the onboarding is in a stage this activity does not
// move from (the conditional stage transition refused it).
type StageConflictError struct {
	Activity string   `json:"activity"`
	Stage    string   `json:"stage"`
	Expected []string `json:"expected"`
}

func (e *StageConflictError) Error() string {
	return fmt.Sprintf("%s cannot run from stage %q (expected one of %s)", e.Activity, e.Stage, strings.Join(e.Expected, ", "))
}

// InvalidInputError: the activity's input is malformed (a bug in the state
// machine or a hand-made execution).
type InvalidInputError struct {
	Field  string `json:"field"`
	Reason string `json:"reason"`
}

func (e *InvalidInputError) Error() string {
	return fmt.Sprintf("invalid input %s: %s", e.Field, e.Reason)
}

// ActivityFailedError is the catch-all: anything the activity did not
// classify. Terminal; the failed path records it.
type ActivityFailedError struct {
	Activity string `json:"activity"`
	Message  string `json:"message"`
}

func (e *ActivityFailedError) Error() string {
	return fmt.Sprintf("%s failed: %s", e.Activity, e.Message)
}

func (*RecordConflictError) activityError()         {}
func (*StoreUnavailableError) activityError()       {}
func (*SecretsUnavailableError) activityError()     {}
func (*EventPublishError) activityError()           {}
func (*EnrollmentCompletionError) activityError()   {}
func (*AmbiguousMachineMatchError) activityError()  {}
func (*MachineClaimNotAllowedError) activityError() {}
func (*MachineStateUnsafeError) activityError()     {}
func (*MachineWaitTimeoutError) activityError()     {}
func (*PXEPreflightError) activityError()           {}
func (*RoCEAssignmentError) activityError()         {}
func (*PredeployCheckError) activityError()         {}
func (*PayloadRenderError) activityError()          {}
func (*TokenPersistenceError) activityError()       {}
func (*MachineNotDeployableError) activityError()   {}
func (*CompletionGateError) activityError()         {}
func (*GuardrailError) activityError()              {}
func (*SiteCredentialsError) activityError()        {}
func (*RecordNotFoundError) activityError()         {}
func (*StaleAttemptError) activityError()           {}
func (*OnboardingClosedError) activityError()       {}
func (*StageConflictError) activityError()          {}
func (*InvalidInputError) activityError()           {}
func (*ActivityFailedError) activityError()         {}

// Workflow codes: error names the state machine itself writes (Pass states
// that turn a "failed" poll outcome or a States.Timeout into the error that
// FinishOnboarding records). They are not Go errors.
const (
	// CodeCommissioningFailed: the machine failed commissioning or testing
	// while the workflow waited for Ready.
	CodeCommissioningFailed = "MachineCommissioningFailed"
	// CodeDeployFailed: a deploy failed and was not retried (not a
	// datasource failure, or the retries are spent).
	CodeDeployFailed = "DeployFailed"
	// CodeDeployRecoveryFailed: the machine did not return to Ready or
	// Allocated after abort/release.
	CodeDeployRecoveryFailed = "DeployRecoveryFailed"
	// CodeEnrollmentTimeout: the node did not enroll within the policy's
	// enrollment timeout.
	CodeEnrollmentTimeout = "EnrollmentTimeout"
)

// ErrorClass says where the state machine routes an error name.
type ErrorClass string

// Error classes.
const (
	ErrorRetryable          ErrorClass = "retryable"
	ErrorManualIntervention ErrorClass = "manual_intervention"
	ErrorFailed             ErrorClass = "failed"
)

// errorRoutes is the contract between the activities and the state
// machine: every error name an activity can return, with where the ASL
// routes it. The MAAS client's types pass the boundary unchanged.
// Retryable names are also routed to manual intervention once their
// retries are spent (the machine may be mid-flight). asl_contract_test.go
// checks it against the ASL and the declared types.
var errorRoutes = map[string]ErrorClass{
	"RecordConflictError":       ErrorRetryable,
	"StoreUnavailableError":     ErrorRetryable,
	"SecretsUnavailableError":   ErrorRetryable,
	"EventPublishError":         ErrorRetryable,
	"EnrollmentCompletionError": ErrorRetryable,
	"MAASUnavailableError":      ErrorRetryable, // maas: 5xx, 409 with Retry-After
	"MAASTimeoutError":          ErrorRetryable, // maas: deadline
	"MAASTransportError":        ErrorRetryable, // maas: no connection

	"AmbiguousMachineMatchError":  ErrorManualIntervention,
	"MachineClaimNotAllowedError": ErrorManualIntervention,
	"MachineStateUnsafeError":     ErrorManualIntervention,
	"MachineWaitTimeoutError":     ErrorManualIntervention,
	"PXEPreflightError":           ErrorManualIntervention,
	"RoCEAssignmentError":         ErrorManualIntervention,
	"PredeployCheckError":         ErrorManualIntervention,
	"PayloadRenderError":          ErrorManualIntervention,
	"TokenPersistenceError":       ErrorManualIntervention,
	"MachineNotDeployableError":   ErrorManualIntervention,
	"CompletionGateError":         ErrorManualIntervention,
	"MAASBadRequestError":         ErrorManualIntervention, // maas 400
	"MAASConflictError":           ErrorManualIntervention, // maas 409 state conflict
	"MAASForbiddenError":          ErrorManualIntervention, // maas 403 (locked, not owner)
	"MAASNotFoundError":           ErrorManualIntervention, // maas 404 (machine deleted)
	"MAASUnauthorizedError":       ErrorManualIntervention, // maas 401 (key revoked)
	"MAASUnexpectedResponseError": ErrorManualIntervention, // maas: proxy page, wrong URL

	"GuardrailError":        ErrorFailed,
	"SiteCredentialsError":  ErrorFailed,
	"RecordNotFoundError":   ErrorFailed,
	"StaleAttemptError":     ErrorFailed,
	"OnboardingClosedError": ErrorFailed,
	"StageConflictError":    ErrorFailed,
	"InvalidInputError":     ErrorFailed,
	"ActivityFailedError":   ErrorFailed,
}

// ErrorRoute says how the state machine treats an error name; ok is false
// for a name no activity returns.
func ErrorRoute(name string) (class ErrorClass, ok bool) {
	class, ok = errorRoutes[name]
	return class, ok
}

// WorkflowCodes are the error names the state machine writes itself.
func WorkflowCodes() []string {
	return []string{CodeCommissioningFailed, CodeDeployFailed, CodeDeployRecoveryFailed, CodeEnrollmentTimeout}
}

// boundary turns whatever an activity produced into an error whose type
// name the state machine knows: declared types and the MAAS client's typed
// errors pass unchanged (unwrapped, so aws-lambda-go sees their type), a
// MAAS 409 carrying Retry-After (a database conflict inside MAAS, the one
// 409 worth retrying, maas-behaviour §3) becomes UnavailableError, a cancelled or
// expired context is a StoreUnavailableError-like retryable timeout, and
// anything else is ActivityFailedError.
func boundary(activity string, err error) error {
	if err == nil {
		return nil
	}
	var typed activityError
	if errors.As(err, &typed) {
		return typed
	}
	var (
		unavailable *maas.MAASUnavailableError
		timeout     *maas.MAASTimeoutError
		transport   *maas.MAASTransportError
		conflict    *maas.MAASConflictError
		badRequest  *maas.MAASBadRequestError
		forbidden   *maas.MAASForbiddenError
		notFound    *maas.MAASNotFoundError
		unauth      *maas.MAASUnauthorizedError
		unexpected  *maas.MAASUnexpectedResponseError
	)
	switch {
	case errors.As(err, &unavailable):
		return unavailable
	case errors.As(err, &timeout):
		return timeout
	case errors.As(err, &transport):
		return transport
	case errors.As(err, &conflict):
		if conflict.RetryAfter > 0 {
			return &maas.MAASUnavailableError{Op: conflict.Op, SystemID: conflict.SystemID, StatusCode: 409, Message: conflict.Message, RetryAfter: conflict.RetryAfter}
		}
		return conflict
	case errors.As(err, &badRequest):
		return badRequest
	case errors.As(err, &forbidden):
		return forbidden
	case errors.As(err, &notFound):
		return notFound
	case errors.As(err, &unauth):
		return unauth
	case errors.As(err, &unexpected):
		return unexpected
	case errors.Is(err, context.DeadlineExceeded):
		return &maas.MAASTimeoutError{Op: activity}
	}
	return &ActivityFailedError{Activity: activity, Message: err.Error()}
}

// classOf returns how the state machine treats err (after boundary).
func classOf(err error) ErrorClass {
	if err == nil {
		return ""
	}
	name := errorName(err)
	if c, ok := errorRoutes[name]; ok {
		return c
	}
	return ErrorFailed
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
