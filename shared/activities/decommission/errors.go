package decommission

import (
	"fmt"

	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/domain"
)

// The decommission activities' own errors. Like every activity error, the
// type name is the ASL error name and is unique across the module.

// AllocationUnavailableError: the allocation service could not be reached
// or answered 5xx. Retryable.
type AllocationUnavailableError struct {
	Op      string `json:"op"`
	Message string `json:"message"`
}

func (e *AllocationUnavailableError) Error() string {
	return fmt.Sprintf("allocation service unavailable: %s: %s", e.Op, e.Message)
}

// AllocationRefusedError: the allocation service refused a request (a
// contract or configuration problem). Needs an operator.
type AllocationRefusedError struct {
	Op      string `json:"op"`
	Message string `json:"message"`
}

func (e *AllocationRefusedError) Error() string {
	return fmt.Sprintf("allocation service refused %s: %s", e.Op, e.Message)
}

// DrainFailedError: an allocation of the node could not be released
// (release_failed); the machine was not touched. Needs an operator.
type DrainFailedError struct {
	NodeID       string `json:"node_id"`
	AllocationID string `json:"allocation_id"`
	State        string `json:"state"`
}

func (e *DrainFailedError) Error() string {
	return fmt.Sprintf("allocation %s of node %s is %s: the drain cannot finish", e.AllocationID, e.NodeID, e.State)
}

// DrainTimeoutError: the node's allocations were not all released within
// the policy's drain bound. Needs an operator.
type DrainTimeoutError struct {
	NodeID        string   `json:"node_id"`
	Pending       []string `json:"pending"`
	WaitedSeconds int      `json:"waited_seconds"`
	LimitSeconds  int      `json:"limit_seconds"`
}

func (e *DrainTimeoutError) Error() string {
	return fmt.Sprintf("node %s still has %d allocation(s) not released after %ds (limit %ds)", e.NodeID, len(e.Pending), e.WaitedSeconds, e.LimitSeconds)
}

// DecommissionClosedError: the decommission is no longer running, or
// another attempt owns it; this execution must stop without touching it.
type DecommissionClosedError struct {
	DecommissionID string `json:"decommission_id"`
	Status         string `json:"status"`
	Attempt        int    `json:"attempt"`
	Current        int    `json:"current"`
}

func (e *DecommissionClosedError) Error() string {
	if e.Attempt != e.Current {
		return fmt.Sprintf("decommission %s is on attempt %d, not %d", e.DecommissionID, e.Current, e.Attempt)
	}
	return fmt.Sprintf("decommission %s is %s", e.DecommissionID, e.Status)
}

// NodeNotDecommissionableError: the node is in a state the decommission
// cannot start from (removed, or held by an onboarding). Failed path:
// nothing was changed.
type NodeNotDecommissionableError struct {
	NodeID string `json:"node_id"`
	Status string `json:"status"`
}

func (e *NodeNotDecommissionableError) Error() string {
	return fmt.Sprintf("node %s is %s and cannot be decommissioned", e.NodeID, e.Status)
}

// ReimageStartError: the workflow service did not start the reimage's
// onboarding. Retryable: the start is idempotent by execution name.
type ReimageStartError struct {
	OnboardingID string `json:"onboarding_id"`
	Message      string `json:"message"`
}

func (e *ReimageStartError) Error() string {
	return fmt.Sprintf("start onboarding %s: %s", e.OnboardingID, e.Message)
}

// Classes of the types above.
func (*AllocationUnavailableError) Class() domain.ErrorClass   { return domain.ErrorRetryable }
func (*ReimageStartError) Class() domain.ErrorClass            { return domain.ErrorRetryable }
func (*AllocationRefusedError) Class() domain.ErrorClass       { return domain.ErrorNeedsOperator }
func (*DrainFailedError) Class() domain.ErrorClass             { return domain.ErrorNeedsOperator }
func (*DrainTimeoutError) Class() domain.ErrorClass            { return domain.ErrorNeedsOperator }
func (*DecommissionClosedError) Class() domain.ErrorClass      { return domain.ErrorTerminal }
func (*NodeNotDecommissionableError) Class() domain.ErrorClass { return domain.ErrorTerminal }

// Workflow codes the decommission state machine writes itself.
const (
	// CodeEraseFailed: MAAS reported Failed disk erasing and policy does
	// not allow the release fallback.
	CodeEraseFailed = "EraseFailed"
	// CodeEraseHung: the erase stayed in Disk erasing past the policy's
	// bound and policy does not allow the release fallback.
	CodeEraseHung = "EraseHung"
	// CodeReleaseFailed: the release ended in a status other than Ready.
	CodeReleaseFailed = "ReleaseFailed"
	// CodeReimageOnboardingFailed: the reimage's onboarding did not
	// complete.
	CodeReimageOnboardingFailed = "ReimageOnboardingFailed"
)

// WorkflowCodes are the error names the decommission state machine writes
// itself (CodeInvalidStartStage shared with the onboarding's).
func WorkflowCodes() []string {
	return []string{CodeEraseFailed, CodeEraseHung, CodeReleaseFailed, CodeReimageOnboardingFailed, activities.CodeInvalidStartStage}
}

// vocabulary holds one value of every error type only the decommission's
// activities declare; the shared ones are the parent package's.
var vocabulary = []domain.ClassifiedError{
	(*AllocationUnavailableError)(nil),
	(*ReimageStartError)(nil),
	(*AllocationRefusedError)(nil),
	(*DrainFailedError)(nil),
	(*DrainTimeoutError)(nil),
	(*DecommissionClosedError)(nil),
	(*NodeNotDecommissionableError)(nil),
}

// ErrorRoutes is every error name a decommission activity can return, with
// its class: the shared vocabulary and the decommission's own. The
// contract tests check it against the declared types and the ASL.
func ErrorRoutes() map[string]domain.ErrorClass { return activities.ErrorRoutes(vocabulary...) }
