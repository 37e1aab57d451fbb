package activities

import (
	"context"
	"fmt"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
)

// CommissionMachineInput identifies the onboarding.
type CommissionMachineInput struct {
	OnboardingRef
}

// CommissionMachineOutput says what the machine was found in and whether
// commissioning was started.
type CommissionMachineOutput struct {
	StatusName   string `json:"status_name"`
	Commissioned bool   `json:"commissioned"`
}

// CommissionMachine commissions a New or Failed commissioning machine with
// the policy's enable_ssh and skip_bmc_config (seed 000 §4.2; without
// skip_bmc_config MAAS may replace the stored BMC credentials, maas-behaviour
// §14.7). A machine already Commissioning, Testing, Ready or Allocated is
// left alone, so a retry after MAAS accepted the call does nothing.
//
// Errors: MachineStateUnsafeError for any other status; MAAS errors.
func (a *Activities) CommissionMachine(ctx context.Context, in CommissionMachineInput) (out CommissionMachineOutput, err error) {
	ctx, cancel := a.bound(ctx)
	defer cancel()
	c, err := a.beginIn(ctx, "CommissionMachine", domain.StageCommission, in.OnboardingRef)
	defer c.finish(ctx, &err)
	if err != nil {
		return out, err
	}
	pol, _, err := c.runPolicy(ctx)
	if err != nil {
		return out, err
	}
	client, m, err := c.maasMachine(ctx)
	if err != nil {
		return out, err
	}
	out.StatusName = statusName(m)
	switch m.Status {
	case maas.StatusCommissioning, maas.StatusTesting, maas.StatusReady, maas.StatusAllocated:
		return out, c.exit(ctx, "no commissioning needed: machine is "+out.StatusName)
	case maas.StatusNew, maas.StatusFailedCommissioning:
	default:
		return out, &MachineStateUnsafeError{SystemID: m.SystemID, Status: out.StatusName, Reason: "commissioning is not possible from this state"}
	}
	m, err = client.Commission(ctx, m.SystemID, maas.CommissionParams{EnableSSH: pol.EnableSSH, SkipBMCConfig: pol.SkipBMCConfig})
	if err != nil {
		return out, err
	}
	out.StatusName, out.Commissioned = statusName(m), true
	return out, c.exit(ctx, fmt.Sprintf("commissioning started (enable_ssh=%t, skip_bmc_config=%t)", pol.EnableSSH, pol.SkipBMCConfig))
}
