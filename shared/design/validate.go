package design

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"
)

// MAAS's limits: a VLAN id is 0 (untagged) to 4094; an MTU 552 to 65535
// (MAAS's VLAN and interface forms).
const (
	maxVLAN = 4094
	minMTU  = 552
	maxMTU  = 65535
)

var (
	hostnamePattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
	pciPattern      = regexp.MustCompile(`^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$`)
	namePattern     = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)
	bondModes       = []string{"balance-rr", "active-backup", "balance-xor", "broadcast", "802.3ad", "balance-tlb", "balance-alb"}
)

// Validate checks the whole design before anything acts on it and returns
// an InvalidDesignError listing every problem (each naming document,
// object and field), or nil.
func Validate(d Design) error {
	v := validator{ix: newIndex(d)}
	for i, p := range d.HardwareProfiles {
		v.hardwareProfile(i, p)
	}
	for i, n := range d.Networks {
		v.network(i, n)
	}
	v.overlaps()
	for i, l := range d.NetworkLinks {
		v.link(i, l)
	}
	for i, p := range d.HostProfiles {
		v.hostProfile(i, p)
	}
	v.nodes()
	return v.ps.err()
}

type validator struct {
	ix *index
	ps problems
}

func (v *validator) add(kind, name, field, format string, args ...any) {
	v.ps.add(v.ix.d.SourceOf(kind, name), kind, name, field, format, args...)
}

func (v *validator) hardwareProfile(i int, p HardwareProfile) {
	k := KindHardwareProfile
	v.name(k, p.Name)
	aliases, pcis := map[string]int{}, map[string]int{}
	for j, a := range p.DeviceAliases {
		f := fmt.Sprintf("device_aliases[%d]", j)
		if !namePattern.MatchString(a.Alias) {
			v.add(k, p.Name, f+".alias", "must be a name of letters, digits, '.', '_' or '-'")
		} else if prev, dup := aliases[a.Alias]; dup {
			v.add(k, p.Name, f+".alias", "repeats device_aliases[%d]", prev)
		}
		aliases[a.Alias] = j
		if !pciPattern.MatchString(a.PCIAddress) {
			v.add(k, p.Name, f+".pci_address", "must be a PCI address such as 0000:1a:00.0 (lower-case hex)")
		} else if prev, dup := pcis[a.PCIAddress]; dup {
			v.add(k, p.Name, f+".pci_address", "repeats device_aliases[%d]", prev)
		}
		pcis[a.PCIAddress] = j
	}
	if b := p.BootDisk; b != nil {
		switch {
		case b.Model == "" && b.Serial == "" && b.SizeGB == 0 && b.Path == "":
			v.add(k, p.Name, "boot_disk", "must select by model, serial, size_gb or path")
		case b.SizeGB < 0:
			v.add(k, p.Name, "boot_disk.size_gb", "must not be negative")
		case b.Path != "" && !strings.HasPrefix(b.Path, "/dev/"):
			v.add(k, p.Name, "boot_disk.path", "must be a device path under /dev/")
		}
	}
}

func (v *validator) name(kind, name string) {
	if !namePattern.MatchString(name) {
		v.add(kind, name, "name", "must be 1-63 letters, digits, '.', '_' or '-'")
	}
}

func (v *validator) mtu(kind, name, field string, mtu int) {
	if mtu != 0 && (mtu < minMTU || mtu > maxMTU) {
		v.add(kind, name, field, "must be between %d and %d", minMTU, maxMTU)
	}
}

func (v *validator) network(_ int, n Network) {
	k := KindNetwork
	v.name(k, n.Name)
	p, err := netip.ParsePrefix(n.CIDR)
	switch {
	case err != nil:
		v.add(k, n.Name, "cidr", "is not a CIDR")
	case p != p.Masked():
		v.add(k, n.Name, "cidr", "has host bits set (the network is %s)", p.Masked())
	}
	if n.VLAN < 0 || n.VLAN > maxVLAN {
		v.add(k, n.Name, "vlan", "must be between 0 (untagged) and %d", maxVLAN)
	}
	v.mtu(k, n.Name, "mtu", n.MTU)
	if n.Gateway != "" {
		v.inside(k, n.Name, "gateway", n.Gateway, p, err == nil)
	}
	for j, s := range n.DNSServers {
		if _, err := netip.ParseAddr(s); err != nil {
			v.add(k, n.Name, fmt.Sprintf("dns_servers[%d]", j), "is not an IP address")
		}
	}
	for j, r := range n.Routes {
		f := fmt.Sprintf("routes[%d]", j)
		if _, err := netip.ParsePrefix(r.Destination); err != nil {
			v.add(k, n.Name, f+".destination", "is not a CIDR")
		}
		v.inside(k, n.Name, f+".gateway", r.Gateway, p, err == nil)
	}
}

// inside checks that s is an address of p (when p is known).
func (v *validator) inside(kind, name, field, s string, p netip.Prefix, known bool) netip.Addr {
	a, err := netip.ParseAddr(s)
	if err != nil {
		v.add(kind, name, field, "is not an IP address")
		return netip.Addr{}
	}
	if known && !p.Contains(a) {
		v.add(kind, name, field, "%s is outside the network %s", s, p)
	}
	return a
}

