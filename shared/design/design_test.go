package design

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSiteFixtureIsValid(t *testing.T) {
	d := mustCompose(site()...)
	require.NoError(t, Validate(d))
	assert.Len(t, d.Nodes, 6)
	assert.Equal(t, "rack-a.yaml", d.SourceOf(KindNode, "gpu-05"))
}

func TestEffectiveInheritsWithSources(t *testing.T) {
	d := mustCompose(site()...)
	e, err := EffectiveNode(d, "gpu-05")
	require.NoError(t, err)
	assert.Equal(t, []string{"gpu-h100", "gpu-base"}, e.ProfileChain)
	assert.Equal(t, "noble", e.DistroSeries, "the child's scalar overrides")
	assert.Equal(t, "host_profile/gpu-h100@site.yaml", e.Sources["distro_series"])
	assert.Equal(t, "amd64/generic", e.Architecture, "an unset scalar is inherited")
	assert.Equal(t, "host_profile/gpu-base@site.yaml", e.Sources["architecture"])
	assert.Equal(t, map[string]string{"tier": "gpu", "pool": "training"}, e.Labels, "labels merge by key")
	assert.Equal(t, "host_profile/gpu-h100@site.yaml", e.Sources["labels.pool"])
	assert.Equal(t, "node/gpu-05@rack-a.yaml", e.Sources["bmc_address"])
	assert.Equal(t, "hardware_profile/h100-board@site.yaml", e.Sources["boot_disk"])
	require.Len(t, e.Interfaces, 2)
	assert.Equal(t, "eno1", e.Interfaces[0].Name)
	assert.Equal(t, "10.0.0.15", e.Interfaces[0].Networks[0].Address, "an address by the alias of a single-NIC link")
	assert.Equal(t, "10.0.1.15", e.Interfaces[1].Networks[0].Address)
	assert.Equal(t, []string{"10.0.0.2"}, e.Interfaces[0].Networks[0].DNSServers)
	assert.Equal(t, "node/gpu-05@rack-a.yaml#addresses[1]", e.Sources["interfaces[bond0].networks[storage].address"])
}

// A bond redeclared down a chain stays one bond with each member once:
// interfaces are a keyed list, and the members live on the link.
func TestBondMembersNotDuplicatedDownChain(t *testing.T) {
	docs := site()
	// A third generation redeclares bond0 once more.
	docs[0].HostProfiles = append(docs[0].HostProfiles, HostProfile{Name: "gpu-h100-big", Parent: "gpu-h100",
		Interfaces: []InterfaceSpec{{Name: "bond0", Link: "storage-bond"}}})
	docs[1].Nodes[0].HostProfile = "gpu-h100-big"
	d := mustCompose(docs...)
	require.NoError(t, Validate(d))
	e, err := EffectiveNode(d, "gpu-04")
	require.NoError(t, err)
	var bonds []EffectiveInterface
	for _, in := range e.Interfaces {
		if in.Name == "bond0" {
			bonds = append(bonds, in)
		}
	}
	require.Len(t, bonds, 1, "bond0 once")
	assert.Equal(t, []DeviceAlias{{Alias: "stor0", PCIAddress: "0000:1a:00.0"}, {Alias: "stor1", PCIAddress: "0000:1a:00.1"}}, bonds[0].Members)
	require.Len(t, bonds[0].Networks, 1, "networks unset on the grandchild: inherited, not appended")
	assert.Equal(t, "host_profile/gpu-h100-big@site.yaml", e.Sources["interfaces[bond0].link"])
	assert.Equal(t, "host_profile/gpu-h100@site.yaml", e.Sources["interfaces[bond0].networks"])
}

