package domain

import "time"

// MaxBatchNodes is the most nodes one batch onboarding takes: a rack or
// two, and small enough that the batch record stays one DynamoDB item.
const MaxBatchNodes = 500

// BatchItemRejected is the status of a batch row whose onboarding could not
// start (its host has an open onboarding, its node is active, …); the row's
// Error says why and the other rows start regardless.
const BatchItemRejected = "rejected"

// Batch is a set of onboardings started together with one site, profile
// and SKU (requirements API boundary §4.3). Its progress is read from its onboardings; the
// record holds what was asked and what each row became.
type Batch struct {
	ID        string      `json:"id" dynamodbav:"id"`
	SiteID    string      `json:"site_id" dynamodbav:"site_id"`
	ProfileID string      `json:"profile_id" dynamodbav:"profile_id"`
	SKUID     string      `json:"sku_id" dynamodbav:"sku_id"`
	Items     []BatchItem `json:"items" dynamodbav:"items"`
	CreatedBy string      `json:"created_by" dynamodbav:"created_by"`
	CreatedAt time.Time   `json:"created_at" dynamodbav:"created_at"`
	UpdatedAt time.Time   `json:"updated_at" dynamodbav:"updated_at"`
	Version   int64       `json:"-" dynamodbav:"version"`
}

// BatchItem is one row of a batch: the node asked for and the onboarding
// started for it, or why none was.
type BatchItem struct {
	Hostname     string   `json:"hostname" dynamodbav:"hostname"`
	IPMIIP       string   `json:"ipmi_ip" dynamodbav:"ipmi_ip"`
	OnboardingID string   `json:"onboarding_id" dynamodbav:"onboarding_id"`
	Error        *Failure `json:"error,omitempty" dynamodbav:"error,omitempty"`
}

// Batch statuses, derived from its onboardings' statuses.
const (
	BatchRunning            = "running"
	BatchManualIntervention = "manual_intervention"
	BatchCompleted          = "completed"
	BatchFailed             = "failed"
)

// BatchStatus derives a batch's status from its rows' statuses: running
// while a row is pending or running; then manual_intervention when a row
// waits for an operator; completed when every row completed; else failed
// (some row failed, was cancelled or never started).
func BatchStatus(statuses []string) string {
	manual, allDone := false, len(statuses) > 0
	for _, s := range statuses {
		switch OnboardingStatus(s) {
		case OnboardingPending, OnboardingRunning:
			return BatchRunning
		case OnboardingManualIntervention:
			manual = true
		}
		allDone = allDone && OnboardingStatus(s) == OnboardingCompleted
	}
	switch {
	case manual:
		return BatchManualIntervention
	case allDone:
		return BatchCompleted
	}
	return BatchFailed
}
