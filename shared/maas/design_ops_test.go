package maas

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDesignCallsSendMAASForms(t *testing.T) {
	ctx := context.Background()
	iface := `{"id":77,"name":"bond0","type":"bond","links":[]}`
	f := newFakeMAAS(t).
		on(http.MethodPost, "nodes/8x4frw/interfaces/", "create_bond", http.StatusOK, iface).
		on(http.MethodPost, "nodes/8x4frw/interfaces/", "create_vlan", http.StatusOK, `{"id":78,"name":"bond0.120","type":"vlan","links":[]}`).
		on(http.MethodPut, "nodes/8x4frw/interfaces/12/", "", http.StatusOK, `{"id":12,"name":"enp26s0f0np0","type":"physical","links":[]}`).
		on(http.MethodPut, "subnets/7/", "", http.StatusOK, `{"id":7}`).
		on(http.MethodPost, "nodes/8x4frw/blockdevices/3/", "set_boot_disk", http.StatusOK, `"OK"`)
	c := f.client()

	got, err := c.CreateBond(ctx, "8x4frw", BondParams{Name: "bond0", Parents: []int{12, 13}, Mode: "802.3ad", MTU: 9000})
	require.NoError(t, err)
	assert.Equal(t, 77, got.ID)
	vl, err := c.CreateVLANInterface(ctx, "8x4frw", 77, 5005, 9000)
	require.NoError(t, err)
	assert.Equal(t, "bond0.120", vl.Name)
	_, err = c.SetInterfaceMTU(ctx, "8x4frw", 12, 9000)
	require.NoError(t, err)
	require.NoError(t, c.SetSubnetDNS(ctx, 7, []string{"10.0.0.2", "10.0.0.3"}))
	require.NoError(t, c.SetBootDisk(ctx, "8x4frw", 3))

	reqs := f.requests()
	require.Len(t, reqs, 5)
	assert.Equal(t, url.Values{"name": {"bond0"}, "parents": {"12", "13"}, "bond_mode": {"802.3ad"}, "mtu": {"9000"}}, reqs[0].Form)
	assert.Equal(t, url.Values{"parent": {"77"}, "vlan": {"5005"}, "mtu": {"9000"}}, reqs[1].Form)
	assert.Equal(t, url.Values{"mtu": {"9000"}}, reqs[2].Form)
	assert.Equal(t, url.Values{"dns_servers": {"10.0.0.2", "10.0.0.3"}}, reqs[3].Form)
	assert.Equal(t, "set_boot_disk", reqs[4].Op)
}

// MAAS answers 409 to set_boot_disk unless the machine is Ready.
func TestSetBootDiskConflict(t *testing.T) {
	f := newFakeMAAS(t).on(http.MethodPost, "nodes/8x4frw/blockdevices/3/", "set_boot_disk", http.StatusConflict,
		"Cannot set as boot disk because the machine is not Ready.")
	err := f.client().SetBootDisk(context.Background(), "8x4frw", 3)
	var conflict *MAASConflictError
	require.ErrorAs(t, err, &conflict)
}