func TestPlainListReplacesParents(t *testing.T) {
	docs := site()
	docs[0].Networks = append(docs[0].Networks, Network{Name: "storage2", CIDR: "10.0.2.0/24", MTU: 9000})
	docs[0].HostProfiles[1].Interfaces[0].Networks = []string{"storage2"}
	for i := range docs[1].Nodes {
		docs[1].Nodes[i].Addresses[1].Network = "storage2"
		docs[1].Nodes[i].Addresses[1].Address = fmt.Sprintf("10.0.2.%d", 4+i)
	}
	d := mustCompose(docs...)
	require.NoError(t, Validate(d))
	e, err := EffectiveNode(d, "gpu-04")
	require.NoError(t, err)
	require.Len(t, e.Interfaces[1].Networks, 1)
	assert.Equal(t, "storage2", e.Interfaces[1].Networks[0].Name)
}

func TestComposeConflictNamesBothDocuments(t *testing.T) {
	docs := site()
	docs[1].Networks = []Network{{Name: "mgmt", CIDR: "10.5.0.0/24"}}
	_, err := Compose(docs...)
	var inv *InvalidDesignError
	require.ErrorAs(t, err, &inv)
	require.Len(t, inv.Problems, 1)
	p := inv.Problems[0]
	assert.Equal(t, Problem{Document: "rack-a.yaml", Kind: KindNetwork, Object: "mgmt", Field: "networks[0]"}, Problem{Document: p.Document, Kind: p.Kind, Object: p.Object, Field: p.Field})
	assert.Contains(t, p.Message, "site.yaml")
}

func TestComposeOverrideTakesPrecedence(t *testing.T) {
	docs := site()
	docs[1].Networks = []Network{{Name: "mgmt", Override: true, CIDR: "10.0.0.0/24", MTU: 1500, Gateway: "10.0.0.254"}}
	d, err := Compose(docs...)
	require.NoError(t, err)
	assert.Equal(t, "rack-a.yaml", d.SourceOf(KindNetwork, "mgmt"))
	i := slices.IndexFunc(d.Networks, func(n Network) bool { return n.Name == "mgmt" })
	assert.Equal(t, "10.0.0.254", d.Networks[i].Gateway)
}

func TestComposeRepeatWithinDocument(t *testing.T) {
	docs := site()
	docs[1].Nodes = append(docs[1].Nodes, docs[1].Nodes[0])
	_, err := Compose(docs...)
	var inv *InvalidDesignError
	require.ErrorAs(t, err, &inv)
	assert.Equal(t, "nodes[3]", inv.Problems[0].Field)
	assert.Equal(t, "gpu-04", inv.Problems[0].Object)
}

