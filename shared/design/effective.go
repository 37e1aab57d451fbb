package design

import (
	"fmt"

	"slices"
	"strconv"
)

// Merge rules along a host profile chain (root first, the node's profile
// last):
//   - a scalar set on a child overrides the parent's (zero means unset);
//   - a plain list (an interface's networks) set on a child replaces the
//     parent's whole list, never appends to it;
//   - a keyed list (interfaces, by name) merges entry by entry: a child's
//     entry updates the parent's entry of the same name, so a bond declared
//     down a chain is still one bond with its members once;
//   - a map (labels) merges by key, the child's value winning; the node
//     assignment's labels come last.

// Effective is one node's design after inheritance: every value and, in
// Sources, where it came from ("<kind>/<name>@<document>").
type Effective struct {
	Hostname        string               `json:"hostname"`
	BMCAddress      string               `json:"bmc_address"`
	Rack            string               `json:"rack,omitempty"`
	HostProfile     string               `json:"host_profile"`
	ProfileChain    []string             `json:"profile_chain"`
	Architecture    string               `json:"architecture,omitempty"`
	DistroSeries    string               `json:"distro_series,omitempty"`
	RootSizeGB      int                  `json:"root_size_gb,omitempty"`
	HardwareProfile string               `json:"hardware_profile,omitempty"`
	DeviceAliases   []DeviceAlias        `json:"device_aliases,omitempty"`
	BootDisk        *BootDisk            `json:"boot_disk,omitempty"`
	Interfaces      []EffectiveInterface `json:"interfaces"`
	Labels          map[string]string    `json:"labels,omitempty"`
	RoCERails       []RoCERail           `json:"roce_rails,omitempty"`
	Sources         map[string]string    `json:"sources"`
}

// EffectiveInterface is one configured interface: its link (a bond or a
// single NIC) with members resolved to PCI addresses, and its networks with
// the node's static address on each.
type EffectiveInterface struct {
	Name     string             `json:"name"`
	Link     string             `json:"link"`
	BondMode string             `json:"bond_mode,omitempty"`
	Members  []DeviceAlias      `json:"members"`
	MTU      int                `json:"mtu,omitempty"`
	Networks []EffectiveNetwork `json:"networks"`
}

// EffectiveNetwork is a network on an interface and the node's address in it.
type EffectiveNetwork struct {
	Network
	Address string `json:"address,omitempty"`
}

// index is a design's objects by name.
type index struct {
	d        Design
	profiles map[string]HostProfile
	hardware map[string]HardwareProfile
	networks map[string]Network
	links    map[string]NetworkLink
	nodes    map[string]NodeAssignment
}

func newIndex(d Design) *index {
	ix := &index{d: d, profiles: map[string]HostProfile{}, hardware: map[string]HardwareProfile{},
		networks: map[string]Network{}, links: map[string]NetworkLink{}, nodes: map[string]NodeAssignment{}}
	for _, o := range d.HostProfiles {
		ix.profiles[o.Name] = o
	}
	for _, o := range d.HardwareProfiles {
		ix.hardware[o.Name] = o
	}
	for _, o := range d.Networks {
		ix.networks[o.Name] = o
	}
	for _, o := range d.NetworkLinks {
		ix.links[o.Name] = o
	}
	for _, o := range d.Nodes {
		ix.nodes[o.Hostname] = o
	}
	return ix
}

func (ix *index) source(kind, name string) string {
	return kind + "/" + name + "@" + ix.d.SourceOf(kind, name)
}

// chain returns the profile chain from name up to its root, or an error
// on a missing profile or a cycle.
func (ix *index) chain(name string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for n := name; n != ""; {
		if seen[n] {
			return nil, fmt.Errorf("inheritance cycle: %v", append(out, n))
		}
		p, ok := ix.profiles[n]
		if !ok {
			return nil, fmt.Errorf("host profile %q does not exist", n)
		}
		seen[n] = true
		out = append(out, n)
		n = p.Parent
	}
	return out, nil
}

// resolvedProfile is a profile chain merged, with sources.
type resolvedProfile struct {
	chain           []string
	architecture    string
	distroSeries    string
	rootSizeGB      int
	hardwareProfile string
	interfaces      []InterfaceSpec
	labels          map[string]string
	sources         map[string]string
}

func (ix *index) resolveProfile(name string) (resolvedProfile, error) {
	chain, err := ix.chain(name)
	if err != nil {
		return resolvedProfile{}, err
	}
	r := resolvedProfile{chain: chain, labels: map[string]string{}, sources: map[string]string{}}
	for i := len(chain) - 1; i >= 0; i-- {
		p := ix.profiles[chain[i]]
		src := ix.source(KindHostProfile, p.Name)
		setString(&r.architecture, p.Architecture, "architecture", src, r.sources)
		setString(&r.distroSeries, p.DistroSeries, "distro_series", src, r.sources)
		setString(&r.hardwareProfile, p.HardwareProfile, "hardware_profile", src, r.sources)
		if p.RootSizeGB != 0 {
			r.rootSizeGB = p.RootSizeGB
			r.sources["root_size_gb"] = src
		}
		for _, in := range p.Interfaces {
			r.interfaces = mergeInterface(r.interfaces, in, src, r.sources)
		}
		for k, v := range p.Labels {
			r.labels[k] = v
			r.sources["labels."+k] = src
		}
	}
	return r, nil
}

