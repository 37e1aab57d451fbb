package maassim

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
)

// The design's interface, subnet and boot-disk operations through
// maasflow's own client (shared/maas), as the onboarding performs them:
// every operation and each error MAAS gives for it.

const (
	storageVID  = 120
	storageCIDR = "10.30.0.0/24"
)

// designHarness is a simulator with a tagged storage VLAN, a Ready machine
// of three NICs and two disks, and a client.
type designHarness struct {
	*harness
	c   *maas.Client
	sid string
}

func newDesignHarness(t *testing.T) *designHarness {
	t.Helper()
	h := newHarness(t, func(o *Options) {
		o.TaggedVLANs = []TaggedVLAN{{VID: storageVID, CIDR: storageCIDR, MTU: 9000}}
	})
	c, err := maas.NewClient(h.srv.URL+"/MAAS", domain.Secret(testKey))
	require.NoError(t, err)
	return &designHarness{harness: h, c: c, sid: h.gpuHost(t, 1, Hardware{})}
}

func (d *designHarness) ifaces(t *testing.T) map[string]maas.Interface {
	t.Helper()
	list, err := d.c.Interfaces(context.Background(), d.sid)
	require.NoError(t, err)
	out := map[string]maas.Interface{}
	for _, i := range list {
		out[i.Name] = i
	}
	return out
}

// effectiveMTU reads effective_mtu, which the client does not decode.
func (d *designHarness) effectiveMTU(t *testing.T, id int) int {
	t.Helper()
	r := d.call(t, http.MethodGet, "nodes/"+d.sid+"/interfaces/"+strconv.Itoa(id)+"/", "", nil)
	require.Equal(t, http.StatusOK, r.code, "body: %s", r.body)
	return int(r.obj(t)["effective_mtu"].(float64))
}

func (d *designHarness) storageSubnet(t *testing.T) maas.Subnet {
	t.Helper()
	subnets, err := d.c.Subnets(context.Background())
	require.NoError(t, err)
	for _, sn := range subnets {
		if sn.CIDR == storageCIDR {
			return sn
		}
	}
	t.Fatalf("no subnet %s among %+v", storageCIDR, subnets)
	return maas.Subnet{}
}

// badFields is the form error MAAS answered.
func badFields(t *testing.T, err error) map[string][]string {
	t.Helper()
	var bad *maas.MAASBadRequestError
	require.ErrorAs(t, err, &bad)
	return bad.Fields
}

