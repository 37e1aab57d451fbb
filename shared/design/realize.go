package design

import (
	"fmt"
	"slices"
	"strconv"
)

// What the onboarding's network step sees of a machine (read from MAAS's
// node devices and block devices) and the MAAS operations that make the
// machine match its effective design. Pure: the activity that reads MAAS
// and performs the operations calls these.

// NIC is a physical interface MAAS knows, found through its node device's
// PCI address.
type NIC struct {
	PCIAddress  string
	InterfaceID int
	Name        string
}

// Disk is a block device MAAS knows.
type Disk struct {
	ID        int
	Model     string
	Serial    string
	SizeBytes int64
	Path      string
}

// Interface operations, in MAAS's vocabulary.
const (
	OpSetMTU      = "set_mtu"     // PUT interfaces/{id} mtu
	OpCreateBond  = "create_bond" // POST interfaces op=create_bond
	OpCreateVLAN  = "create_vlan" // POST interfaces op=create_vlan
	OpLinkSubnet  = "link_subnet" // POST interfaces/{id} op=link_subnet
	OpSubnetDNS   = "subnet_dns"  // PUT subnets/{cidr} dns_servers
	LinkModeAuto  = "AUTO"        // MAAS picks the address from the subnet
	LinkModeFixed = "STATIC"      // the design's address
)

// InterfaceOp is one MAAS operation. Interface names the interface it acts
// on: a physical NIC by id (InterfaceID) or an interface an earlier op
// creates, by name (bond0, bond0.120).
type InterfaceOp struct {
	Op          string   `json:"op"`
	InterfaceID int      `json:"interface_id,omitempty"`
	Interface   string   `json:"interface,omitempty"`
	Parents     []int    `json:"parents,omitempty"`
	BondMode    string   `json:"bond_mode,omitempty"`
	VLAN        int      `json:"vlan,omitempty"`
	MTU         int      `json:"mtu,omitempty"`
	CIDR        string   `json:"cidr,omitempty"`
	Mode        string   `json:"mode,omitempty"`
	Address     string   `json:"address,omitempty"`
	DNSServers  []string `json:"dns_servers,omitempty"`
}

// MissingDeviceError says a device alias's PCI address is not on the
// machine: the hardware is not the designed one.
type MissingDeviceError struct {
	Hostname, Alias, PCIAddress string
}

func (e *MissingDeviceError) Error() string {
	return fmt.Sprintf("node %s: device alias %s (%s) is not on the machine", e.Hostname, e.Alias, e.PCIAddress)
}

// NetworkOps lists the operations, in order, that configure a machine's
// interfaces as its effective design says: per interface, the members'
// MTU, the bond over them (a single NIC is used as it is), a VLAN
// interface per tagged network, the subnet link (STATIC with the designed
// address, else AUTO); then each network's DNS servers once. NICs are
// matched by PCI address, never by name.
func NetworkOps(e Effective, nics []NIC) ([]InterfaceOp, error) {
	byPCI := map[string]NIC{}
	for _, n := range nics {
		byPCI[n.PCIAddress] = n
	}
	var ops []InterfaceOp
	dns := map[string]bool{}
	for _, in := range e.Interfaces {
		var ids []int
		for _, m := range in.Members {
			nic, ok := byPCI[m.PCIAddress]
			if !ok {
				return nil, &MissingDeviceError{Hostname: e.Hostname, Alias: m.Alias, PCIAddress: m.PCIAddress}
			}
			ids = append(ids, nic.InterfaceID)
			if in.MTU != 0 {
				ops = append(ops, InterfaceOp{Op: OpSetMTU, InterfaceID: nic.InterfaceID, MTU: in.MTU})
			}
		}
		target := InterfaceOp{InterfaceID: ids[0]}
		if in.BondMode != "" {
			ops = append(ops, InterfaceOp{Op: OpCreateBond, Interface: in.Name, Parents: ids, BondMode: in.BondMode, MTU: in.MTU})
			target = InterfaceOp{Interface: in.Name}
		}
		for _, nw := range in.Networks {
			link := target
			if nw.VLAN != 0 {
				parent := in.Name
				// CIDR names the subnet whose VLAN object MAAS's create_vlan
				// takes (its id, not the VID).
				ops = append(ops, InterfaceOp{Op: OpCreateVLAN, InterfaceID: target.InterfaceID, Interface: parent, VLAN: nw.VLAN, CIDR: nw.CIDR, MTU: nw.MTU})
				link = InterfaceOp{Interface: parent + "." + strconv.Itoa(nw.VLAN)}
			}
			link.Op, link.CIDR, link.Mode = OpLinkSubnet, nw.CIDR, LinkModeAuto
			if nw.Address != "" {
				link.Mode, link.Address = LinkModeFixed, nw.Address
			}
			ops = append(ops, link)
			if len(nw.DNSServers) > 0 && !dns[nw.CIDR] {
				dns[nw.CIDR] = true
				ops = append(ops, InterfaceOp{Op: OpSubnetDNS, CIDR: nw.CIDR, DNSServers: slices.Clone(nw.DNSServers)})
			}
		}
	}
	return ops, nil
}

// BootDiskError says the selector did not pick exactly one disk. More than
// one is an error too: taking the first match would make the boot disk
// depend on MAAS's listing order.
type BootDiskError struct {
	Hostname string
	Matches  int
}

func (e *BootDiskError) Error() string {
	if e.Matches == 0 {
		return fmt.Sprintf("node %s: no disk matches the boot-disk selector", e.Hostname)
	}
	return fmt.Sprintf("node %s: %d disks match the boot-disk selector; it must select one", e.Hostname, e.Matches)
}

// diskMatches reports whether d is a disk sel selects.
func diskMatches(sel BootDisk, d Disk) bool {
	return (sel.Model == "" || d.Model == sel.Model) && (sel.Serial == "" || d.Serial == sel.Serial) &&
		(sel.Path == "" || d.Path == sel.Path) && d.SizeBytes >= int64(sel.SizeGB)*1_000_000_000
}

// SelectBootDisk returns the one disk the effective design's selector
// matches (every field set must match; size_gb is the smallest size, in
// GB of 10^9 bytes as MAAS reports sizes), ok false when the design names
// no boot disk.
func SelectBootDisk(e Effective, disks []Disk) (Disk, bool, error) {
	sel := e.BootDisk
	if sel == nil {
		return Disk{}, false, nil
	}
	var match []Disk
	for _, d := range disks {
		if diskMatches(*sel, d) {
			match = append(match, d)
		}
	}
	if len(match) != 1 {
		return Disk{}, true, &BootDiskError{Hostname: e.Hostname, Matches: len(match)}
	}
	return match[0], true, nil
}
