package onboarding

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strings"

	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
)

// ApplyRoCEInput identifies the onboarding.
type ApplyRoCEInput struct {
	OnboardingRef
}

// ApplyRoCEOutput lists what was linked.
type ApplyRoCEOutput struct {
	Skipped    bool     `json:"skipped"`
	Interfaces []string `json:"interfaces"`
	Linked     int      `json:"linked"`
}

// ApplyRoCE applies RoCE phase-2 from the site's assignment records (seed
// 000 §3.3) when the profile enables it: each assigned interface is linked
// STATIC with its address (from ipv4_cidr) on the MAAS subnet that
// contains it. Links on the interface that are not that link are removed
// first. An interface already linked that way is left alone, so a repeat
// changes nothing. With RoCE phase-2 off it does nothing.
//
// The subnet is looked up among the subnets linked on the machine, and the
// region's subnets when the MAAS client lists them (SubnetLister).
//
// Errors: RoCEAssignmentError (no rows, unknown interface, bad address, no
// subnet); MAAS errors.
func (a *Activities) ApplyRoCE(ctx context.Context, in ApplyRoCEInput) (out ApplyRoCEOutput, err error) {
	ctx, cancel := a.bound(ctx)
	defer cancel()
	c, err := a.beginIn(ctx, "ApplyRoCE", domain.StageRoCE, in.OnboardingRef)
	defer c.Finish(ctx, &err)
	if err != nil {
		return out, err
	}
	pol, _, err := c.runPolicy(ctx)
	if err != nil {
		return out, err
	}
	if !pol.RoCEPhase2 {
		out.Skipped = true
		return out, c.Exit(ctx, "RoCE phase-2 is off in the policy")
	}
	rows, err := a.d.Store.ListRoCEAssignments(ctx, c.Rec.SiteID, c.Rec.Hostname)
	if err != nil {
		return out, activities.StoreError("list RoCE assignments", err)
	}
	if len(rows) == 0 {
		return out, &RoCEAssignmentError{Hostname: c.Rec.Hostname, Reason: "RoCE phase-2 is on but the site has no assignment rows for the host"}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Interface < rows[j].Interface })

	client, m, err := c.maasMachine(ctx)
	if err != nil {
		return out, err
	}
	ifaces, err := client.Interfaces(ctx, m.SystemID)
	if err != nil {
		return out, err
	}
	subnets := linkedSubnets(ifaces)
	if lister, ok := client.(activities.SubnetLister); ok {
		all, err := lister.Subnets(ctx)
		if err != nil {
			return out, err
		}
		subnets = append(subnets, all...)
	}

	aliases, err := c.roceAliases(ctx, client, m.SystemID, rows, ifaces)
	if err != nil {
		return out, err
	}
	out.Interfaces = []string{}
	for _, row := range rows {
		named := row
		if name, ok := aliases[row.Interface]; ok {
			named.Interface = name
		}
		linked, err := applyRoCERow(ctx, client, m.SystemID, c.Rec.Hostname, named, ifaces, subnets)
		if err != nil {
			return out, err
		}
		out.Interfaces = append(out.Interfaces, row.Interface)
		if linked {
			out.Linked++
		}
	}
	return out, c.Exit(ctx, fmt.Sprintf("RoCE phase-2: %d interfaces (%s), %d linked now", len(rows), strings.Join(out.Interfaces, ", "), out.Linked))
}

