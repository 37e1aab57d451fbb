package events

import "time"

// DriftDetected is published once for every new drift item a reconcile run
// opens (docs/reconciliation.md); its schema is
// events/node.drift.detected.schema.json.
const DriftDetected = "node.drift.detected"

// DriftDetail is the detail of node.drift.detected. DriftID is stable across
// redeliveries, so consumers de-duplicate on it.
type DriftDetail struct {
	DriftID      string    `json:"drift_id"`
	RunID        string    `json:"run_id"`
	SiteID       string    `json:"site_id"`
	NodeID       string    `json:"node_id"`
	Hostname     string    `json:"hostname"`
	MAASSystemID string    `json:"maas_system_id"`
	OnboardingID string    `json:"onboarding_id,omitempty"`
	Kind         string    `json:"kind"`
	Expected     string    `json:"expected"`
	Observed     string    `json:"observed"`
	FirstSeen    time.Time `json:"first_seen"`
	OccurredAt   time.Time `json:"occurred_at"`
}
