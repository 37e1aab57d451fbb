package maassim

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/design"
	"github.com/maasflow/maasflow/shared/maas"
)

// A node's design reaches MAAS through the client: the operations
// design.NetworkOps lists, addressed by PCI alias through the node
// devices, performed once however often they are applied, and no drift
// afterwards.
func TestFidelityApplyDesignToMAAS(t *testing.T) {
	d := newDesignHarness(t)
	ctx := context.Background()
	e := design.Effective{Hostname: "gpu-1", Interfaces: []design.EffectiveInterface{{
		Name: "bond0", BondMode: "802.3ad", MTU: 9000,
		Members: []design.DeviceAlias{{Alias: "stor0", PCIAddress: "0000:1a:00.0"}, {Alias: "stor1", PCIAddress: "0000:2c:00.0"}},
		Networks: []design.EffectiveNetwork{{
			Network: design.Network{Name: "storage", CIDR: storageCIDR, VLAN: storageVID, MTU: 9000, DNSServers: []string{"10.30.0.2"}},
			Address: "10.30.0.17",
		}},
	}}}
	nics := func() []design.NIC {
		devices, err := d.c.NodeDevices(ctx, d.sid)
		require.NoError(t, err)
		ifaces, err := d.c.Interfaces(ctx, d.sid)
		require.NoError(t, err)
		return maas.DesignNICs(devices, ifaces)
	}
	ops, err := design.NetworkOps(e, nics())
	require.NoError(t, err)

	changed, err := d.c.ApplyInterfaceOps(ctx, d.sid, ops)
	require.NoError(t, err)
	assert.Equal(t, len(ops), changed)
	ifs := d.ifaces(t)
	assert.Equal(t, []string{"eno2", "eno3"}, ifs["bond0"].Parents)
	require.Len(t, ifs["bond0.120"].Links, 1)
	assert.Equal(t, "10.30.0.17", ifs["bond0.120"].Links[0].IPAddress)
	assert.Equal(t, []string{"10.30.0.2"}, d.storageSubnet(t).DNSServers)

	observed, err := d.c.ObservedInterfaces(ctx, d.sid)
	require.NoError(t, err)
	drift, err := design.NetworkDrift(e, nics(), observed)
	require.NoError(t, err)
	assert.Empty(t, drift)

	// Again: only the MTUs are set again; nothing is created or linked twice.
	before := d.sim.Calls().Total
	changed, err = d.c.ApplyInterfaceOps(ctx, d.sid, ops)
	require.NoError(t, err)
	assert.Equal(t, 2, changed, "the two members' MTU")
	assert.Equal(t, 2+2, d.sim.Calls().Total-before, "two reads and two MTU updates")

	// The designed address changes: the link is replaced, not doubled.
	e.Interfaces[0].Networks[0].Address = "10.30.0.18"
	observed, err = d.c.ObservedInterfaces(ctx, d.sid)
	require.NoError(t, err)
	drift, err = design.NetworkDrift(e, nics(), observed)
	require.NoError(t, err)
	assert.Equal(t, []string{"interface bond0.120: network storage address 10.30.0.17 (static), designed 10.30.0.18 (static)"}, drift)
	ops, err = design.NetworkOps(e, nics())
	require.NoError(t, err)
	_, err = d.c.ApplyInterfaceOps(ctx, d.sid, ops)
	require.NoError(t, err)
	links := d.ifaces(t)["bond0.120"].Links
	require.Len(t, links, 1)
	assert.Equal(t, "10.30.0.18", links[0].IPAddress)
}

func TestFidelityApplyDesignRefusesWhatMAASLacks(t *testing.T) {
	d := newDesignHarness(t)
	ctx := context.Background()
	ops := []design.InterfaceOp{{Op: design.OpCreateVLAN, Interface: "bond9", VLAN: 130, CIDR: storageCIDR}}
	_, err := d.c.ApplyInterfaceOps(ctx, d.sid, ops)
	var oe *maas.InterfaceOpError
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, "no parent interface bond9", oe.Reason, "an op naming an interface by name needs it to exist")

	eno1 := d.ifaces(t)["eno1"]
	ops = []design.InterfaceOp{{Op: design.OpCreateVLAN, InterfaceID: eno1.ID, VLAN: 130, CIDR: storageCIDR}}
	_, err = d.c.ApplyInterfaceOps(ctx, d.sid, ops)
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, "subnet 10.30.0.0/24 is on VLAN 120 in MAAS, the design says 130", oe.Reason)

	ops = []design.InterfaceOp{{Op: design.OpSubnetDNS, CIDR: "10.99.0.0/24", DNSServers: []string{"10.99.0.2"}}}
	_, err = d.c.ApplyInterfaceOps(ctx, d.sid, ops)
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, "MAAS has no subnet 10.99.0.0/24", oe.Reason)
}
