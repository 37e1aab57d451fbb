package reconcile

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/design"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
	"github.com/maasflow/maasflow/shared/store"
)

// netDesign names gpu1 with one untagged interface on a bonded pair:
// bond0 over two NICs, MTU 9000, a static address.
func netDesign() *design.Design {
	return &design.Design{
		HardwareProfiles: []design.HardwareProfile{{Name: "board", DeviceAliases: []design.DeviceAlias{
			{Alias: "s0", PCIAddress: "0000:1a:00.0"}, {Alias: "s1", PCIAddress: "0000:2c:00.0"},
		}}},
		Networks:     []design.Network{{Name: "storage", CIDR: "10.1.0.0/24", MTU: 9000}},
		NetworkLinks: []design.NetworkLink{{Name: "sb", BondMode: "802.3ad", Members: []string{"s0", "s1"}, MTU: 9000}},
		HostProfiles: []design.HostProfile{{Name: "gpu", HardwareProfile: "board",
			Interfaces: []design.InterfaceSpec{{Name: "bond0", Link: "sb", Networks: []string{"storage"}}}}},
		Nodes: []design.NodeAssignment{{Hostname: "gpu1", BMCAddress: "10.9.0.1", HostProfile: "gpu",
			Addresses: []design.Address{{Interface: "bond0", Network: "storage", Address: "10.1.0.11"}}}},
	}
}

func builtNode(id, host, sid string) domain.Node {
	n := node(id, host, sid)
	n.AsBuilt = &domain.AsBuilt{NICs: []domain.BuiltNIC{
		{PCIAddress: "0000:1a:00.0", Name: "ens1"}, {PCIAddress: "0000:2c:00.0", Name: "ens2"},
	}}
	return n
}

func asDesigned(mtu int) []design.ObservedInterface {
	return []design.ObservedInterface{
		{Name: "ens1", Type: "physical", MTU: mtu}, {Name: "ens2", Type: "physical", MTU: mtu},
		{Name: "bond0", Type: "bond", MTU: mtu, Parents: []string{"ens2", "ens1"},
			Links: []design.ObservedLink{{CIDR: "10.1.0.0/24", Mode: "static", Address: "10.1.0.11"}}},
	}
}

// A node whose MAAS interfaces left its design is network_mismatch drift
// naming every difference; one that matches, a node the design does not
// name, and a node whose interfaces were not read are not.
func TestCompareNetwork(t *testing.T) {
	deployed := []maas.Machine{machine("aaa", "gpu1", "Deployed", "on"), machine("bbb", "gpu2", "Deployed", "on")}
	obs := func(ifaces map[string][]design.ObservedInterface, nodes ...domain.Node) Observation {
		return Observation{SiteID: "s1", Now: t0, Nodes: nodes, Machines: deployed, Design: netDesign(), Interfaces: ifaces}
	}
	t.Run("matches", func(t *testing.T) {
		got := Compare(obs(map[string][]design.ObservedInterface{"aaa": asDesigned(9000)}, builtNode("n1", "gpu1", "aaa")))
		assert.Empty(t, got)
	})
	t.Run("MTU and address changed", func(t *testing.T) {
		ifaces := asDesigned(1500)
		ifaces[2].Links[0].Address = "10.1.0.99"
		got := Compare(obs(map[string][]design.ObservedInterface{"aaa": ifaces}, builtNode("n1", "gpu1", "aaa")))
		assert.Equal(t, []string{"n1 network_mismatch interfaces as the site design says → " +
			"interface bond0: MTU 1500, designed 9000; " +
			"interface bond0: network storage address 10.1.0.99 (static), designed 10.1.0.11 (static)"}, kinds(got))
	})
	t.Run("bond gone", func(t *testing.T) {
		got := Compare(obs(map[string][]design.ObservedInterface{"aaa": asDesigned(9000)[:2]}, builtNode("n1", "gpu1", "aaa")))
		assert.Equal(t, []string{"n1 network_mismatch interfaces as the site design says → interface bond0: bond missing"}, kinds(got))
	})
	t.Run("not named, not read, no design", func(t *testing.T) {
		assert.Empty(t, Compare(obs(map[string][]design.ObservedInterface{"bbb": nil}, builtNode("n2", "gpu2", "bbb"))))
		assert.Empty(t, Compare(obs(nil, builtNode("n1", "gpu1", "aaa"))))
		o := obs(map[string][]design.ObservedInterface{"aaa": nil}, builtNode("n1", "gpu1", "aaa"))
		o.Design = nil
		assert.Empty(t, Compare(o))
	})
}

