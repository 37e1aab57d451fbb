package onboarding_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/internal/maassim"
	"github.com/maasflow/maasflow/shared/activities/activitiestest"
	"github.com/maasflow/maasflow/shared/activities/onboarding"
	"github.com/maasflow/maasflow/shared/domain"
)

// The profile's scripts reach MAAS's commission form: a name the region
// lacks is refused by MAAS, and once the region has it the commission runs.
func TestCommissionMachinePassesTheProfilesScripts(t *testing.T) {
	e := newEnv(t, activitiestest.Options{})
	_, err := e.f.Store.UpdateProfile(context.Background(), activitiestest.SiteID, activitiestest.ProfileID, func(p *domain.Profile) error {
		p.CommissioningScripts, p.TestingScripts = []string{"raid-config", "firmware-update"}, []string{"gpu-burn"}
		return nil
	})
	require.NoError(t, err)
	e.addHardware("gpu-01", "10.0.0.11", "52:54:00:00:00:11", maassim.Faults{})
	o := e.f.AddOnboarding(t, "gpu-01", "10.0.0.11")
	e.toDiscovered(o)

	e.f.Sim.SetMissingScripts([]string{"firmware-update"})
	err = e.call("CommissionMachine", refIn{ref(o)}, nil)
	requireErrorName(t, err, "MAASBadRequestError")
	assert.Contains(t, err.Error(), "firmware-update", "MAAS names the script")

	e.f.Sim.SetMissingScripts(nil)
	var out onboarding.CommissionMachineOutput
	e.must("CommissionMachine", refIn{ref(o)}, &out)
	assert.True(t, out.Commissioned)
}
