package domain

import "time"

// SKUProposal is a pending change of an SKU's active flag (requirements:
// SKU catalog governance): one admin proposes, a different admin approves,
// and only the approval changes the SKU. At most one is pending per SKU.
type SKUProposal struct {
	ID string `json:"id" dynamodbav:"id"`
	// Active is the value the SKU takes when the proposal is approved.
	Active     bool      `json:"active" dynamodbav:"active"`
	ProposedBy string    `json:"proposed_by" dynamodbav:"proposed_by"`
	ProposedAt time.Time `json:"proposed_at" dynamodbav:"proposed_at"`
	Reason     string    `json:"reason,omitempty" dynamodbav:"reason,omitempty"`
	// RollbackNote says how to undo a deactivation of an SKU in use; it
	// is required when AffectedNodes is not empty.
	RollbackNote string `json:"rollback_note,omitempty" dynamodbav:"rollback_note,omitempty"`
	// AffectedNodes are the ids of the SKU's nodes in service (onboarding,
	// active, decommissioning) when a deactivation was proposed: the
	// impact an approver reviews. AffectedCount counts them all when the
	// list is cut at MaxAffectedListed.
	AffectedNodes []string `json:"affected_nodes,omitempty" dynamodbav:"affected_nodes,omitempty"`
	AffectedCount int      `json:"affected_count" dynamodbav:"affected_count"`
}

// MaxAffectedListed bounds the node ids a proposal lists.
const MaxAffectedListed = 100

// SKUDecision is the last decided proposal of an SKU: who approved or
// rejected what who proposed.
type SKUDecision struct {
	SKUProposal
	Outcome   string    `json:"outcome" dynamodbav:"outcome"` // approved or rejected
	DecidedBy string    `json:"decided_by" dynamodbav:"decided_by"`
	DecidedAt time.Time `json:"decided_at" dynamodbav:"decided_at"`
}

// SKU proposal outcomes.
const (
	ProposalApproved = "approved"
	ProposalRejected = "rejected"
)

// InService reports whether a node of this status is in service, so that
// deactivating its SKU affects it.
func InService(nodeStatus string) bool {
	switch nodeStatus {
	case NodeOnboarding, NodeActive, NodeDecommissioning:
		return true
	}
	return false
}
