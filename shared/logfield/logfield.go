// Package logfield names the structured log keys every maasflow component
// attaches (style §5), so that one query by onboarding_id or correlation_id
// finds the admin API's, the activities' and the workflow's lines alike, and
// a log export (requirements readiness §8.4) gets the same fields from all of them.
//
// It imports nothing.
package logfield

// Log field keys.
const (
	SiteID        = "site_id"
	OnboardingID  = "onboarding_id"
	NodeID        = "node_id"
	MAASSystemID  = "maas_system_id"
	Hostname      = "hostname"
	CorrelationID = "correlation_id"
	Stage         = "stage"
	Activity      = "activity"
)