// Every validator has a failing case; each names document, object and field.
func TestValidateFailingCases(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(docs []Document)
		want   Problem // Message not compared
	}{
		{"missing parent", func(ds []Document) { ds[0].HostProfiles[1].Parent = "nope" },
			Problem{"site.yaml", KindHostProfile, "gpu-h100", "parent", ""}},
		{"inheritance cycle", func(ds []Document) { ds[0].HostProfiles[0].Parent = "gpu-h100" },
			Problem{"site.yaml", KindHostProfile, "gpu-base", "parent", ""}},
		{"missing hardware profile", func(ds []Document) { ds[0].HostProfiles[0].HardwareProfile = "nope" },
			Problem{"site.yaml", KindHostProfile, "gpu-base", "hardware_profile", ""}},
		{"missing link", func(ds []Document) { ds[0].HostProfiles[0].Interfaces[0].Link = "nope" },
			Problem{"site.yaml", KindHostProfile, "gpu-base", "interfaces[0].link", ""}},
		{"missing network on interface", func(ds []Document) { ds[0].HostProfiles[0].Interfaces[0].Networks = []string{"nope"} },
			Problem{"site.yaml", KindHostProfile, "gpu-base", "interfaces[0].networks[0]", ""}},
		{"missing host profile on node", func(ds []Document) { ds[1].Nodes[0].HostProfile = "nope" },
			Problem{"rack-a.yaml", KindNode, "gpu-04", "host_profile", ""}},
		{"CIDR overlap", func(ds []Document) {
			ds[0].Networks = append(ds[0].Networks, Network{Name: "wide", CIDR: "10.0.0.0/16"})
		},
			Problem{"site.yaml", KindNetwork, "wide", "cidr", ""}},
		{"bad CIDR", func(ds []Document) { ds[0].Networks[0].CIDR = "10.0.0.1/24" },
			Problem{"site.yaml", KindNetwork, "mgmt", "cidr", ""}},
		{"address outside its network", func(ds []Document) { ds[1].Nodes[1].Addresses[1].Address = "10.0.7.5" },
			Problem{"rack-a.yaml", KindNode, "gpu-05", "addresses[1].address", ""}},
		{"duplicate address", func(ds []Document) { ds[1].Nodes[2].Addresses[1].Address = "10.0.1.11" },
			Problem{"rack-a.yaml", KindNode, "gpu-06", "addresses[1].address", ""}},
		{"broadcast address", func(ds []Document) { ds[1].Nodes[2].Addresses[0].Address = "10.0.0.255" },
			Problem{"rack-a.yaml", KindNode, "gpu-06", "addresses[0].address", ""}},
		{"address is the gateway", func(ds []Document) { ds[1].Nodes[2].Addresses[0].Address = "10.0.0.1" },
			Problem{"rack-a.yaml", KindNode, "gpu-06", "addresses[0].address", ""}},
		{"address on an unknown interface", func(ds []Document) { ds[1].Nodes[2].Addresses[0].Interface = "eth9" },
			Problem{"rack-a.yaml", KindNode, "gpu-06", "addresses[0].interface", ""}},
		{"address network not on interface", func(ds []Document) {
			ds[1].Nodes[2].Addresses[0].Network = "storage"
			ds[1].Nodes[2].Addresses[0].Address = "10.0.1.99"
		},
			Problem{"rack-a.yaml", KindNode, "gpu-06", "addresses[0].network", ""}},
		{"gateway outside network", func(ds []Document) { ds[0].Networks[1].Gateway = "10.0.0.1" },
			Problem{"site.yaml", KindNetwork, "storage", "gateway", ""}},
		{"route gateway outside network", func(ds []Document) { ds[0].Networks[1].Routes[0].Gateway = "10.9.0.1" },
			Problem{"site.yaml", KindNetwork, "storage", "routes[0].gateway", ""}},
		{"bad DNS server", func(ds []Document) { ds[0].Networks[0].DNSServers = []string{"dns"} },
			Problem{"site.yaml", KindNetwork, "mgmt", "dns_servers[0]", ""}},
		{"link MTU below its network's", func(ds []Document) { ds[0].NetworkLinks[1].MTU = 1500 },
			Problem{"site.yaml", KindHostProfile, "gpu-base", "interfaces[bond0].networks", ""}},
		{"MTU range", func(ds []Document) { ds[0].Networks[0].MTU = 100 },
			Problem{"site.yaml", KindNetwork, "mgmt", "mtu", ""}},
		{"bond member does not exist", func(ds []Document) { ds[0].NetworkLinks[1].Members = []string{"stor0", "stor9"} },
			Problem{"site.yaml", KindHostProfile, "gpu-base", "interfaces[bond0].link", ""}},
		{"bond member repeated", func(ds []Document) { ds[0].NetworkLinks[1].Members = []string{"stor0", "stor0"} },
			Problem{"site.yaml", KindNetworkLink, "storage-bond", "members[1]", ""}},
		{"bad bond mode", func(ds []Document) { ds[0].NetworkLinks[1].BondMode = "lacp" },
			Problem{"site.yaml", KindNetworkLink, "storage-bond", "bond_mode", ""}},
		{"VLAN range", func(ds []Document) { ds[0].Networks[1].VLAN = 4095 },
			Problem{"site.yaml", KindNetwork, "storage", "vlan", ""}},
		{"duplicate BMC address", func(ds []Document) { ds[1].Nodes[0].BMCAddress = "10.10.0.1" },
			Problem{"rack-a.yaml", KindNode, "gpu-04", "bmc_address", ""}},
		{"duplicate hostname", func(ds []Document) { ds[1].Nodes[0].Hostname = "gpu-01" },
			Problem{"rack-a.yaml", KindNode, "gpu-01", "nodes[0]", ""}},
		{"hostname syntax", func(ds []Document) { ds[1].Nodes[0].Hostname = "GPU_04" },
			Problem{"rack-a.yaml", KindNode, "GPU_04", "hostname", ""}},
		{"boot disk selector empty", func(ds []Document) { ds[0].HardwareProfiles[0].BootDisk = &BootDisk{} },
			Problem{"site.yaml", KindHardwareProfile, "h100-board", "boot_disk", ""}},
		{"boot disk path", func(ds []Document) { ds[0].HardwareProfiles[0].BootDisk = &BootDisk{Path: "sda"} },
			Problem{"site.yaml", KindHardwareProfile, "h100-board", "boot_disk.path", ""}},
		{"root larger than boot disk", func(ds []Document) { ds[0].HostProfiles[1].RootSizeGB = 2000 },
			Problem{"site.yaml", KindHostProfile, "gpu-h100", "root_size_gb", ""}},
		{"PCI address syntax", func(ds []Document) { ds[0].HardwareProfiles[0].DeviceAliases[0].PCIAddress = "17:00.0" },
			Problem{"site.yaml", KindHardwareProfile, "h100-board", "device_aliases[0].pci_address", ""}},
		{"RoCE rail CIDR", func(ds []Document) { ds[1].Nodes[0].RoCERails[0].IPv4CIDR = "fd00::1/64" },
			Problem{"rack-a.yaml", KindNode, "gpu-04", "roce_rails[0].ipv4_cidr", ""}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			docs := site()
			tc.mutate(docs)
			d, err := Compose(docs...)
			if err == nil {
				err = Validate(d)
			}
			var inv *InvalidDesignError
			require.ErrorAs(t, err, &inv)
			var got []Problem
			for _, p := range inv.Problems {
				assert.NotEmpty(t, p.Message)
				got = append(got, Problem{p.Document, p.Kind, p.Object, p.Field, ""})
			}
			assert.Contains(t, got, tc.want, "problems: %v", inv.Problems)
		})
	}
}

