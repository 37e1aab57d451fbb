package workflow

import (
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/run"
)

// CancelledErrorName is the error an onboarding execution stopped by an
// operator's cancel ends with (ABORTED, error OnboardingCancelled), in the
// execution history of both runtimes.
const CancelledErrorName = "OnboardingCancelled"

// OnboardingInput is the onboarding state machine's execution input. The
// activities read everything else from the read model, so the input stays
// small and holds no secret. StartStage, when set, enters the workflow at
// that stage once the guardrails passed (the state machine's EnterAtStage
// Choice routes on it); empty starts at the beginning.
type OnboardingInput struct {
	OnboardingID  string       `json:"onboarding_id"`
	SiteID        string       `json:"site_id"`
	Hostname      string       `json:"hostname"`
	Attempt       int          `json:"attempt"`
	Run           int          `json:"run"`
	CorrelationID string       `json:"correlation_id"`
	StartStage    domain.Stage `json:"start_stage,omitempty"`
}

// NewOnboardingInput builds the execution input for an onboarding's current
// attempt.
func NewOnboardingInput(o domain.Onboarding) OnboardingInput {
	return OnboardingInput{
		OnboardingID:  o.ID,
		SiteID:        o.SiteID,
		Hostname:      o.Hostname,
		Attempt:       o.Attempt,
		Run:           o.Run,
		CorrelationID: o.CorrelationID,
	}
}

// ExecutionName names an onboarding run's execution. Step Functions refuses
// a second execution of one name, so a repeated start of the same run
// cannot run the workflow twice; a recovery operation that runs the same
// attempt again counts a new Run and so gets a new name.
func ExecutionName(o domain.Onboarding) string {
	return run.ExecutionName("onboarding", o.ID, o.Attempt, o.Run)
}
