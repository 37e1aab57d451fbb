package onboarding_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/internal/maassim"
	"github.com/maasflow/maasflow/shared/activities/activitiestest"
	"github.com/maasflow/maasflow/shared/activities/onboarding"
	"github.com/maasflow/maasflow/shared/design"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
	"github.com/maasflow/maasflow/shared/store"
)

// machineDesign names gpu-01 on the simulator's board: its PXE NIC (bus
// 0x0c) at MTU 1500 linked AUTO to the simulator's subnet, with DNS
// servers, and a boot disk chosen by model.
func machineDesign(bootModel string) design.Design {
	return design.Design{
		HardwareProfiles: []design.HardwareProfile{{Name: "board",
			DeviceAliases: []design.DeviceAlias{{Alias: "pxe0", PCIAddress: "0000:0c:00.0"}},
			BootDisk:      &design.BootDisk{Model: bootModel}}},
		Networks:     []design.Network{{Name: "mgmt", CIDR: maassim.DefaultSubnetCIDR, MTU: 1500, DNSServers: []string{"10.20.0.2"}}},
		NetworkLinks: []design.NetworkLink{{Name: "pxe", Members: []string{"pxe0"}, MTU: 1500}},
		HostProfiles: []design.HostProfile{{Name: "gpu", HardwareProfile: "board",
			Interfaces: []design.InterfaceSpec{{Name: "eno1", Link: "pxe", Networks: []string{"mgmt"}}}}},
		Nodes: []design.NodeAssignment{{Hostname: "gpu-01", BMCAddress: "10.0.0.11", HostProfile: "gpu"}},
	}
}

// readyWithDisks is a Ready machine gpu-01 with two NVMe disks, the
// second a different model, and its onboarding at configure_machine.
func readyWithDisks(t *testing.T, e *env) domain.Onboarding {
	t.Helper()
	require.NoError(t, e.f.Sim.AddHardware(maassim.Hardware{Hostname: "gpu-01", BMCIP: "10.0.0.11", PXEMAC: "52:54:00:00:00:11",
		Disks: []maassim.Disk{
			{Name: "nvme0n1", SizeBytes: 3_840_000_000_000, Model: "DATA 3840", Serial: "D1"},
			{Name: "nvme1n1", SizeBytes: 960_000_000_000, Model: "BOOT 960", Serial: "B1"},
		}}))
	o := e.f.AddOnboarding(t, "gpu-01", "10.0.0.11")
	sid, err := e.f.Sim.AddMachine(maassim.MachineSeed{Hostname: "gpu-01", BMCIP: "10.0.0.11", PXEMAC: "52:54:00:00:00:11", Status: "Ready"})
	require.NoError(t, err)
	e.placeAt(o, domain.StageConfigureMachine, sid)
	return o
}

func putDesign(t *testing.T, e *env, d design.Design) {
	t.Helper()
	_, err := e.f.Store.PutSiteDesign(context.Background(), store.SiteDesign{SiteID: e.f.Site.ID, Design: d}, 0)
	require.NoError(t, err)
}

// The design's boot disk and interfaces are set once: a retry finds them
// there and changes nothing more in MAAS.
func TestConfigureMachineSetsTheDesignOnce(t *testing.T) {
	e := newEnv(t, activitiestest.Options{})
	o := readyWithDisks(t, e)
	putDesign(t, e, machineDesign("BOOT 960"))

	var out onboarding.ConfigureMachineOutput
	e.must("ConfigureMachine", refIn{ref(o)}, &out)
	assert.True(t, out.Designed)
	assert.Equal(t, "nvme1n1", out.BootDisk)
	assert.True(t, out.BootDiskSet, "MAAS booted from nvme0n1, its default")
	assert.Equal(t, 3, out.InterfaceOps, "set_mtu, link_subnet, subnet_dns")
	assert.Positive(t, out.InterfaceChanges, "the DNS servers were not set")

	var again onboarding.ConfigureMachineOutput
	e.must("ConfigureMachine", refIn{ref(o)}, &again)
	assert.Equal(t, "nvme1n1", again.BootDisk)
	assert.False(t, again.BootDiskSet, "MAAS already boots from it")
	assert.Zero(t, again.InterfaceChanges, "nothing created or linked twice")

	rows, err := e.f.Store.ListOnboardingEvents(context.Background(), o.ID)
	require.NoError(t, err)
	var notes []string
	for _, r := range rows {
		if r.Source == "design" {
			notes = append(notes, r.Detail)
		}
	}
	require.Len(t, notes, 3, "boot disk once, interfaces per run: %v", notes)
	assert.Contains(t, notes[0], "boot disk set to nvme1n1 (model BOOT 960)")
}