func (v *validator) overlaps() {
	ns := v.ix.d.Networks
	for i := range ns {
		a, err := netip.ParsePrefix(ns[i].CIDR)
		if err != nil {
			continue
		}
		for j := i + 1; j < len(ns); j++ {
			b, err := netip.ParsePrefix(ns[j].CIDR)
			if err == nil && a.Overlaps(b) {
				v.add(KindNetwork, ns[j].Name, "cidr", "%s overlaps network %q (%s, in %s)", b, ns[i].Name, a, v.ix.d.SourceOf(KindNetwork, ns[i].Name))
			}
		}
	}
}

func (v *validator) link(_ int, l NetworkLink) {
	k := KindNetworkLink
	v.name(k, l.Name)
	v.mtu(k, l.Name, "mtu", l.MTU)
	switch {
	case l.BondMode == "" && len(l.Members) != 1:
		v.add(k, l.Name, "members", "must hold exactly one device alias when bond_mode is empty")
	case l.BondMode != "" && !slices.Contains(bondModes, l.BondMode):
		v.add(k, l.Name, "bond_mode", "must be one of %s", strings.Join(bondModes, ", "))
	case l.BondMode != "" && len(l.Members) < 2:
		v.add(k, l.Name, "members", "a bond needs at least two members")
	}
	seen := map[string]int{}
	for j, m := range l.Members {
		if prev, dup := seen[m]; dup {
			v.add(k, l.Name, fmt.Sprintf("members[%d]", j), "repeats members[%d] (%s)", prev, m)
		}
		seen[m] = j
	}
}

func (v *validator) hostProfile(_ int, p HostProfile) {
	k := KindHostProfile
	v.name(k, p.Name)
	if p.Parent != "" {
		if _, ok := v.ix.profiles[p.Parent]; !ok {
			v.add(k, p.Name, "parent", "names host profile %q, which does not exist", p.Parent)
		}
	}
	if p.HardwareProfile != "" {
		if _, ok := v.ix.hardware[p.HardwareProfile]; !ok {
			v.add(k, p.Name, "hardware_profile", "names hardware profile %q, which does not exist", p.HardwareProfile)
		}
	}
	if p.RootSizeGB < 0 {
		v.add(k, p.Name, "root_size_gb", "must not be negative")
	}
	for j, in := range p.Interfaces {
		f := fmt.Sprintf("interfaces[%d]", j)
		if !namePattern.MatchString(in.Name) || len(in.Name) > 15 {
			v.add(k, p.Name, f+".name", "must be an interface name of at most 15 characters")
		}
		if in.Link != "" {
			if _, ok := v.ix.links[in.Link]; !ok {
				v.add(k, p.Name, f+".link", "names network link %q, which does not exist", in.Link)
			}
		}
		for m, nw := range in.Networks {
			if _, ok := v.ix.networks[nw]; !ok {
				v.add(k, p.Name, fmt.Sprintf("%s.networks[%d]", f, m), "names network %q, which does not exist", nw)
			}
		}
	}
	if _, err := v.ix.chain(p.Name); err != nil && strings.HasPrefix(err.Error(), "inheritance cycle") {
		v.add(k, p.Name, "parent", "%v", err)
		return
	}
	v.resolvedProfile(p)
}

// resolvedProfile checks what only the merged chain shows: each interface
// has a link, its bond members are aliases of the hardware profile, the
// link's MTU is not below its networks', and the root fits the boot disk.
func (v *validator) resolvedProfile(p HostProfile) {
	r, err := v.ix.resolveProfile(p.Name)
	if err != nil {
		return // a missing parent is reported above
	}
	k := KindHostProfile
	hw, hasHW := v.ix.hardware[r.hardwareProfile]
	aliases := map[string]bool{}
	for _, a := range hw.DeviceAliases {
		aliases[a.Alias] = true
	}
	for _, in := range r.interfaces {
		f := "interfaces[" + in.Name + "]"
		if in.Link == "" {
			v.add(k, p.Name, f+".link", "is required (set here or on a parent)")
			continue
		}
		l, ok := v.ix.links[in.Link]
		if !ok {
			continue
		}
		for j, m := range l.Members {
			if hasHW && !aliases[m] {
				v.add(k, p.Name, f+".link", "network link %q member %d (%s) is not a device alias of hardware profile %q", l.Name, j, m, hw.Name)
			}
		}
		if r.hardwareProfile == "" && len(l.Members) > 0 {
			v.add(k, p.Name, "hardware_profile", "is required (here or on a parent): interface %s names device aliases", in.Name)
		}
		for _, nw := range in.Networks {
			n, ok := v.ix.networks[nw]
			if ok && l.MTU != 0 && n.MTU > l.MTU {
				v.add(k, p.Name, f+".networks", "network %q has MTU %d, above network link %q's MTU %d", nw, n.MTU, l.Name, l.MTU)
			}
		}
	}
	if hasHW && hw.BootDisk != nil && hw.BootDisk.SizeGB > 0 && r.rootSizeGB > hw.BootDisk.SizeGB {
		v.add(k, p.Name, "root_size_gb", "%d GB does not fit the boot disk of hardware profile %q (%d GB)", r.rootSizeGB, hw.Name, hw.BootDisk.SizeGB)
	}
}

