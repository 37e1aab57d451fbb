package workflow_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/internal/maassim"
	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/activities/activitiestest"
	"github.com/maasflow/maasflow/shared/design"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/store"
)

// refusingDriver is a network driver whose switch refuses the port
// configuration, as a real driver reports a switch it cannot configure.
type refusingDriver struct{ calls atomic.Int32 }

func (d *refusingDriver) Configure(_ context.Context, e design.Effective) error {
	d.calls.Add(1)
	return errors.New("switch leaf-07 refused port Ethernet12 for " + e.Hostname + ": VLAN 120 not allowed")
}

// A network driver that fails stops the onboarding at configure_machine
// for an operator, with the driver's reason, before storage and deploy:
// the switch side of the design is not in place, and retrying the same
// call cannot tell why.
func TestNetworkDriverFailureNeedsAnOperator(t *testing.T) {
	driver := &refusingDriver{}
	h := newHarness(t, options{deps: func(_ *activitiestest.Fixture, d *activities.Deps) { d.NetworkDriver = driver }})
	h.hardware("gpu-01", "10.0.0.11", "52:54:00:00:00:11", maassim.Faults{})
	// The site's design names the host (no interfaces or boot disk: the
	// driver is the stage's only work).
	_, err := h.f.Store.PutSiteDesign(context.Background(), store.SiteDesign{SiteID: activitiestest.SiteID, Design: design.Design{
		HostProfiles: []design.HostProfile{{Name: "gpu"}},
		Nodes:        []design.NodeAssignment{{Hostname: "gpu-01", BMCAddress: "10.0.0.11", HostProfile: "gpu"}},
	}}, 0)
	require.NoError(t, err)
	o := h.f.AddOnboarding(t, "gpu-01", "10.0.0.11")

	r := h.run(o)
	requireManual(t, r, "NetworkDriverError")
	assert.Equal(t, domain.StageConfigureMachine, r.ob.Error.Stage)
	assert.Contains(t, r.ob.Error.Message, "network driver could not configure the network of machine")
	assert.Contains(t, r.ob.Error.Message, "switch leaf-07 refused port Ethernet12 for gpu-01: VLAN 120 not allowed")
	assert.EqualValues(t, 1, driver.calls.Load(), "not retried by the state machine")
	calls, _ := h.simCalls()
	assert.Zero(t, calls["POST deploy"], "nothing is deployed after the driver failed")
}