// A selector that matches no disk, or an alias whose NIC is not on the
// machine, stops the run for an operator with the disk or alias named.
func TestConfigureMachineRefusesADesignTheMachineCannotTake(t *testing.T) {
	t.Run("boot disk", func(t *testing.T) {
		e := newEnv(t, activitiestest.Options{})
		o := readyWithDisks(t, e)
		putDesign(t, e, machineDesign("NO SUCH MODEL"))
		err := e.call("ConfigureMachine", refIn{ref(o)}, nil)
		require.Error(t, err)
		assert.Equal(t, "MachineDesignError", lambdaErrorType(err))
		assert.Contains(t, err.Error(), "boot disk (model NO SUCH MODEL): no disk matches (disks: nvme0n1, nvme1n1)")
	})
	t.Run("alias", func(t *testing.T) {
		e := newEnv(t, activitiestest.Options{})
		o := readyWithDisks(t, e)
		d := machineDesign("BOOT 960")
		d.HardwareProfiles[0].DeviceAliases[0].PCIAddress = "0000:99:00.0"
		putDesign(t, e, d)
		err := e.call("ConfigureMachine", refIn{ref(o)}, nil)
		require.Error(t, err)
		assert.Equal(t, "MachineDesignError", lambdaErrorType(err))
		assert.Contains(t, err.Error(), "device alias pxe0 (0000:99:00.0) is not on the machine")
	})
}

// A site without a design, or a host its design does not name, passes
// without a MAAS call.
func TestConfigureMachineLeavesAnUndesignedHostAlone(t *testing.T) {
	for name, d := range map[string]*design.Design{"no design": nil, "host not named": func() *design.Design {
		d := machineDesign("BOOT 960")
		d.Nodes[0].Hostname = "gpu-99"
		return &d
	}()} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, activitiestest.Options{})
			o := readyWithDisks(t, e)
			if d != nil {
				putDesign(t, e, *d)
			}
			before := e.f.Sim.Calls().Total
			var out onboarding.ConfigureMachineOutput
			e.must("ConfigureMachine", refIn{ref(o)}, &out)
			assert.False(t, out.Designed)
			assert.Equal(t, before, e.f.Sim.Calls().Total, "no MAAS call")
		})
	}
}

// The boot interface's designed STATIC address survives the PXE
// preflight: it keeps that link rather than relinking AUTO, and a repeat
// changes nothing.
func TestPreflightPXEKeepsTheDesignedStaticBootLink(t *testing.T) {
	e := newEnv(t, activitiestest.Options{})
	o := readyWithDisks(t, e)
	d := machineDesign("BOOT 960")
	d.Nodes[0].Addresses = []design.Address{{Interface: "pxe0", Network: "mgmt", Address: "10.20.0.77"}}
	putDesign(t, e, d)
	e.must("ConfigureMachine", refIn{ref(o)}, nil)

	var out onboarding.PreflightPXEOutput
	e.must("PreflightPXE", refIn{ref(o)}, &out)
	e.must("PreflightPXE", refIn{ref(o)}, &out)
	assert.False(t, out.Relinked, "a repeat changes nothing")
	c, err := maas.NewClient(e.f.Site.MAASURL, activitiestest.APIKey, maas.WithNow(e.clk.Now))
	require.NoError(t, err)
	ifaces, err := c.Interfaces(context.Background(), e.onboarding(o.ID).MAASSystemID)
	require.NoError(t, err)
	var links []string
	for _, l := range ifaces[0].Links {
		links = append(links, strings.ToLower(l.Mode)+" "+l.IPAddress)
	}
	assert.Equal(t, []string{"static 10.20.0.77"}, links)
}
