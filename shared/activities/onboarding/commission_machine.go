package onboarding

import (
	"context"
	"fmt"

	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
)

// CommissionMachineInput identifies the onboarding. Fresh (restart-clean)
// commissions a Ready machine again instead of taking it as it is.
type CommissionMachineInput struct {
	OnboardingRef
	Fresh bool `json:"fresh,omitempty"`
}

// CommissionMachineOutput says what the machine was found in and whether
// commissioning was started.
type CommissionMachineOutput struct {
	StatusName   string `json:"status_name"`
	Commissioned bool   `json:"commissioned"`
}

// CommissionMachine commissions a New or Failed commissioning machine with
// the policy's enable_ssh and skip_bmc_config (requirements readiness §4.2; without
// skip_bmc_config MAAS may replace the stored BMC credentials, maas-behaviour
// §14.7). A machine already Commissioning, Testing, Ready or Allocated is
// left alone, so a retry after MAAS accepted the call does nothing. With
// fresh (restart-clean) a Ready or Failed testing machine is commissioned
// too, unless the run is already in the commission stage: then this is a
// retry after MAAS accepted the call, and Ready means it finished.
//
// Errors: MachineStateUnsafeError for any other status; MAAS errors.
func (a *Activities) CommissionMachine(ctx context.Context, in CommissionMachineInput) (out CommissionMachineOutput, err error) {
	ctx, cancel := a.bound(ctx)
	defer cancel()
	c, err := a.begin(ctx, "CommissionMachine", domain.StageCommission, in.OnboardingRef)
	defer c.Finish(ctx, &err)
	if err != nil {
		return out, err
	}
	retry := false
	if err := c.enter(ctx, func(o *domain.Onboarding) error {
		retry = o.Stage == domain.StageCommission
		return nil
	}); err != nil {
		return out, err
	}
	// A Ready machine whose recorded hardware may be stale (a reimage, a
	// retry after a repair) is commissioned again, as restart-clean does.
	fresh := (in.Fresh || c.Rec.RecommissionReady) && !retry
	pol, profile, err := c.runPolicy(ctx)
	if err != nil {
		return out, err
	}
	client, m, err := c.maasMachine(ctx)
	if err != nil {
		return out, err
	}
	out.StatusName = activities.MachineStatusName(m)
	switch {
	case fresh && (m.Status == maas.StatusReady || m.Status == maas.StatusFailedTesting):
	case m.Status == maas.StatusCommissioning || m.Status == maas.StatusTesting || m.Status == maas.StatusReady || m.Status == maas.StatusAllocated:
		return out, c.Exit(ctx, "no commissioning needed: machine is "+out.StatusName)
	case m.Status == maas.StatusNew || m.Status == maas.StatusFailedCommissioning:
	default:
		return out, &activities.MachineStateUnsafeError{SystemID: m.SystemID, Status: out.StatusName, Reason: "commissioning is not possible from this state"}
	}
	m, err = client.Commission(ctx, m.SystemID, maas.CommissionParams{EnableSSH: pol.EnableSSH, SkipBMCConfig: pol.SkipBMCConfig,
		CommissioningScripts: profile.CommissioningScripts, TestingScripts: profile.TestingScripts})
	if err != nil {
		return out, err
	}
	out.StatusName, out.Commissioned = activities.MachineStatusName(m), true
	return out, c.Exit(ctx, fmt.Sprintf("commissioning started (enable_ssh=%t, skip_bmc_config=%t)", pol.EnableSSH, pol.SkipBMCConfig))
}
