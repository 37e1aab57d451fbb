package maas

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
)

// The interface and disk calls that configure a machine from its design
// (MAAS's src/maasserver/api/interfaces.py, forms/interface.py,
// api/subnets.py, api/blockdevices.py).

// BondParams is a bond to create: parents are physical interface ids.
type BondParams struct {
	Name    string
	Parents []int
	// Mode is a bond mode; empty takes MAAS's default, balance-rr (the
	// first of BOND_MODE_CHOICES, BondInterfaceForm's initial value).
	Mode string
	MTU  int
}

// CreateBond creates a bond over parents (POST nodes/{id}/interfaces/
// op=create_bond; "parents" repeated, "bond_mode", "mtu"). Not idempotent:
// a second call with the same name is a MAASBadRequestError (MAAS refuses
// a duplicate interface name), so a repeating caller reads Interfaces
// first.
func (c *Client) CreateBond(ctx context.Context, systemID string, p BondParams) (Interface, error) {
	const op = "create_bond"
	if err := requireArg(op, systemID, "name", p.Name); err != nil {
		return Interface{}, err
	}
	form := url.Values{"name": {p.Name}}
	for _, id := range p.Parents {
		form.Add("parents", strconv.Itoa(id))
	}
	setIf(form, "bond_mode", p.Mode)
	if p.MTU > 0 {
		form.Set("mtu", strconv.Itoa(p.MTU))
	}
	return c.interfacesOp(ctx, op, systemID, form)
}

// CreateVLANInterface creates a VLAN interface on parent (POST
// nodes/{id}/interfaces/ op=create_vlan; "vlan" is MAAS's VLAN object id,
// not the VID: read it from the subnet). Not idempotent: MAAS refuses a
// second VLAN interface for the same parent and VLAN.
func (c *Client) CreateVLANInterface(ctx context.Context, systemID string, parentID, vlanID, mtu int) (Interface, error) {
	form := url.Values{"parent": {strconv.Itoa(parentID)}, "vlan": {strconv.Itoa(vlanID)}}
	if mtu > 0 {
		form.Set("mtu", strconv.Itoa(mtu))
	}
	return c.interfacesOp(ctx, "create_vlan", systemID, form)
}

func (c *Client) interfacesOp(ctx context.Context, maasOp, systemID string, form url.Values) (Interface, error) {
	if err := requireArg(maasOp, systemID, "system_id", systemID); err != nil {
		return Interface{}, err
	}
	var w wireInterface
	if err := c.doJSON(ctx, request{
		op: maasOp, systemID: systemID, method: http.MethodPost,
		path: nodePath(systemID) + "interfaces/", maasOp: maasOp, form: form,
	}, &w); err != nil {
		return Interface{}, err
	}
	return w.iface(), nil
}

// SetInterfaceMTU sets an interface's MTU (PUT nodes/{id}/interfaces/{iface}/
// mtu; MAAS's form takes 552 and up). Repeating it sets the same value.
func (c *Client) SetInterfaceMTU(ctx context.Context, systemID string, interfaceID, mtu int) (Interface, error) {
	const op = "set interface mtu"
	if err := requireArg(op, systemID, "system_id", systemID); err != nil {
		return Interface{}, err
	}
	var w wireInterface
	if err := c.doJSON(ctx, request{
		op: op, systemID: systemID, method: http.MethodPut,
		path: nodePath(systemID) + "interfaces/" + strconv.Itoa(interfaceID) + "/",
		form: url.Values{"mtu": {strconv.Itoa(mtu)}},
	}, &w); err != nil {
		return Interface{}, err
	}
	return w.iface(), nil
}

// SetSubnetDNS sets a subnet's DNS servers (PUT subnets/{id}/ dns_servers,
// one value per server, as MAAS's SubnetForm reads the list). Repeating it
// sets the same list.
func (c *Client) SetSubnetDNS(ctx context.Context, subnetID int, servers []string) error {
	_, err := c.do(ctx, request{
		op: "set subnet dns", method: http.MethodPut,
		path: "subnets/" + strconv.Itoa(subnetID) + "/", form: url.Values{"dns_servers": servers},
	})
	return err
}

// SetBootDisk makes a physical block device the machine's boot disk (POST
// nodes/{id}/blockdevices/{dev}/ op=set_boot_disk). MAAS answers 409
// (MAASConflictError) unless the machine is Ready and 400 for a virtual
// block device. Repeating it sets the same disk.
func (c *Client) SetBootDisk(ctx context.Context, systemID string, blockDeviceID int) error {
	const op = "set_boot_disk"
	if err := requireArg(op, systemID, "system_id", systemID); err != nil {
		return err
	}
	_, err := c.do(ctx, request{
		op: op, systemID: systemID, method: http.MethodPost,
		path: nodePath(systemID) + "blockdevices/" + strconv.Itoa(blockDeviceID) + "/", maasOp: op,
	})
	return err
}
