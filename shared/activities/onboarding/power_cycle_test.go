package onboarding_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/internal/maassim"
	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/activities/activitiestest"
	"github.com/maasflow/maasflow/shared/activities/onboarding"
)

type powerCycleIn struct {
	onboarding.OnboardingRef
	Reason string `json:"reason"`
}

// A host hung before PXE: the wait for Ready reports not_booted (not a
// timeout, not a failure) once MAAS has shown Commissioning with pending
// scripts for the boot deadline; PowerCycleMachine cycles it through MAAS
// and the next wait reaches Ready.
func TestHungHostIsReportedAndPowerCycled(t *testing.T) {
	e := newEnv(t, activitiestest.Options{})
	o := e.f.AddOnboarding(t, "gpu-01", "10.0.0.11")
	e.addHardware("gpu-01", "10.0.0.11", "52:54:00:00:00:11", maassim.Faults{NoBootUntilPowerCycle: true})
	e.toDiscovered(o)
	e.must("CommissionMachine", refIn{ref(o)}, nil)

	out := e.poll(o, activities.TargetReady, activities.Poll{})
	require.Equal(t, onboarding.OutcomeNotBooted, out.Outcome, out.Reason)
	assert.Equal(t, "Commissioning", out.StatusName)
	assert.False(t, out.Poll.BootSeen)
	assert.Contains(t, out.Reason, "pending")
	assert.Contains(t, timelineText(e.timeline(o.ID)), out.Reason, "the finding is on the timeline")

	var pc onboarding.PowerCycleMachineOutput
	e.must("PowerCycleMachine", powerCycleIn{ref(o), out.Reason}, &pc)
	assert.True(t, pc.Cycled)
	assert.Equal(t, 1, e.callsTo("POST", "power_off"))
	assert.Equal(t, 1, e.callsTo("POST", "power_on"))
	assert.Contains(t, timelineText(e.timeline(o.ID)), "power-cycled machine")

	after := e.poll(o, activities.TargetReady, activities.Poll{LastEventID: out.Poll.LastEventID})
	assert.Equal(t, activities.OutcomeDone, after.Outcome, after.Reason)

	// Ready now: a repeated cycle leaves it alone.
	e.must("PowerCycleMachine", powerCycleIn{ref(o), ""}, &pc)
	assert.False(t, pc.Cycled)
	assert.Equal(t, 1, e.callsTo("POST", "power_off"), "no second cycle")
	assert.Contains(t, timelineText(e.timeline(o.ID)), "no power cycle: machine")
}

// A host that boots normally is never reported not_booted, however long
// commissioning takes afterwards.
func TestBootingHostIsNotReported(t *testing.T) {
	e := newEnv(t, activitiestest.Options{})
	o := e.f.AddOnboarding(t, "gpu-02", "10.0.0.12")
	e.addHardware("gpu-02", "10.0.0.12", "52:54:00:00:00:12", maassim.Faults{})
	e.toDiscovered(o)
	e.must("CommissionMachine", refIn{ref(o)}, nil)
	out := e.poll(o, activities.TargetReady, activities.Poll{})
	assert.Equal(t, activities.OutcomeDone, out.Outcome, out.Reason)
	assert.Zero(t, e.callsTo("POST", "power_off"))
}
