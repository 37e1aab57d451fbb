package localstack

import (
	"context"
	"fmt"

	"github.com/maasflow/maasflow/shared/asl"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/workflow"
	"github.com/maasflow/maasflow/statemachines"
)

// registerDecommission loads the decommission state machine on the engine
// with the same function substitutions as the onboarding.
func (s *Stack) registerDecommission(subs map[string]string) (*workflow.LocalDecommissions, error) {
	sm, err := asl.Parse(statemachines.Decommission, subs)
	if err != nil {
		return nil, fmt.Errorf("load decommission state machine: %w", err)
	}
	arn, err := s.Engine.CreateStateMachine("decommission", sm)
	if err != nil {
		return nil, fmt.Errorf("create decommission state machine: %w", err)
	}
	s.decommissionARN = arn
	return workflow.NewLocalDecommissions(s.Engine, arn), nil
}

// onboardingStarterRef lets the reimage activity start onboardings on the
// state machine registered after the activities were built.
type onboardingStarterRef struct{ *workflow.Local }

func (r *onboardingStarterRef) StartOnboarding(ctx context.Context, o domain.Onboarding) (string, error) {
	if r.Local == nil {
		return "", fmt.Errorf("the onboarding state machine is not registered yet")
	}
	return r.Local.StartOnboarding(ctx, o)
}
