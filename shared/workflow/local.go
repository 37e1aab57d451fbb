package workflow

import (
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/run"
)

// LocalEngine is the part of the embedded ASL runtime (shared/asl) Local
// calls.
type LocalEngine = run.Runtime

// Local starts onboardings on the embedded ASL runtime: Onboardings over
// run.Local.
type Local = Onboardings

// NewLocal returns a Local that starts executions of the onboarding state
// machine registered under onboardingARN. Starting an attempt that is
// already running fails with the runtime's duplicate-name error; a stop
// returns once the execution has unwound.
func NewLocal(engine LocalEngine, onboardingARN string) *Local {
	return newOnboardings(run.Local{Runtime: engine}, onboardingARN)
}

// onboardingWorkflow is the onboarding workflow as the run frame starts it.
var onboardingWorkflow = run.Workflow[domain.Onboarding, domain.Stage]{
	Kind: "onboarding",
	Run:  func(o domain.Onboarding) (string, int, int) { return o.ID, o.Attempt, o.Run },
	Input: func(o domain.Onboarding, start domain.Stage) any {
		in := NewOnboardingInput(o)
		in.StartStage = start
		return in
	},
	StopError: CancelledErrorName,
}
