package activities

import (
	"fmt"
	"strings"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
)

// The errors below are the activities' vocabulary. Each Go type name is the
// error name statemachines/onboarding.asl.json matches (aws-lambda-go
// reports the bare type name), so names are unique across the module
// (errornames_test.go) and messages are lower-case, name their fields and
// never hold a secret. Each type says its class (domain.ErrorClass) with a
// Class method; the state machine's Retry and Catch lists are checked
// against it (asl_contract_test.go). To add one: declare it here with its
// Class, list it in vocabulary, and name it in the ASL where it can occur.
//
// Three outcomes (style §3): waiting is output, never an error; retryable
// errors are Retry'd by the ASL; the others are Caught into manual
// intervention (needs an operator) or the failed path (terminal).

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

// --- needs an operator: manual intervention (the machine needs an operator).

// AmbiguousMachineMatchError: more than one MAAS machine matched, or the
// rules disagree; nothing was changed in MAAS (requirements readiness §4.1 fail closed).
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
	SystemID      string     `json:"system_id"`
	Target        PollTarget `json:"target"`
	Status        string     `json:"status"`
	WaitedSeconds int        `json:"waited_seconds"`
	LimitSeconds  int        `json:"limit_seconds"`
}

func (e *MachineWaitTimeoutError) Error() string {
	return fmt.Sprintf("machine %s still %s after %ds waiting for %s (limit %ds)", e.SystemID, e.Status, e.WaitedSeconds, e.Target, e.LimitSeconds)
}

// PXEPreflightError: the boot interface cannot be made deploy-safe (no
// VLAN, no subnet, no gateway, no DHCP); nothing was deployed (requirements readiness
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

// PredeployCheckError: a pre-deploy hardening check failed (requirements readiness §8.1);
// Check names it.
type PredeployCheckError struct {
	Check  string `json:"check"`
	Reason string `json:"reason"`
}

func (e *PredeployCheckError) Error() string {
	return fmt.Sprintf("pre-deploy check %s failed: %s", e.Check, e.Reason)
}

// PayloadRenderError: a part of the first-boot payload could not be
// rendered; Part and Version say which (requirements readiness §3.4).
type PayloadRenderError struct {
	Part    string `json:"part"`
	Version string `json:"version"`
	Reason  string `json:"reason"`
}

func (e *PayloadRenderError) Error() string {
	return fmt.Sprintf("render %s %s: %s", e.Part, e.Version, e.Reason)
}

// TokenPersistenceError: the enrollment token's stored side did not read
// back consistent, so the node could not enroll (requirements readiness §8.1, §8.5).
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

// CompletionGateError: a completion gate is not met (requirements readiness §8.2); Gate
// names it.
type CompletionGateError struct {
	Gate   string `json:"gate"`
	Reason string `json:"reason"`
}

func (e *CompletionGateError) Error() string {
	return fmt.Sprintf("completion gate %s not met: %s", e.Gate, e.Reason)
}

// --- terminal: the failed path (nothing in MAAS needs an operator).

// GuardrailError: a first-run guardrail refused the onboarding (requirements readiness
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
	Run          int    `json:"run"`
	Current      int    `json:"current"`
	CurrentRun   int    `json:"current_run"`
}

func (e *StaleAttemptError) Error() string {
	return fmt.Sprintf("onboarding %s is on attempt %d run %d, not attempt %d run %d",
		e.OnboardingID, e.Current, e.CurrentRun, e.Attempt, e.Run)
}

// OnboardingClosedError: the onboarding is no longer running (completed,
// failed, cancelled or waiting for an operator).
type OnboardingClosedError struct {
	OnboardingID string                  `json:"onboarding_id"`
	Status       domain.OnboardingStatus `json:"status"`
}

func (e *OnboardingClosedError) Error() string {
	return fmt.Sprintf("onboarding %s is %s", e.OnboardingID, e.Status)
}

// MachineNotRecordedError: the activity needs the onboarding's MAAS
// machine, and the onboarding records none (discovery has not run for it).
type MachineNotRecordedError struct {
	OnboardingID string `json:"onboarding_id"`
	Activity     string `json:"activity"`
}

