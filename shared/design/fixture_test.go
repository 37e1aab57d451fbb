package design

import "fmt"

// site returns a valid two-document design: a site base with two host
// profiles (gpu-h100 inherits gpu-base), a hardware profile, two networks,
// two links and three nodes, and a rack file with three more nodes.
func site() []Document {
	base := Document{
		Name: "site.yaml",
		HardwareProfiles: []HardwareProfile{{
			Name: "h100-board",
			DeviceAliases: []DeviceAlias{
				{Alias: "pxe0", PCIAddress: "0000:17:00.0"},
				{Alias: "stor0", PCIAddress: "0000:1a:00.0"},
				{Alias: "stor1", PCIAddress: "0000:1a:00.1"},
				{Alias: "rail0", PCIAddress: "0000:3b:00.0"},
			},
			BootDisk: &BootDisk{Model: "SAMSUNG MZ1L2960", SizeGB: 960},
		}},
		Networks: []Network{
			{Name: "mgmt", CIDR: "10.0.0.0/24", MTU: 1500, Gateway: "10.0.0.1", DNSServers: []string{"10.0.0.2"}},
			{Name: "storage", CIDR: "10.0.1.0/24", VLAN: 120, MTU: 9000, Gateway: "10.0.1.1",
				Routes: []Route{{Destination: "10.9.0.0/16", Gateway: "10.0.1.254"}}},
		},
		NetworkLinks: []NetworkLink{
			{Name: "pxe", Members: []string{"pxe0"}, MTU: 1500},
			{Name: "storage-bond", BondMode: "802.3ad", Members: []string{"stor0", "stor1"}, MTU: 9000},
		},
		HostProfiles: []HostProfile{
			{Name: "gpu-base", HardwareProfile: "h100-board", Architecture: "amd64/generic", DistroSeries: "jammy", RootSizeGB: 200,
				Interfaces: []InterfaceSpec{
					{Name: "eno1", Link: "pxe", Networks: []string{"mgmt"}},
					{Name: "bond0", Link: "storage-bond", Networks: []string{"storage"}},
				},
				Labels: map[string]string{"tier": "gpu", "pool": "general"}},
			{Name: "gpu-h100", Parent: "gpu-base", DistroSeries: "noble",
				Interfaces: []InterfaceSpec{{Name: "bond0", Link: "storage-bond", Networks: []string{"storage"}}},
				Labels:     map[string]string{"pool": "training"}},
		},
	}
	rack := Document{Name: "rack-a.yaml"}
	for i := 1; i <= 6; i++ {
		n := NodeAssignment{
			Hostname: fmt.Sprintf("gpu-%02d", i), BMCAddress: fmt.Sprintf("10.10.0.%d", i), HostProfile: "gpu-h100", Rack: "a",
			Addresses: []Address{
				{Interface: "pxe0", Network: "mgmt", Address: fmt.Sprintf("10.0.0.%d", 10+i)},
				{Interface: "bond0", Network: "storage", Address: fmt.Sprintf("10.0.1.%d", 10+i)},
			},
			RoCERails: []RoCERail{{Interface: "rail0", IPv4CIDR: fmt.Sprintf("10.20.%d.0/31", i)}},
		}
		if i <= 3 {
			n.HostProfile = "gpu-base"
			base.Nodes = append(base.Nodes, n)
		} else {
			rack.Nodes = append(rack.Nodes, n)
		}
	}
	return []Document{base, rack}
}

func mustCompose(docs ...Document) Design {
	d, err := Compose(docs...)
	if err != nil {
		panic(err)
	}
	return d
}
