package onboarding_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/internal/maassim"
	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/activities/activitiestest"
	"github.com/maasflow/maasflow/shared/activities/onboarding"
	"github.com/maasflow/maasflow/shared/domain"
)

// A run records each safe checkpoint as the activity that observes it
// completes: discovery, MAAS Ready after commissioning, MAAS Deployed.
// A wait that has not seen its target yet, or saw a failure, records
// nothing.
func TestActivitiesRecordSafeCheckpoints(t *testing.T) {
	e := newEnv(t, activitiestest.Options{})
	e.addHardware("gpu-01", "10.0.0.11", "52:54:00:00:00:11", maassim.Faults{DeployOtherFailures: 1})
	o := e.f.AddOnboarding(t, "gpu-01", "10.0.0.11")
	assert.Empty(t, e.onboarding(o.ID).Checkpoint)

	e.toDiscovered(o)
	assert.Equal(t, domain.CheckpointDiscovered, e.onboarding(o.ID).Checkpoint)

	e.must("CommissionMachine", refIn{ref(o)}, nil)
	var first onboarding.CheckMachineOutput
	e.must("CheckMachine", onboarding.CheckMachineInput{OnboardingRef: ref(o), Target: activities.TargetReady, Stage: domain.StageWaitReady}, &first)
	require.Equal(t, activities.OutcomeInProgress, first.Outcome)
	assert.Equal(t, domain.CheckpointDiscovered, e.onboarding(o.ID).Checkpoint, "still commissioning")
	require.Equal(t, activities.OutcomeDone, e.poll(o, activities.TargetReady, first.Poll).Outcome)
	assert.Equal(t, domain.CheckpointCommissioned, e.onboarding(o.ID).Checkpoint)

	e.must("ConfigureStorage", refIn{ref(o)}, nil)
	e.must("PreflightPXE", refIn{ref(o)}, nil)
	e.must("CheckPredeploy", refIn{ref(o)}, nil)
	_, out := e.deploy(o)
	require.Equal(t, activities.OutcomeFailed, out.Outcome, "the first deploy fails")
	assert.Equal(t, domain.CheckpointCommissioned, e.onboarding(o.ID).Checkpoint, "a failed deploy passes no checkpoint")
}

func TestDeployedCheckpoint(t *testing.T) {
	e := newEnv(t, activitiestest.Options{})
	e.addHardware("gpu-01", "10.0.0.11", "52:54:00:00:00:11", maassim.Faults{})
	o := e.f.AddOnboarding(t, "gpu-01", "10.0.0.11")
	e.toPredeployed(o)
	_, out := e.deploy(o)
	require.Equal(t, activities.OutcomeDone, out.Outcome, out.Reason)
	assert.Equal(t, domain.CheckpointDeployed, e.onboarding(o.ID).Checkpoint)
}