func (e *MachineNotRecordedError) Error() string {
	return fmt.Sprintf("%s needs a MAAS machine and onboarding %s records none: discovery has not run", e.Activity, e.OnboardingID)
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

// Classes of the types above.
func (*RecordConflictError) Class() domain.ErrorClass       { return domain.ErrorRetryable }
func (*StoreUnavailableError) Class() domain.ErrorClass     { return domain.ErrorRetryable }
func (*SecretsUnavailableError) Class() domain.ErrorClass   { return domain.ErrorRetryable }
func (*EventPublishError) Class() domain.ErrorClass         { return domain.ErrorRetryable }
func (*EnrollmentCompletionError) Class() domain.ErrorClass { return domain.ErrorRetryable }

func (*AmbiguousMachineMatchError) Class() domain.ErrorClass  { return domain.ErrorNeedsOperator }
func (*MachineClaimNotAllowedError) Class() domain.ErrorClass { return domain.ErrorNeedsOperator }
func (*MachineStateUnsafeError) Class() domain.ErrorClass     { return domain.ErrorNeedsOperator }
func (*MachineWaitTimeoutError) Class() domain.ErrorClass     { return domain.ErrorNeedsOperator }
func (*PXEPreflightError) Class() domain.ErrorClass           { return domain.ErrorNeedsOperator }
func (*RoCEAssignmentError) Class() domain.ErrorClass         { return domain.ErrorNeedsOperator }
func (*PredeployCheckError) Class() domain.ErrorClass         { return domain.ErrorNeedsOperator }
func (*PayloadRenderError) Class() domain.ErrorClass          { return domain.ErrorNeedsOperator }
func (*TokenPersistenceError) Class() domain.ErrorClass       { return domain.ErrorNeedsOperator }
func (*MachineNotDeployableError) Class() domain.ErrorClass   { return domain.ErrorNeedsOperator }
func (*CompletionGateError) Class() domain.ErrorClass         { return domain.ErrorNeedsOperator }

func (*GuardrailError) Class() domain.ErrorClass          { return domain.ErrorTerminal }
func (*SiteCredentialsError) Class() domain.ErrorClass    { return domain.ErrorTerminal }
func (*RecordNotFoundError) Class() domain.ErrorClass     { return domain.ErrorTerminal }
func (*StaleAttemptError) Class() domain.ErrorClass       { return domain.ErrorTerminal }
func (*OnboardingClosedError) Class() domain.ErrorClass   { return domain.ErrorTerminal }
func (*MachineNotRecordedError) Class() domain.ErrorClass { return domain.ErrorTerminal }
func (*InvalidInputError) Class() domain.ErrorClass       { return domain.ErrorTerminal }
func (*ActivityFailedError) Class() domain.ErrorClass     { return domain.ErrorTerminal }

// vocabulary holds one value of every error type an activity returns, its
// own and the MAAS client's: the routing table is built from it, and the
// tests check it against the declared types and the ASL.
var vocabulary = []domain.ClassifiedError{
	(*RecordConflictError)(nil),
	(*StoreUnavailableError)(nil),
	(*SecretsUnavailableError)(nil),
	(*EventPublishError)(nil),
	(*EnrollmentCompletionError)(nil),
	(*AmbiguousMachineMatchError)(nil),
	(*MachineClaimNotAllowedError)(nil),
	(*MachineStateUnsafeError)(nil),
	(*MachineWaitTimeoutError)(nil),
	(*PXEPreflightError)(nil),
	(*HardwareMismatchError)(nil),
	(*MachineDesignError)(nil),
	(*NetworkDriverError)(nil),
	(*RoCEAssignmentError)(nil),
	(*PredeployCheckError)(nil),
	(*PayloadRenderError)(nil),
	(*TokenPersistenceError)(nil),
	(*MachineNotDeployableError)(nil),
	(*CompletionGateError)(nil),
	(*AdoptionRefusedError)(nil),
	(*GuardrailError)(nil),
	(*SiteCredentialsError)(nil),
	(*RecordNotFoundError)(nil),
	(*StaleAttemptError)(nil),
	(*OnboardingClosedError)(nil),
	(*MachineNotRecordedError)(nil),
	(*InvalidInputError)(nil),
	(*ActivityFailedError)(nil),
	(*AllocationUnavailableError)(nil),
	(*ReimageStartError)(nil),
	(*AllocationRefusedError)(nil),
	(*DrainFailedError)(nil),
	(*DrainTimeoutError)(nil),
	(*DecommissionClosedError)(nil),
	(*NodeNotDecommissionableError)(nil),
	(*maas.MAASUnavailableError)(nil),
	(*maas.MAASTimeoutError)(nil),
	(*maas.MAASTransportError)(nil),
	(*maas.MAASBadRequestError)(nil),
	(*maas.MAASConflictError)(nil),
	(*maas.MAASForbiddenError)(nil),
	(*maas.MAASNotFoundError)(nil),
	(*maas.MAASUnauthorizedError)(nil),
	(*maas.MAASUnexpectedResponseError)(nil),
	(*maas.InterfaceOpError)(nil),
}

// Workflow codes: error names the state machine itself writes (Pass states
// that turn a "failed" poll outcome or a States.Timeout into the error that
// FinishOnboarding records, or that refuse the input). They are not Go
// errors.
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
	// CodeInvalidStartStage: the execution input's start_stage names no
	// stage a run can enter at.
	CodeInvalidStartStage = "InvalidStartStage"
	// CodeMachineNeverBooted: the machine did not boot for commissioning,
	// not even after the power cycle.
	CodeMachineNeverBooted = "MachineNeverBooted"
	// CodeMachineResetFailed: restart-clean's release did not bring the
	// machine back to Ready.
	CodeMachineResetFailed = "MachineResetFailed"
)