func TestFidelityDesignBondVLANStaticLink(t *testing.T) {
	d := newDesignHarness(t)
	ctx := context.Background()
	before := d.ifaces(t)
	eno2, eno3 := before["eno2"], before["eno3"]

	bond, err := d.c.CreateBond(ctx, d.sid, maas.BondParams{Name: "bond0", Parents: []int{eno2.ID, eno3.ID}, Mode: "802.3ad", MTU: 9000})
	require.NoError(t, err)
	assert.Equal(t, "bond", bond.Type)
	assert.Equal(t, []string{"eno2", "eno3"}, bond.Parents)
	assert.Equal(t, eno2.MACAddress, bond.MACAddress, "a bond takes its first parent's MAC")
	assert.Equal(t, 9000, d.effectiveMTU(t, bond.ID))
	assert.Equal(t, 9000, d.effectiveMTU(t, eno2.ID), "the bond's MTU reaches its members")
	after := d.ifaces(t)
	assert.Equal(t, []string{"bond0"}, after["eno2"].Children)
	assert.Empty(t, after["eno2"].Links, "a bond member's links are cleared")

	sn := d.storageSubnet(t)
	require.NotNil(t, sn.VLAN)
	assert.Equal(t, storageVID, sn.VLAN.VID)
	vl, err := d.c.CreateVLANInterface(ctx, d.sid, bond.ID, sn.VLAN.ID, 0)
	require.NoError(t, err)
	assert.Equal(t, "bond0.120", vl.Name, "MAAS names it <parent>.<vid>")
	assert.Equal(t, "vlan", vl.Type)
	assert.Equal(t, []string{"bond0"}, vl.Parents)
	assert.Equal(t, 9000, d.effectiveMTU(t, vl.ID), "the tagged VLAN's MTU")

	linked, err := d.c.LinkSubnet(ctx, d.sid, vl.ID, maas.LinkSubnetParams{Mode: maas.LinkModeStatic, SubnetID: sn.ID, IPAddress: "10.30.0.17"})
	require.NoError(t, err)
	require.Len(t, linked.Links, 1)
	assert.Equal(t, "static", linked.Links[0].Mode)
	assert.Equal(t, "10.30.0.17", linked.Links[0].IPAddress)

	// The errors of a static link.
	_, err = d.c.LinkSubnet(ctx, d.sid, vl.ID, maas.LinkSubnetParams{Mode: maas.LinkModeStatic, SubnetID: sn.ID, IPAddress: "10.31.0.5"})
	assert.Equal(t, []string{"IP address is not in the given subnet '10.30.0.0/24'."}, badFields(t, err)["ip_address"])
	_, err = d.c.LinkSubnet(ctx, d.sid, vl.ID, maas.LinkSubnetParams{Mode: maas.LinkModeStatic, SubnetID: sn.ID, IPAddress: "10.30.0.17"})
	assert.Equal(t, []string{"IP address 10.30.0.17 is already in use."}, badFields(t, err)["ip_address"])
	_, err = d.c.LinkSubnet(ctx, d.sid, after["eno2"].ID, maas.LinkSubnetParams{Mode: maas.LinkModeAuto, SubnetID: 1})
	assert.Equal(t, []string{"Cannot link interface(eno2) when interface is in a bond(bond0)."}, badFields(t, err)["bond"])
}

