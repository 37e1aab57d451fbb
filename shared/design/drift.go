package design

import (
	"fmt"
	"slices"
	"strconv"
)

// ObservedInterface is one interface as MAAS reports it on a machine.
type ObservedInterface struct {
	Name    string
	Type    string // physical, bond, vlan
	MTU     int    // effective_mtu
	Parents []string
	Links   []ObservedLink
}

// ObservedLink is one of an interface's subnet links.
type ObservedLink struct {
	CIDR    string
	Mode    string // lower case, as MAAS reports links: auto, dhcp, static, link_up
	Address string
}

// NetworkDrift lists where a machine's MAAS network no longer matches its
// effective design: a designed interface missing, a bond's members, an
// MTU, a static address changed or unlinked. Empty when they match. The
// NICs (by PCI address) name the physical interfaces the design's aliases
// are. Interfaces the design does not mention are not drift.
func NetworkDrift(e Effective, nics []NIC, observed []ObservedInterface) ([]string, error) {
	byPCI := map[string]NIC{}
	for _, n := range nics {
		byPCI[n.PCIAddress] = n
	}
	byName := map[string]ObservedInterface{}
	for _, o := range observed {
		byName[o.Name] = o
	}
	var drift []string
	for _, in := range e.Interfaces {
		var members []string
		for _, m := range in.Members {
			nic, ok := byPCI[m.PCIAddress]
			if !ok {
				return nil, &MissingDeviceError{Hostname: e.Hostname, Alias: m.Alias, PCIAddress: m.PCIAddress}
			}
			members = append(members, nic.Name)
		}
		name := members[0]
		if in.BondMode != "" {
			name = in.Name
			if o, ok := byName[name]; !ok {
				drift = append(drift, fmt.Sprintf("interface %s: bond missing", name))
				continue
			} else if got, want := slices.Sorted(slices.Values(o.Parents)), slices.Sorted(slices.Values(members)); !slices.Equal(got, want) {
				drift = append(drift, fmt.Sprintf("interface %s: members %v, designed %v", name, got, want))
			}
		}
		if o, ok := byName[name]; ok && in.MTU != 0 && o.MTU != in.MTU {
			drift = append(drift, fmt.Sprintf("interface %s: MTU %d, designed %d", name, o.MTU, in.MTU))
		}
		for _, nw := range in.Networks {
			target := name
			if nw.VLAN != 0 {
				target = name + "." + strconv.Itoa(nw.VLAN)
			}
			o, ok := byName[target]
			if !ok {
				drift = append(drift, fmt.Sprintf("interface %s: missing (network %s)", target, nw.Name))
				continue
			}
			at := slices.IndexFunc(o.Links, func(l ObservedLink) bool { return l.CIDR == nw.CIDR })
			switch {
			case at < 0:
				drift = append(drift, fmt.Sprintf("interface %s: not linked to network %s (%s)", target, nw.Name, nw.CIDR))
			case nw.Address != "" && (o.Links[at].Mode != "static" || o.Links[at].Address != nw.Address):
				drift = append(drift, fmt.Sprintf("interface %s: network %s address %s (%s), designed %s (static)",
					target, nw.Name, nonEmpty(o.Links[at].Address), o.Links[at].Mode, nw.Address))
			}
		}
	}
	return drift, nil
}

func nonEmpty(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
