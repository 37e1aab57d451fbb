package onboarding

import (
	"fmt"
	"maps"
	"strings"

	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/domain"
)

// The error types only the onboarding's activities return; the ones both
// workflows share are the parent package's (activities/errors.go, whose
// comment says how to add one). Each Go type name is the error name the
// state machine matches.

// --- retryable.

// EnrollmentCompletionError: completing the enrollment wait's task token
// failed. Retryable.
type EnrollmentCompletionError struct {
	Message string `json:"message"`
}

func (e *EnrollmentCompletionError) Error() string {
	return "complete the enrollment wait: " + e.Message
}

// --- needs an operator: manual intervention.

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

// MachineWaitTimeoutError: a wait for a MAAS status ran past its bound.
type MachineWaitTimeoutError struct {
	SystemID      string                `json:"system_id"`
	Target        activities.PollTarget `json:"target"`
	Status        string                `json:"status"`
	WaitedSeconds int                   `json:"waited_seconds"`
	LimitSeconds  int                   `json:"limit_seconds"`
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

// --- terminal: the failed path.

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

func (*EnrollmentCompletionError) Class() domain.ErrorClass   { return domain.ErrorRetryable }
func (*AmbiguousMachineMatchError) Class() domain.ErrorClass  { return domain.ErrorNeedsOperator }
func (*MachineClaimNotAllowedError) Class() domain.ErrorClass { return domain.ErrorNeedsOperator }
func (*MachineWaitTimeoutError) Class() domain.ErrorClass     { return domain.ErrorNeedsOperator }
func (*PXEPreflightError) Class() domain.ErrorClass           { return domain.ErrorNeedsOperator }
func (*RoCEAssignmentError) Class() domain.ErrorClass         { return domain.ErrorNeedsOperator }
func (*PredeployCheckError) Class() domain.ErrorClass         { return domain.ErrorNeedsOperator }
func (*PayloadRenderError) Class() domain.ErrorClass          { return domain.ErrorNeedsOperator }
func (*TokenPersistenceError) Class() domain.ErrorClass       { return domain.ErrorNeedsOperator }
func (*MachineNotDeployableError) Class() domain.ErrorClass   { return domain.ErrorNeedsOperator }
func (*CompletionGateError) Class() domain.ErrorClass         { return domain.ErrorNeedsOperator }
func (*GuardrailError) Class() domain.ErrorClass              { return domain.ErrorTerminal }
func (*StaleAttemptError) Class() domain.ErrorClass           { return domain.ErrorTerminal }
func (*OnboardingClosedError) Class() domain.ErrorClass       { return domain.ErrorTerminal }
func (*MachineNotRecordedError) Class() domain.ErrorClass     { return domain.ErrorTerminal }

// vocabulary holds one value of every error type only the onboarding's
// activities declare; the shared ones are the parent package's.
var vocabulary = []domain.ClassifiedError{
	(*EnrollmentCompletionError)(nil),
	(*AmbiguousMachineMatchError)(nil),
	(*MachineClaimNotAllowedError)(nil),
	(*MachineWaitTimeoutError)(nil),
	(*PXEPreflightError)(nil),
	(*RoCEAssignmentError)(nil),
	(*PredeployCheckError)(nil),
	(*PayloadRenderError)(nil),
	(*TokenPersistenceError)(nil),
	(*MachineNotDeployableError)(nil),
	(*CompletionGateError)(nil),
	(*GuardrailError)(nil),
	(*StaleAttemptError)(nil),
	(*OnboardingClosedError)(nil),
	(*MachineNotRecordedError)(nil),
	(*HardwareMismatchError)(nil),
	(*MachineDesignError)(nil),
	(*NetworkDriverError)(nil),
	(*AdoptionRefusedError)(nil),
}

// errorRoutes is every error name an onboarding activity can return, with
// its class: the shared vocabulary and the onboarding's own. The contract
// tests check it against the declared types and the ASL.
var errorRoutes = activities.ErrorRoutes(vocabulary...)

// ErrorRoutes is every error name an onboarding activity can return, with
// its class (a copy of errorRoutes).
func ErrorRoutes() map[string]domain.ErrorClass { return maps.Clone(errorRoutes) }
