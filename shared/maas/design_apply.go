package maas

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/maasflow/maasflow/shared/design"
	"github.com/maasflow/maasflow/shared/domain"
)

// ApplyInterfaceOps performs, in order, the operations design.NetworkOps
// lists for a machine, each only when MAAS does not already show its
// effect, so that a repeated call (a retried activity) changes nothing
// more: a bond or VLAN interface that exists by name is not created
// again, a subnet link with the designed address is not made again, DNS
// servers already set are not set again. MTUs are always set (MAAS sets
// the same value again). Interfaces an op names (bond0, bond0.120) and
// subnets (by CIDR) are resolved against what MAAS reports, read once and
// again after each creation. It returns how many operations changed
// something.
//
// Errors: InterfaceOpError when an op cannot be resolved (no subnet with
// the CIDR, a VLAN whose VID is not the design's, an interface that is
// not there, a name taken by an interface of another kind); MAAS errors.
func (c *Client) ApplyInterfaceOps(ctx context.Context, systemID string, ops []design.InterfaceOp) (int, error) {
	ifaces, err := c.Interfaces(ctx, systemID)
	if err != nil {
		return 0, err
	}
	subnets, err := c.Subnets(ctx)
	if err != nil {
		return 0, err
	}
	changed := 0
	for k, op := range ops {
		done, err := c.applyOp(ctx, systemID, op, ifaces, subnets)
		if err != nil {
			var oe *InterfaceOpError
			if errors.As(err, &oe) {
				oe.Index = k
			}
			return changed, err
		}
		if !done {
			continue
		}
		changed++
		switch op.Op {
		case design.OpCreateBond, design.OpCreateVLAN, design.OpLinkSubnet:
			if ifaces, err = c.Interfaces(ctx, systemID); err != nil {
				return changed, err
			}
		case design.OpSubnetDNS:
			if subnets, err = c.Subnets(ctx); err != nil {
				return changed, err
			}
		}
	}
	return changed, nil
}

// InterfaceOpError says an operation of a machine's design cannot be
// performed against what MAAS reports of it.
type InterfaceOpError struct {
	SystemID string `json:"system_id"`
	Index    int    `json:"index"`
	Op       string `json:"op"`
	Reason   string `json:"reason"`
}

// Class needs an operator: the design or the machine must change before
// the operation can be performed.
func (*InterfaceOpError) Class() domain.ErrorClass { return domain.ErrorNeedsOperator }

func (e *InterfaceOpError) Error() string {
	return fmt.Sprintf("maas %s: design operation %d (%s): %s", e.SystemID, e.Index, e.Op, e.Reason)
}

