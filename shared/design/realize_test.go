package design

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The machine's NICs, named differently from any design: matched by PCI
// address only.
var machineNICs = []NIC{
	{PCIAddress: "0000:17:00.0", InterfaceID: 11, Name: "enp23s0f0"},
	{PCIAddress: "0000:1a:00.0", InterfaceID: 12, Name: "enp26s0f0np0"},
	{PCIAddress: "0000:1a:00.1", InterfaceID: 13, Name: "enp26s0f1np1"},
	{PCIAddress: "0000:3b:00.0", InterfaceID: 14, Name: "enp59s0np0"},
}

func TestNetworkOpsFromTheEffectiveDesign(t *testing.T) {
	e, err := EffectiveNode(mustCompose(site()...), "gpu-05")
	require.NoError(t, err)
	ops, err := NetworkOps(e, machineNICs)
	require.NoError(t, err)
	assert.Equal(t, []InterfaceOp{
		{Op: OpSetMTU, InterfaceID: 11, MTU: 1500},
		{Op: OpLinkSubnet, InterfaceID: 11, CIDR: "10.0.0.0/24", Mode: LinkModeFixed, Address: "10.0.0.15"},
		{Op: OpSubnetDNS, CIDR: "10.0.0.0/24", DNSServers: []string{"10.0.0.2"}},
		{Op: OpSetMTU, InterfaceID: 12, MTU: 9000},
		{Op: OpSetMTU, InterfaceID: 13, MTU: 9000},
		{Op: OpCreateBond, Interface: "bond0", Parents: []int{12, 13}, BondMode: "802.3ad", MTU: 9000},
		{Op: OpCreateVLAN, Interface: "bond0", VLAN: 120, CIDR: "10.0.1.0/24", MTU: 9000},
		{Op: OpLinkSubnet, Interface: "bond0.120", CIDR: "10.0.1.0/24", Mode: LinkModeFixed, Address: "10.0.1.15"},
	}, ops)
}

func TestNetworkOpsRefuseAMissingDevice(t *testing.T) {
	e, err := EffectiveNode(mustCompose(site()...), "gpu-05")
	require.NoError(t, err)
	_, err = NetworkOps(e, machineNICs[:2])
	var missing *MissingDeviceError
	require.ErrorAs(t, err, &missing)
	assert.Equal(t, MissingDeviceError{Hostname: "gpu-05", Alias: "stor1", PCIAddress: "0000:1a:00.1"}, *missing)
}

func TestSelectBootDiskNeedsExactlyOne(t *testing.T) {
	e, err := EffectiveNode(mustCompose(site()...), "gpu-05")
	require.NoError(t, err) // selector: model SAMSUNG MZ1L2960, at least 960 GB
	boot := Disk{ID: 3, Model: "SAMSUNG MZ1L2960", SizeBytes: 960_197_124_096, Path: "/dev/nvme1n1"}
	small := Disk{ID: 4, Model: "SAMSUNG MZ1L2960", SizeBytes: 480_103_981_056, Path: "/dev/nvme2n1"}
	data := Disk{ID: 5, Model: "MICRON 7450", SizeBytes: 7_680_000_000_000, Path: "/dev/nvme0n1"}

	got, ok, err := SelectBootDisk(e, []Disk{data, small, boot})
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, 3, got.ID)

	_, _, err = SelectBootDisk(e, []Disk{data, small})
	var bd *BootDiskError
	require.ErrorAs(t, err, &bd)
	assert.Equal(t, 0, bd.Matches)
	twin := boot
	twin.ID = 6
	_, _, err = SelectBootDisk(e, []Disk{boot, twin})
	require.ErrorAs(t, err, &bd)
	assert.Equal(t, 2, bd.Matches, "two matches are an error, not the first one")

	e.BootDisk = nil
	_, ok, err = SelectBootDisk(e, []Disk{boot})
	require.NoError(t, err)
	assert.False(t, ok)
}

func TestNoopNetworkDriverSucceeds(t *testing.T) {
	var d NetworkDriver = NoopNetworkDriver{}
	require.NoError(t, d.Configure(t.Context(), Effective{Hostname: "gpu-01"}))
}

// asDesigned is gpu-05's MAAS network once configured as designed.
func asDesigned() []ObservedInterface {
	return []ObservedInterface{
		{Name: "enp23s0f0", Type: "physical", MTU: 1500, Links: []ObservedLink{{CIDR: "10.0.0.0/24", Mode: "static", Address: "10.0.0.15"}}},
		{Name: "enp26s0f0np0", Type: "physical", MTU: 9000},
		{Name: "enp26s0f1np1", Type: "physical", MTU: 9000},
		{Name: "bond0", Type: "bond", MTU: 9000, Parents: []string{"enp26s0f1np1", "enp26s0f0np0"}},
		{Name: "bond0.120", Type: "vlan", MTU: 9000, Links: []ObservedLink{{CIDR: "10.0.1.0/24", Mode: "static", Address: "10.0.1.15"}}},
		{Name: "enp59s0np0", Type: "physical", MTU: 1500},
	}
}

func TestNetworkDrift(t *testing.T) {
	e, err := EffectiveNode(mustCompose(site()...), "gpu-05")
	require.NoError(t, err)
	drift, err := NetworkDrift(e, machineNICs, asDesigned())
	require.NoError(t, err)
	assert.Empty(t, drift, "as designed")

	broken := asDesigned()
	broken[4].Links[0].Address = "10.0.1.99"
	broken[3].Parents = []string{"enp26s0f0np0"}
	broken[0].MTU = 9000
	drift, err = NetworkDrift(e, machineNICs, broken)
	require.NoError(t, err)
	assert.Equal(t, []string{
		"interface enp23s0f0: MTU 9000, designed 1500",
		"interface bond0: members [enp26s0f0np0], designed [enp26s0f0np0 enp26s0f1np1]",
		"interface bond0.120: network storage address 10.0.1.99 (static), designed 10.0.1.15 (static)",
	}, drift)

	drift, err = NetworkDrift(e, machineNICs, asDesigned()[:3])
	require.NoError(t, err)
	assert.Equal(t, []string{"interface bond0: bond missing"}, drift)
}