func TestFidelityDesignInterfaceErrors(t *testing.T) {
	d := newDesignHarness(t)
	ctx := context.Background()
	ifs := d.ifaces(t)
	eno1, eno2, eno3 := ifs["eno1"], ifs["eno2"], ifs["eno3"]
	sn := d.storageSubnet(t)

	cases := []struct {
		name string
		call func() error
		want map[string][]string
	}{
		{"bond: unknown parent", func() error {
			_, err := d.c.CreateBond(ctx, d.sid, maas.BondParams{Name: "bond0", Parents: []int{eno2.ID, 9999}})
			return err
		}, map[string][]string{"parents": {"Select a valid choice. 9999 is not one of the available choices."}}},
		{"bond: no parents", func() error {
			_, err := d.c.CreateBond(ctx, d.sid, maas.BondParams{Name: "bond0"})
			return err
		}, map[string][]string{"parents": {"A bond interface must have one or more parents."}}},
		{"bond: bad mode and MTU", func() error {
			_, err := d.c.CreateBond(ctx, d.sid, maas.BondParams{Name: "bond0", Parents: []int{eno2.ID}, Mode: "lacp", MTU: 500})
			return err
		}, map[string][]string{
			"mtu": {"Ensure this value is greater than or equal to 552."},
			// The client folds MAAS's double space after the first sentence.
			"bond_mode": {"'lacp' is not a valid bond_mode. It should be one of: 'balance-rr', 'active-backup', 'balance-xor', 'broadcast', '802.3ad', 'balance-tlb', 'balance-alb'."},
		}},
		{"bond: duplicate name", func() error {
			_, err := d.c.CreateBond(ctx, d.sid, maas.BondParams{Name: "eno1", Parents: []int{eno2.ID}})
			return err
		}, map[string][]string{"name": {"Node " + d.sid + " (gpu-1) already has an interface named 'eno1'."}}},
		{"vlan: unknown parent", func() error {
			_, err := d.c.CreateVLANInterface(ctx, d.sid, 9999, sn.VLAN.ID, 0)
			return err
		}, map[string][]string{"parent": {"Select a valid choice. 9999 is not one of the available choices."}}},
		{"vlan: untagged VLAN", func() error {
			_, err := d.c.CreateVLANInterface(ctx, d.sid, eno1.ID, eno1.VLAN.ID, 0)
			return err
		}, map[string][]string{"vlan": {"A VLAN interface can only belong to a tagged VLAN."}}},
		{"vlan: unknown VLAN", func() error {
			_, err := d.c.CreateVLANInterface(ctx, d.sid, eno1.ID, 4242, 0)
			return err
		}, map[string][]string{"vlan": {"Select a valid choice. That choice is not one of the available choices."}}},
		{"mtu below 552", func() error {
			_, err := d.c.SetInterfaceMTU(ctx, d.sid, eno1.ID, 551)
			return err
		}, map[string][]string{"mtu": {"Ensure this value is greater than or equal to 552."}}},
		{"subnet: bad DNS server", func() error {
			return d.c.SetSubnetDNS(ctx, sn.ID, []string{"10.30.0.2", "dns.example"})
		}, map[string][]string{"__all__": {"Invalid IP address: dns.example; provide a list of space-separated IP addresses"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, badFields(t, tc.call()))
		})
	}

	// On the wire, MAAS's own text.
	r := d.call(t, http.MethodPost, "nodes/"+d.sid+"/interfaces/", "create_bond", url.Values{"name": {"bond0"}, "parents": {strconv.Itoa(eno2.ID)}, "bond_mode": {"lacp"}})
	assert.Equal(t, http.StatusBadRequest, r.code)
	assert.Contains(t, string(r.body), `"'lacp' is not a valid bond_mode.  It should be one of: 'balance-rr',`)

	// Parents already in a bond, and a VLAN over a bond member.
	_, err := d.c.CreateBond(ctx, d.sid, maas.BondParams{Name: "bond0", Parents: []int{eno2.ID, eno3.ID}})
	require.NoError(t, err)
	_, err = d.c.CreateBond(ctx, d.sid, maas.BondParams{Name: "bond1", Parents: []int{eno3.ID}})
	assert.Equal(t, map[string][]string{"parents": {"Interfaces already in-use: eno3."}}, badFields(t, err))
	_, err = d.c.CreateVLANInterface(ctx, d.sid, eno2.ID, sn.VLAN.ID, 0)
	assert.Equal(t, map[string][]string{"parent": {"A VLAN interface can't have a parent that is already in a bond."}}, badFields(t, err))

	// Deployed machines keep their interfaces: creating one is a 409.
	d.deployed(t, d.sid, "")
	_, err = d.c.CreateVLANInterface(ctx, d.sid, eno1.ID, sn.VLAN.ID, 0)
	var conflict *maas.MAASConflictError
	require.ErrorAs(t, err, &conflict)
	assert.Equal(t, "Cannot create VLAN interface because the machine is not New, Ready, Allocated, or Broken.", conflict.Message)
}

