package activities

import (
	"fmt"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
)

// The errors below are the vocabulary both workflows' activities share;
// each workflow package declares the types only it returns (onboarding's
// and decommission's errors.go) and adds them to its routing table
// (ErrorRoutes). Each Go type name is the error name the state machines
// match (aws-lambda-go reports the bare type name), so names are unique
// across the module (errornames_test.go) and messages are lower-case, name
// their fields and never hold a secret. Each type says its class
// (domain.ErrorClass) with a Class method; the state machines' Retry and
// Catch lists are checked against it (onboarding's asl_contract_test.go).
// To add one: declare it here (or in the one workflow package that
// returns it) with its Class, list it in that package's vocabulary, add it
// to statemachines/src/errors.yaml, and name it in the ASL where it can
// occur.
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

// --- needs an operator: manual intervention (the machine needs an operator).

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

// --- terminal: the failed path (nothing in MAAS needs an operator).

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
func (*RecordConflictError) Class() domain.ErrorClass     { return domain.ErrorRetryable }
func (*StoreUnavailableError) Class() domain.ErrorClass   { return domain.ErrorRetryable }
func (*SecretsUnavailableError) Class() domain.ErrorClass { return domain.ErrorRetryable }
func (*EventPublishError) Class() domain.ErrorClass       { return domain.ErrorRetryable }

func (*MachineStateUnsafeError) Class() domain.ErrorClass { return domain.ErrorNeedsOperator }

func (*SiteCredentialsError) Class() domain.ErrorClass { return domain.ErrorTerminal }
func (*RecordNotFoundError) Class() domain.ErrorClass  { return domain.ErrorTerminal }
func (*InvalidInputError) Class() domain.ErrorClass    { return domain.ErrorTerminal }
func (*ActivityFailedError) Class() domain.ErrorClass  { return domain.ErrorTerminal }

// vocabulary holds one value of every error type the activities of both
// workflows return, their own and the MAAS client's; a workflow package
// adds the types only it declares (ErrorRoutes). The routing table is
// built from it, and the tests check it against the declared types and
// the ASL.
var vocabulary = []domain.ClassifiedError{
	(*RecordConflictError)(nil),
	(*StoreUnavailableError)(nil),
	(*SecretsUnavailableError)(nil),
	(*EventPublishError)(nil),
	(*MachineStateUnsafeError)(nil),
	(*SiteCredentialsError)(nil),
	(*RecordNotFoundError)(nil),
	(*InvalidInputError)(nil),
	(*ActivityFailedError)(nil),
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
