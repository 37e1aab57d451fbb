package onboarding

import (
	"context"
	"fmt"
	"time"

	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
)

// A host that got power but never PXE-booted (firmware boot order, a BMC
// that acknowledged and did nothing) leaves MAAS in Commissioning with its
// scripts pending and no further event until node_timeout fails it 30 min
// after the start (maas-behaviour §4, §5). The wait for Ready notices it
// (outcome not_booted) and the state machine power-cycles the machine once
// through MAAS (requirements readiness §4.1 step 5) before it gives up.

// OutcomeNotBooted: the machine shows no sign of booting bootDeadline
// after the wait for Ready began.
const OutcomeNotBooted = "not_booted"

// bootDeadline is how long a machine may sit in Commissioning with its
// scripts pending and no boot event before the wait reports not_booted. A
// GPU server takes up to ~10 min from power-on to PXE (POST with many PCIe
// devices); 12 min leaves a cycle and a second 12 min inside MAAS's 30 min
// node_timeout.
const bootDeadline = 12 * time.Minute

// bootEvents are the MAAS events of a host that has PXE-booted
// (maas-behaviour §11).
var bootEvents = map[string]bool{"Performing PXE boot": true, "Loading ephemeral": true}

// bootCheck says whether the machine has shown boot progress during this
// wait (seen, carried in the poll) and whether it is overdue (notBooted).
// Events count only when they are newer than something this wait already
// read: the first poll of a fresh wait may return a past commissioning's.
func bootCheck(target activities.PollTarget, m maas.Machine, poll activities.Poll, events []maas.Event, waited time.Duration) (seen, notBooted bool) {
	seen = poll.BootSeen || m.Status != maas.StatusCommissioning ||
		(m.CommissioningStatus != maas.ScriptStatusPending && m.CommissioningStatus != maas.ScriptStatusNone)
	if poll.Count > 0 || poll.LastEventID > 0 {
		for _, e := range events {
			seen = seen || bootEvents[e.Type]
		}
	}
	return seen, target == activities.TargetReady && !seen && waited >= bootDeadline
}

// PowerCycleMachineInput identifies the onboarding; Reason is the wait's
// finding, for the timeline.
type PowerCycleMachineInput struct {
	OnboardingRef
	Reason string `json:"reason"`
}

// PowerCycleMachineOutput says what the machine showed and whether it was
// cycled.
type PowerCycleMachineOutput struct {
	StatusName string `json:"status_name"`
	Cycled     bool   `json:"cycled"`
}

// PowerCycleMachine power-cycles a machine that MAAS shows in Commissioning
// with its scripts still pending: power_off then power_on (MAAS has no
// power-cycle operation; power_on needs an owner, which commissioning made
// the caller, maas-behaviour §5). MAAS runs a power action before it answers
// (maas-behaviour §2), so power_on follows a finished power_off, and a BMC
// that refuses either comes back as a MAAS error (§14.14). The host sees
// power arrive and boots from the network again; the commissioning MAAS is
// waiting for carries on. A machine that has meanwhile booted (scripts
// running, or past Commissioning) is left alone. Either way the decision
// is on the timeline.
//
// A retry after a partial cycle repeats it: power_off on a machine that is
// off and power_on on one that is on are harmless.
//
// Errors: MAAS errors (MAASConflictError when the machine has no owner).
func (a *Activities) PowerCycleMachine(ctx context.Context, in PowerCycleMachineInput) (out PowerCycleMachineOutput, err error) {
	ctx, cancel := a.bound(ctx)
	defer cancel()
	c, err := a.beginIn(ctx, "PowerCycleMachine", domain.StageWaitReady, in.OnboardingRef)
	defer c.Finish(ctx, &err)
	if err != nil {
		return out, err
	}
	client, m, err := c.maasMachine(ctx)
	if err != nil {
		return out, err
	}
	out.StatusName = activities.MachineStatusName(m)
	if m.Status != maas.StatusCommissioning || m.CommissioningStatus != maas.ScriptStatusPending {
		return out, c.Note(ctx, sourcePowerCycle, fmt.Sprintf("no power cycle: machine %s is %s with commissioning scripts %s",
			m.SystemID, out.StatusName, scriptStatusText(m.CommissioningStatus)))
	}
	if err := client.PowerOff(ctx, m.SystemID); err != nil {
		return out, err
	}
	if err := client.PowerOn(ctx, m.SystemID); err != nil {
		return out, err
	}
	out.Cycled = true
	detail := fmt.Sprintf("power-cycled machine %s through MAAS (power_off, power_on)", m.SystemID)
	if in.Reason != "" {
		detail += ": " + activities.Truncate(in.Reason, 512)
	}
	return out, c.Note(ctx, sourcePowerCycle, detail)
}

const sourcePowerCycle = "power_cycle"

func scriptStatusText(s int) string {
	switch s {
	case maas.ScriptStatusNone:
		return "not reported"
	case maas.ScriptStatusPending:
		return "pending"
	case maas.ScriptStatusRunning:
		return "running"
	}
	return fmt.Sprintf("in status %d", s)
}