func (v *validator) nodes() {
	k := KindNode
	bmcs := map[netip.Addr]string{}
	addrs := map[netip.Addr]string{}
	for _, n := range v.ix.d.Nodes {
		if !hostnamePattern.MatchString(n.Hostname) {
			v.add(k, n.Hostname, "hostname", "must be a lower-case RFC 1123 label (letters, digits, '-', at most 63)")
		}
		if a, err := netip.ParseAddr(n.BMCAddress); err != nil {
			v.add(k, n.Hostname, "bmc_address", "is not an IP address")
		} else if prev, dup := bmcs[a]; dup {
			v.add(k, n.Hostname, "bmc_address", "%s is also node %q's BMC address", a, prev)
		} else {
			bmcs[a] = n.Hostname
		}
		if _, ok := v.ix.profiles[n.HostProfile]; !ok {
			v.add(k, n.Hostname, "host_profile", "names host profile %q, which does not exist", n.HostProfile)
			continue
		}
		r, err := v.ix.resolveProfile(n.HostProfile)
		if err != nil {
			continue // the profile's own problem is reported on it
		}
		v.nodeAddresses(n, r, addrs)
		v.nodeRails(n, r)
	}
}

func (v *validator) nodeAddresses(n NodeAssignment, r resolvedProfile, addrs map[netip.Addr]string) {
	k := KindNode
	for j, a := range n.Addresses {
		f := fmt.Sprintf("addresses[%d]", j)
		nw, ok := v.ix.networks[a.Network]
		if !ok {
			v.add(k, n.Hostname, f+".network", "names network %q, which does not exist", a.Network)
			continue
		}
		in, found := InterfaceSpec{}, false
		for _, c := range r.interfaces {
			if v.ix.addressOn(a, c, v.ix.links[c.Link]) {
				in, found = c, true
			}
		}
		if !found {
			v.add(k, n.Hostname, f+".interface", "%q is neither an interface of host profile %q nor the alias of a single-NIC one", a.Interface, n.HostProfile)
		} else if !slices.Contains(in.Networks, a.Network) {
			v.add(k, n.Hostname, f+".network", "network %q is not attached to interface %s", a.Network, in.Name)
		}
		p, perr := netip.ParsePrefix(nw.CIDR)
		ip := v.inside(k, n.Hostname, f+".address", a.Address, p, perr == nil)
		if !ip.IsValid() {
			continue
		}
		if perr == nil && p.Contains(ip) && (ip == p.Masked().Addr() || (ip.Is4() && p.Bits() < 31 && ip == lastAddr(p))) {
			v.add(k, n.Hostname, f+".address", "%s is the network or broadcast address of %s", ip, p)
		}
		if gw, err := netip.ParseAddr(nw.Gateway); err == nil && gw == ip {
			v.add(k, n.Hostname, f+".address", "%s is network %q's gateway", ip, nw.Name)
		}
		if prev, dup := addrs[ip]; dup {
			v.add(k, n.Hostname, f+".address", "%s is also assigned to %s", ip, prev)
		} else {
			addrs[ip] = fmt.Sprintf("node %q (%s)", n.Hostname, v.ix.d.SourceOf(k, n.Hostname))
		}
	}
}

func (v *validator) nodeRails(n NodeAssignment, r resolvedProfile) {
	hw := v.ix.hardware[r.hardwareProfile]
	seen := map[string]int{}
	for j, rail := range n.RoCERails {
		f := fmt.Sprintf("roce_rails[%d]", j)
		isAlias := slices.ContainsFunc(hw.DeviceAliases, func(a DeviceAlias) bool { return a.Alias == rail.Interface })
		if !isAlias && (!namePattern.MatchString(rail.Interface) || len(rail.Interface) > 15) {
			v.add(KindNode, n.Hostname, f+".interface", "must be a device alias of hardware profile %q or an interface name", r.hardwareProfile)
		}
		if prev, dup := seen[rail.Interface]; dup {
			v.add(KindNode, n.Hostname, f+".interface", "repeats roce_rails[%d]", prev)
		}
		seen[rail.Interface] = j
		if p, err := netip.ParsePrefix(rail.IPv4CIDR); err != nil || !p.Addr().Is4() {
			v.add(KindNode, n.Hostname, f+".ipv4_cidr", "is not an IPv4 address with prefix (e.g. 10.1.0.5/31)")
		}
	}
}

func lastAddr(p netip.Prefix) netip.Addr {
	a := p.Masked().Addr().As4()
	u := binary.BigEndian.Uint32(a[:]) | (uint32(1)<<(32-p.Bits()) - 1)
	binary.BigEndian.PutUint32(a[:], u)
	return netip.AddrFrom4(a)
}