func TestDesignedNetwork(t *testing.T) {
	d := netDesign()
	assert.True(t, DesignedNetwork(d, builtNode("n1", "gpu1", "aaa")))
	assert.False(t, DesignedNetwork(d, node("n1", "gpu1", "aaa")), "no as-built NICs to find the aliases in")
	assert.False(t, DesignedNetwork(d, builtNode("n2", "gpu2", "bbb")), "not in the design")
	assert.False(t, DesignedNetwork(nil, builtNode("n1", "gpu1", "aaa")))
	retired := builtNode("n1", "gpu1", "aaa")
	retired.Status = domain.NodeRetired
	assert.False(t, DesignedNetwork(d, retired))
}

// netMAAS adds the interface read to the listing fake.
type netMAAS struct {
	*fakeMAAS
	ifaces map[string][]design.ObservedInterface
	reads  []string
}

func (f *netMAAS) ObservedInterfaces(_ context.Context, sid string) ([]design.ObservedInterface, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads = append(f.reads, sid)
	return f.ifaces[sid], nil
}

func (f *netMAAS) ForSite(context.Context, string) (MachineReader, error) { return f, nil }

// A run reads the interfaces of the designed nodes only, at most
// NetworkReads of them, and opens network_mismatch for the one that
// drifted; successive runs read another window.
func TestRunReadsDesignedNetworksWithinTheBound(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	d := netDesign()
	for _, host := range []string{"gpu2", "gpu3"} {
		n := d.Nodes[0]
		n.Hostname, n.BMCAddress = host, "10.9.0."+host[3:]
		n.Addresses = []design.Address{{Interface: "bond0", Network: "storage", Address: "10.1.0.1" + host[3:]}}
		d.Nodes = append(d.Nodes, n)
	}
	_, err := h.st.PutSiteDesign(ctx, store.SiteDesign{SiteID: "s1", Design: *d}, 0)
	require.NoError(t, err)
	nm := &netMAAS{fakeMAAS: h.maas, ifaces: map[string][]design.ObservedInterface{}}
	for k, host := range []string{"gpu1", "gpu2", "gpu3", "gpu4"} { // gpu4: not in the design
		sid := "sid" + host[3:]
		n := builtNode("n"+host[3:], host, sid)
		require.NoError(t, h.st.CreateNode(ctx, n))
		h.maas.machines[sid] = machine(sid, host, "Deployed", "on")
		ifaces := asDesigned(9000)
		ifaces[2].Links[0].Address = fmt.Sprintf("10.1.0.1%d", k+1)
		nm.ifaces[sid] = ifaces
	}
	nm.ifaces["sid2"][2].MTU = 1500 // gpu2's bond drifted
	h.r = New(Config{NetworkReads: 3}, Deps{Store: h.st, MAAS: nm, Executions: execs{}, Events: h.bus, Clock: h.clk})

	run := h.run(t)
	assert.ElementsMatch(t, []string{"sid1", "sid2", "sid3"}, nm.reads, "designed nodes only")
	assert.Equal(t, map[string]int{domain.DriftNetworkMismatch: 1}, run.DriftByKind)
	assert.Contains(t, h.open(t)["n2 "+domain.DriftNetworkMismatch].Observed, "interface bond0: MTU 1500, designed 9000")
	require.Len(t, run.Sites, 1)
	assert.Equal(t, 2+3, run.Sites[0].MAASCalls, "two listings and three interface reads")

	h.r = New(Config{NetworkReads: 2}, Deps{Store: h.st, MAAS: nm, Executions: execs{}, Events: h.bus, Clock: h.clk})
	seen := map[string]bool{}
	for range 3 {
		nm.reads = nil
		run = h.run(t)
		assert.Len(t, nm.reads, 2)
		assert.Equal(t, 1, run.Sites[0].NetworkSkipped)
		for _, sid := range nm.reads {
			seen[sid] = true
		}
	}
	assert.Len(t, seen, 3, "successive runs read every designed node")
}