func setString(dst *string, v, field, src string, sources map[string]string) {
	if v != "" {
		*dst = v
		sources[field] = src
	}
}

// mergeInterface merges in into list by name (a keyed list).
func mergeInterface(list []InterfaceSpec, in InterfaceSpec, src string, sources map[string]string) []InterfaceSpec {
	at := slices.IndexFunc(list, func(x InterfaceSpec) bool { return x.Name == in.Name })
	if at < 0 {
		list = append(list, InterfaceSpec{Name: in.Name})
		at = len(list) - 1
		sources["interfaces["+in.Name+"]"] = src
	}
	cur := &list[at]
	if in.Link != "" {
		cur.Link = in.Link
		sources["interfaces["+in.Name+"].link"] = src
	}
	if in.Networks != nil {
		cur.Networks = slices.Clone(in.Networks)
		sources["interfaces["+in.Name+"].networks"] = src
	}
	return list
}

// EffectiveNode resolves one node's design. The design should have passed
// Validate; on a broken reference it returns an error rather than guess.
func EffectiveNode(d Design, hostname string) (Effective, error) {
	return newIndex(d).effective(hostname)
}

// EffectiveNodes resolves every node, ordered by hostname.
func EffectiveNodes(d Design) ([]Effective, error) {
	ix := newIndex(d)
	out := make([]Effective, 0, len(d.Nodes))
	for _, n := range d.Nodes {
		e, err := ix.effective(n.Hostname)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// NodeNotInDesignError says a hostname has no assignment in the design.
type NodeNotInDesignError struct{ Hostname string }

func (e *NodeNotInDesignError) Error() string {
	return fmt.Sprintf("node %q is not in the design", e.Hostname)
}

func (ix *index) effective(hostname string) (Effective, error) {
	n, ok := ix.nodes[hostname]
	if !ok {
		return Effective{}, &NodeNotInDesignError{Hostname: hostname}
	}
	r, err := ix.resolveProfile(n.HostProfile)
	if err != nil {
		return Effective{}, fmt.Errorf("node %q: %w", hostname, err)
	}
	nodeSrc := ix.source(KindNode, n.Hostname)
	e := Effective{
		Hostname: n.Hostname, BMCAddress: n.BMCAddress, Rack: n.Rack, HostProfile: n.HostProfile,
		ProfileChain: r.chain, Architecture: r.architecture, DistroSeries: r.distroSeries,
		RootSizeGB: r.rootSizeGB, HardwareProfile: r.hardwareProfile, Labels: r.labels,
		RoCERails: slices.Clone(n.RoCERails), Sources: r.sources,
	}
	for _, f := range []string{"hostname", "bmc_address", "rack", "host_profile", "roce_rails"} {
		e.Sources[f] = nodeSrc
	}
	for k, v := range n.Labels {
		e.Labels[k] = v
		e.Sources["labels."+k] = nodeSrc
	}
	if len(e.Labels) == 0 {
		e.Labels = nil
	}
	aliases := map[string]string{}
	if hw, ok := ix.hardware[r.hardwareProfile]; ok {
		hwSrc := ix.source(KindHardwareProfile, hw.Name)
		e.DeviceAliases = slices.Clone(hw.DeviceAliases)
		e.BootDisk = hw.BootDisk
		e.Sources["device_aliases"], e.Sources["boot_disk"] = hwSrc, hwSrc
		for _, a := range hw.DeviceAliases {
			aliases[a.Alias] = a.PCIAddress
		}
	}
	for _, in := range r.interfaces {
		link := ix.links[in.Link]
		ei := EffectiveInterface{Name: in.Name, Link: in.Link, BondMode: link.BondMode, MTU: link.MTU, Members: []DeviceAlias{}, Networks: []EffectiveNetwork{}}
		for _, m := range link.Members {
			ei.Members = append(ei.Members, DeviceAlias{Alias: m, PCIAddress: aliases[m]})
		}
		for _, nw := range in.Networks {
			en := EffectiveNetwork{Network: ix.networks[nw]}
			en.Override = false
			for i, a := range n.Addresses {
				if a.Network == nw && ix.addressOn(a, in, link) {
					en.Address = a.Address
					e.Sources["interfaces["+in.Name+"].networks["+nw+"].address"] = nodeSrc + "#addresses[" + strconv.Itoa(i) + "]"
				}
			}
			ei.Networks = append(ei.Networks, en)
		}
		e.Interfaces = append(e.Interfaces, ei)
	}
	if e.Interfaces == nil {
		e.Interfaces = []EffectiveInterface{}
	}
	return e, nil
}

// addressOn tells whether an address names this interface: by its name, or
// by the alias of its only member (a single-NIC link).
func (ix *index) addressOn(a Address, in InterfaceSpec, link NetworkLink) bool {
	if a.Interface == in.Name {
		return true
	}
	return len(link.Members) == 1 && link.Members[0] == a.Interface
}

func itoa(i int) string { return strconv.Itoa(i) }
