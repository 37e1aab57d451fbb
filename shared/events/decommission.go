package events

import "time"

// DecommissionDetail is the detail of every node.decommission.* event.
// The first eight fields are required by every schema; Error is allowed
// only on failed and manual_intervention_required, Erase and
// OnboardingID only where the schema lists them.
type DecommissionDetail struct {
	SiteID         string       `json:"site_id"`
	DecommissionID string       `json:"decommission_id"`
	NodeID         string       `json:"node_id"`
	MAASSystemID   string       `json:"maas_system_id"`
	Hostname       string       `json:"hostname"`
	Mode           string       `json:"mode"`
	CorrelationID  string       `json:"correlation_id"`
	Attempt        int          `json:"attempt"`
	Status         string       `json:"status,omitempty"`
	Stage          string       `json:"stage,omitempty"`
	EraseOutcome   string       `json:"erase_outcome,omitempty"`
	OnboardingID   string       `json:"onboarding_id,omitempty"`
	Error          *ErrorDetail `json:"error,omitempty"`
	OccurredAt     time.Time    `json:"occurred_at"`
}
