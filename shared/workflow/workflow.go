package workflow

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/maasflow/maasflow/shared/domain"
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
	return runName("onboarding", o.ID, o.Attempt, o.Run)
}

// executionARN is the ARN of the execution named name of the state
// machine stateMachineARN: a Standard execution's ARN is its state
// machine's with "execution" for "stateMachine" and the name appended, on
// Step Functions and on the embedded runtime alike.
func executionARN(stateMachineARN, name string) string {
	return strings.Replace(stateMachineARN, ":stateMachine:", ":execution:", 1) + ":" + name
}

// runName is "<kind>-<id>-<attempt>", with "-r<run>" after it from the
// second run of an attempt on. Names stay within Step Functions' 80
// characters for the ids the API accepts.
func runName(kind, id string, attempt, run int) string {
	if run == 0 {
		return fmt.Sprintf("%s-%s-%d", kind, id, attempt)
	}
	return fmt.Sprintf("%s-%s-%d-r%d", kind, id, attempt, run)
}

func marshalInput(o domain.Onboarding, start domain.Stage) ([]byte, error) {
	in := NewOnboardingInput(o)
	in.StartStage = start
	b, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("marshal onboarding input: %w", err)
	}
	return b, nil
}