// roceAliases resolves the rows that name a device alias of the host's
// hardware profile (rail0) rather than an interface of the machine: the
// alias's PCI address is a NIC among MAAS's node devices, whose interface
// the row means. Aliases do not change across kernels and boots as
// interface names do. One node devices read, only when a row names no
// interface of the machine and the site's design names the host.
func (c *call) roceAliases(ctx context.Context, client activities.MAAS, systemID string, rows []domain.RoCEAssignment,
	ifaces []maas.Interface) (map[string]string, error) {
	names := map[string]bool{}
	for _, i := range ifaces {
		names[i.Name] = true
	}
	unknown := false
	for _, r := range rows {
		unknown = unknown || !names[r.Interface]
	}
	none := map[string]string{}
	if !unknown {
		return none, nil
	}
	e, found, err := c.nodeDesign(ctx)
	if err != nil {
		return nil, err
	}
	reader, ok := client.(maas.NodeDeviceReader)
	if !found || len(e.DeviceAliases) == 0 || !ok {
		return none, nil
	}
	devices, err := reader.NodeDevices(ctx, systemID)
	if err != nil {
		return nil, err
	}
	byID := map[int]string{}
	for _, i := range ifaces {
		byID[i.ID] = i.Name
	}
	byPCI := map[string]string{}
	for _, d := range devices {
		if d.Interface == nil {
			continue
		}
		// The device names its interface nested, or by id only.
		name := d.Interface.Name
		if name == "" {
			name = byID[d.Interface.ID]
		}
		if name != "" {
			byPCI[d.PCIAddress] = name
		}
	}
	out := map[string]string{}
	for _, a := range e.DeviceAliases {
		if name, ok := byPCI[a.PCIAddress]; ok && !names[a.Alias] {
			out[a.Alias] = name
		}
	}
	return out, nil
}

func applyRoCERow(ctx context.Context, client activities.MAAS, systemID, hostname string, row domain.RoCEAssignment,
	ifaces []maas.Interface, subnets []maas.Subnet) (bool, error) {
	fail := func(reason string) error {
		return &RoCEAssignmentError{Hostname: hostname, Interface: row.Interface, Reason: reason}
	}
	var iface *maas.Interface
	for i := range ifaces {
		if ifaces[i].Name == row.Interface {
			iface = &ifaces[i]
			break
		}
	}
	if iface == nil {
		return false, fail("the machine has no interface of that name")
	}
	ip, network, err := net.ParseCIDR(row.IPv4CIDR)
	if err != nil || ip.To4() == nil {
		return false, fail("ipv4_cidr is not an IPv4 address with a prefix")
	}
	subnet := containingSubnet(subnets, ip, network)
	if subnet == nil {
		return false, fail("no MAAS subnet contains " + ip.String())
	}
	var stale []maas.Link
	done := false
	for _, l := range iface.Links {
		if !done && strings.EqualFold(l.Mode, maas.LinkModeStatic) && l.IPAddress == ip.String() && l.Subnet != nil && l.Subnet.ID == subnet.ID {
			done = true
			continue
		}
		stale = append(stale, l)
	}
	for _, l := range stale {
		if _, err := client.UnlinkSubnet(ctx, systemID, iface.ID, l.ID); err != nil {
			return false, err
		}
	}
	if done {
		return false, nil
	}
	if _, err := client.LinkSubnet(ctx, systemID, iface.ID, maas.LinkSubnetParams{Mode: maas.LinkModeStatic, SubnetID: subnet.ID, IPAddress: ip.String()}); err != nil {
		return false, err
	}
	return true, nil
}

func linkedSubnets(ifaces []maas.Interface) []maas.Subnet {
	var out []maas.Subnet
	for _, i := range ifaces {
		for _, l := range i.Links {
			if l.Subnet != nil {
				out = append(out, *l.Subnet)
			}
		}
	}
	return out
}

// containingSubnet prefers the subnet whose CIDR equals the assignment's
// network, then the narrowest subnet containing the address.
func containingSubnet(subnets []maas.Subnet, ip net.IP, network *net.IPNet) *maas.Subnet {
	var best *maas.Subnet
	bestOnes := -1
	for i := range subnets {
		_, n, err := net.ParseCIDR(subnets[i].CIDR)
		if err != nil || !n.Contains(ip) {
			continue
		}
		if n.String() == network.String() {
			return &subnets[i]
		}
		if ones, _ := n.Mask.Size(); ones > bestOnes {
			best, bestOnes = &subnets[i], ones
		}
	}
	return best
}