func TestPlanFromNothingOnboardsEveryNode(t *testing.T) {
	p, err := MakePlan(Design{}, mustCompose(site()...))
	require.NoError(t, err)
	assert.Len(t, p.Onboard, 6)
	assert.Empty(t, p.Reconfigure)
	assert.Contains(t, p.Lines(), "+ node gpu-01 (onboard)")
	assert.Len(t, p.Changes, 1+2+2+2+6)
}

func TestPlanOneAddressIsOneLine(t *testing.T) {
	old := mustCompose(site()...)
	docs := site()
	docs[1].Nodes[1].Addresses[1].Address = "10.0.1.99"
	next := mustCompose(docs...)
	require.NoError(t, Validate(next))
	p, err := MakePlan(old, next)
	require.NoError(t, err)
	assert.Equal(t, []string{"~ node gpu-05: addresses[1].address: 10.0.1.15 -> 10.0.1.99 (network reconfigured)"}, p.Lines())
	assert.Equal(t, []string{"gpu-05"}, p.Reconfigure)
	assert.Empty(t, p.Onboard)

	same, err := MakePlan(next, next)
	require.NoError(t, err)
	assert.True(t, same.Empty())
	assert.NotEqual(t, p.Hash, same.Hash, "the hash names the plan's start and end")
	again, _ := MakePlan(old, next)
	assert.Equal(t, p.Hash, again.Hash, "the same plan hashes the same")
}

// A profile change reconfigures every node under it, each on one line.
func TestPlanProfileChangeReconfiguresItsNodes(t *testing.T) {
	old := mustCompose(site()...)
	docs := site()
	docs[0].NetworkLinks[1].BondMode = "active-backup"
	next := mustCompose(docs...)
	p, err := MakePlan(old, next)
	require.NoError(t, err)
	assert.Len(t, p.Reconfigure, 6)
	assert.Equal(t, "~ network_link storage-bond: bond_mode: 802.3ad -> active-backup", p.Lines()[0])
	assert.Contains(t, p.Lines(), "~ node gpu-03: effective network (network reconfigured)")
}