func TestFidelityDesignMTUAndDNS(t *testing.T) {
	d := newDesignHarness(t)
	ctx := context.Background()
	eno1 := d.ifaces(t)["eno1"]
	sn := d.storageSubnet(t)

	_, err := d.c.SetInterfaceMTU(ctx, d.sid, eno1.ID, 1500)
	require.NoError(t, err)
	vl, err := d.c.CreateVLANInterface(ctx, d.sid, eno1.ID, sn.VLAN.ID, 0)
	require.NoError(t, err)
	// A VLAN interface above its parent's MTU is not refused: MAAS raises
	// the parent's effective MTU to its child's.
	_, err = d.c.SetInterfaceMTU(ctx, d.sid, vl.ID, 9000)
	require.NoError(t, err)
	assert.Equal(t, 9000, d.effectiveMTU(t, vl.ID))
	assert.Equal(t, 9000, d.effectiveMTU(t, eno1.ID))
	// Repeating sets the same value.
	_, err = d.c.SetInterfaceMTU(ctx, d.sid, vl.ID, 9000)
	require.NoError(t, err)
	// Lowering the parent lowers a child whose own MTU is larger.
	_, err = d.c.SetInterfaceMTU(ctx, d.sid, eno1.ID, 1500)
	require.NoError(t, err)
	assert.Equal(t, 1500, d.effectiveMTU(t, vl.ID))
	assert.Equal(t, 1500, d.effectiveMTU(t, eno1.ID))

	require.NoError(t, d.c.SetSubnetDNS(ctx, sn.ID, []string{"10.30.0.2", "10.30.0.3"}))
	assert.Equal(t, []string{"10.30.0.2", "10.30.0.3"}, d.storageSubnet(t).DNSServers)
	require.NoError(t, d.c.SetSubnetDNS(ctx, sn.ID, []string{"10.30.0.2", "10.30.0.3"}))
	assert.Equal(t, []string{"10.30.0.2", "10.30.0.3"}, d.storageSubnet(t).DNSServers)
}

func TestFidelityDesignSetBootDisk(t *testing.T) {
	d := newDesignHarness(t)
	ctx := context.Background()
	disks, err := d.c.BlockDevices(ctx, d.sid)
	require.NoError(t, err)
	require.Len(t, disks, 2)
	second := disks[1]
	assert.Equal(t, "nvme1n1", second.Name)

	require.NoError(t, d.c.SetBootDisk(ctx, d.sid, second.ID))
	boot := d.machine(t, d.sid)["boot_disk"].(map[string]any)
	assert.Equal(t, "nvme1n1", boot["name"])

	// Another machine's block device is not found on this one.
	other := d.gpuHost(t, 2, Hardware{})
	otherDisks, err := d.c.BlockDevices(ctx, other)
	require.NoError(t, err)
	err = d.c.SetBootDisk(ctx, d.sid, otherDisks[0].ID)
	var nf *maas.MAASNotFoundError
	require.ErrorAs(t, err, &nf)
	assert.Equal(t, "No BlockDevice matches the given query.", nf.Message)

	// Only a Ready machine takes a boot disk.
	_, err = d.c.Allocate(ctx, d.sid)
	require.NoError(t, err)
	err = d.c.SetBootDisk(ctx, d.sid, disks[0].ID)
	var conflict *maas.MAASConflictError
	require.ErrorAs(t, err, &conflict)
	assert.Equal(t, "Cannot set as boot disk because the machine is not Ready.", conflict.Message)
}

func TestFidelityDesignDeleteParentInterface(t *testing.T) {
	d := newDesignHarness(t)
	ctx := context.Background()
	ifs := d.ifaces(t)
	bond, err := d.c.CreateBond(ctx, d.sid, maas.BondParams{Name: "bond0", Parents: []int{ifs["eno2"].ID, ifs["eno3"].ID}})
	require.NoError(t, err)
	sn := d.storageSubnet(t)
	_, err = d.c.CreateVLANInterface(ctx, d.sid, bond.ID, sn.VLAN.ID, 0)
	require.NoError(t, err)

	// A bond losing one member keeps the other.
	r := d.call(t, http.MethodDelete, "nodes/"+d.sid+"/interfaces/"+strconv.Itoa(ifs["eno2"].ID)+"/", "", nil)
	require.Equal(t, http.StatusNoContent, r.code, "body: %s", r.body)
	assert.Equal(t, []string{"eno3"}, d.ifaces(t)["bond0"].Parents)

	// Deleting the bond deletes the VLAN interface it was the only parent of.
	r = d.call(t, http.MethodDelete, "nodes/"+d.sid+"/interfaces/"+strconv.Itoa(bond.ID)+"/", "", nil)
	require.Equal(t, http.StatusNoContent, r.code, "body: %s", r.body)
	left := d.ifaces(t)
	assert.NotContains(t, left, "bond0.120")
	assert.Empty(t, left["eno3"].Children)
}