// applyOp performs one op unless its effect is there; it reports whether
// it called MAAS to change something.
func (c *Client) applyOp(ctx context.Context, systemID string, op design.InterfaceOp, ifaces []Interface, subnets []Subnet) (bool, error) {
	fail := func(format string, args ...any) (bool, error) {
		return false, &InterfaceOpError{SystemID: systemID, Op: op.Op, Reason: fmt.Sprintf(format, args...)}
	}
	switch op.Op {
	case design.OpSetMTU:
		i, ok := findInterface(ifaces, op.InterfaceID, op.Interface)
		if !ok {
			return fail("no interface %s", ifaceLabel(op))
		}
		_, err := c.SetInterfaceMTU(ctx, systemID, i.ID, op.MTU)
		return err == nil, err
	case design.OpCreateBond:
		if i, ok := findInterface(ifaces, 0, op.Interface); ok {
			if i.Type != "bond" {
				return fail("interface %s exists and is %s, not a bond", op.Interface, i.Type)
			}
			return false, nil
		}
		_, err := c.CreateBond(ctx, systemID, BondParams{Name: op.Interface, Parents: op.Parents, Mode: op.BondMode, MTU: op.MTU})
		return err == nil, err
	case design.OpCreateVLAN:
		parent, ok := findInterface(ifaces, op.InterfaceID, op.Interface)
		if !ok {
			return fail("no parent interface %s", ifaceLabel(op))
		}
		sn, ok := findSubnet(subnets, op.CIDR)
		if !ok || sn.VLAN == nil {
			return fail("MAAS has no subnet %s", op.CIDR)
		}
		if sn.VLAN.VID != op.VLAN {
			return fail("subnet %s is on VLAN %d in MAAS, the design says %d", op.CIDR, sn.VLAN.VID, op.VLAN)
		}
		for _, i := range ifaces {
			if i.Type == "vlan" && slices.Contains(i.Parents, parent.Name) && i.VLAN != nil && i.VLAN.ID == sn.VLAN.ID {
				return false, nil
			}
		}
		_, err := c.CreateVLANInterface(ctx, systemID, parent.ID, sn.VLAN.ID, op.MTU)
		return err == nil, err
	case design.OpLinkSubnet:
		i, ok := findInterface(ifaces, op.InterfaceID, op.Interface)
		if !ok {
			return fail("no interface %s", ifaceLabel(op))
		}
		sn, ok := findSubnet(subnets, op.CIDR)
		if !ok {
			return fail("MAAS has no subnet %s", op.CIDR)
		}
		for _, l := range i.Links {
			if l.Subnet == nil || l.Subnet.ID != sn.ID {
				continue
			}
			if strings.EqualFold(l.Mode, op.Mode) && (op.Address == "" || l.IPAddress == op.Address) {
				return false, nil
			}
			// Another link on the subnet (an address the design no longer
			// has): replace it rather than add a second one.
			if _, err := c.UnlinkSubnet(ctx, systemID, i.ID, l.ID); err != nil {
				return false, err
			}
		}
		_, err := c.LinkSubnet(ctx, systemID, i.ID, LinkSubnetParams{Mode: op.Mode, SubnetID: sn.ID, IPAddress: op.Address})
		return err == nil, err
	case design.OpSubnetDNS:
		sn, ok := findSubnet(subnets, op.CIDR)
		if !ok {
			return fail("MAAS has no subnet %s", op.CIDR)
		}
		if slices.Equal(sn.DNSServers, op.DNSServers) {
			return false, nil
		}
		err := c.SetSubnetDNS(ctx, sn.ID, op.DNSServers)
		return err == nil, err
	}
	return fail("unknown operation")
}

// findInterface finds an interface by id, or by name when id is 0.
func findInterface(ifaces []Interface, id int, name string) (Interface, bool) {
	for _, i := range ifaces {
		if (id != 0 && i.ID == id) || (id == 0 && name != "" && i.Name == name) {
			return i, true
		}
	}
	return Interface{}, false
}

func findSubnet(subnets []Subnet, cidr string) (Subnet, bool) {
	for _, sn := range subnets {
		if sn.CIDR == cidr {
			return sn, true
		}
	}
	return Subnet{}, false
}

func ifaceLabel(op design.InterfaceOp) string {
	if op.InterfaceID != 0 {
		return fmt.Sprintf("id %d", op.InterfaceID)
	}
	return op.Interface
}

// ObservedInterfaces reads the machine's interfaces as the design's drift
// check compares them (design.NetworkDrift): name, type, effective MTU,
// parents and subnet links (CIDR, lower-case mode, address). A read.
func (c *Client) ObservedInterfaces(ctx context.Context, systemID string) ([]design.ObservedInterface, error) {
	ws, err := c.wireInterfaces(ctx, systemID)
	if err != nil {
		return nil, err
	}
	out := make([]design.ObservedInterface, 0, len(ws))
	for _, w := range ws {
		o := design.ObservedInterface{Name: w.Name, Type: w.Type, MTU: w.EffectiveMTU, Parents: nilIfEmpty(w.Parents)}
		for _, l := range w.Links {
			link := l.link()
			if link.Subnet == nil {
				continue
			}
			o.Links = append(o.Links, design.ObservedLink{CIDR: link.Subnet.CIDR, Mode: strings.ToLower(link.Mode), Address: link.IPAddress})
		}
		out = append(out, o)
	}
	return out, nil
}

// DesignNICs are the machine's NICs as the design's operations address
// them: each network node device's PCI address and physical interface,
// its name taken from ifaces when MAAS nested only the interface's id.
func DesignNICs(devices []NodeDevice, ifaces []Interface) []design.NIC {
	var out []design.NIC
	for _, d := range devices {
		if d.Interface == nil || d.PCIAddress == "" {
			continue
		}
		nic := design.NIC{PCIAddress: d.PCIAddress, InterfaceID: d.Interface.ID, Name: d.Interface.Name}
		if i, ok := findInterface(ifaces, nic.InterfaceID, ""); ok && nic.Name == "" {
			nic.Name = i.Name
		}
		out = append(out, nic)
	}
	return out
}
