package onboarding

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"

	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
)

// PreflightPXEInput identifies the onboarding.
type PreflightPXEInput struct {
	OnboardingRef
}

// PreflightPXEOutput describes the boot interface as it will deploy.
type PreflightPXEOutput struct {
	Interface  string `json:"interface"`
	MACAddress string `json:"mac_address"`
	SubnetCIDR string `json:"subnet_cidr"`
	GatewayIP  string `json:"gateway_ip"`
	Relinked   bool   `json:"relinked"`
	DHCP       bool   `json:"dhcp"`
}

// PreflightPXE makes the boot interface deploy-safe before deploy (seed
// 000 §4.3, the datasource failure's usual cause): the interface must be on
// a VLAN with a subnet of that VLAN linked, the subnet must have a gateway,
// and (strict policy) the VLAN must have MAAS DHCP or a relay. It then
// relinks the interface to AUTO on that subnet, then unlinks every link
// that is not that one AUTO link, because MAAS makes a second link when
// AUTO is linked twice (maas-behaviour §9, §14.8). It records the PXE MAC on
// the onboarding so a later attempt can match by it.
//
// The subnet comes from the interface's own links (MAAS links the boot
// interface to the subnets it saw it on at commissioning, maas-behaviour §9).
// When MAAS left only a LINK_UP link, it is the subnet MAAS discovered on the
// interface, else the only subnet of the interface's VLAN; several subnets
// and no evidence which one fails closed, naming them. A repeat finds the
// correct AUTO link and changes nothing.
//
// Errors: PXEPreflightError (nothing is deployed after it); MAAS errors.
func (a *Activities) PreflightPXE(ctx context.Context, in PreflightPXEInput) (out PreflightPXEOutput, err error) {
	ctx, cancel := a.bound(ctx)
	defer cancel()
	c, err := a.beginIn(ctx, "PreflightPXE", domain.StagePXEPreflight, in.OnboardingRef)
	defer c.Finish(ctx, &err)
	if err != nil {
		return out, err
	}
	pol, _, err := c.runPolicy(ctx)
	if err != nil {
		return out, err
	}
	client, m, err := c.maasMachine(ctx)
	if err != nil {
		return out, err
	}
	ifaces, err := client.Interfaces(ctx, m.SystemID)
	if err != nil {
		return out, err
	}
	boot, ok := bootInterface(m, ifaces)
	if !ok {
		return out, &PXEPreflightError{SystemID: m.SystemID, Interface: "-", Reason: "the machine has no boot interface"}
	}
	fail := func(reason string) error {
		return &PXEPreflightError{SystemID: m.SystemID, Interface: boot.Name, Reason: reason}
	}
	out.Interface, out.MACAddress = boot.Name, strings.ToLower(boot.MACAddress)
	if out.MACAddress != "" && c.Rec.PXEMAC != out.MACAddress {
		if err := c.update(ctx, func(o *domain.Onboarding) error {
			o.PXEMAC = out.MACAddress
			return nil
		}); err != nil {
			return out, err
		}
	}
	if err := c.keepNodePXEMAC(ctx, out.MACAddress); err != nil {
		return out, err
	}

	if boot.VLAN == nil {
		return out, fail("the interface is disconnected (no VLAN)")
	}
	subnet := vlanSubnet(boot)
	if subnet == nil {
		// MAAS can leave the boot interface with only a LINK_UP link after
		// commissioning (maas-behaviour §9): choose the subnet from what
		// MAAS knows rather than stop.
		var reason string
		if subnet, reason, err = unlinkedBootSubnet(ctx, client, boot); err != nil {
			return out, err
		}
		if subnet == nil {
			return out, fail(reason)
		}
		c.Log.InfoContext(ctx, "boot interface had no subnet link; chose one", slog.String("subnet", subnet.CIDR))
	}
	out.SubnetCIDR, out.GatewayIP = subnet.CIDR, subnet.GatewayIP
	if subnet.GatewayIP == "" {
		return out, fail("subnet " + subnet.CIDR + " has no gateway: the deployed OS could not reach the metadata service")
	}
	out.DHCP = boot.VLAN.DHCPOn || boot.VLAN.RelayVLAN != nil
	if !out.DHCP {
		if pol.StrictPXEPreflight {
			return out, fail(fmt.Sprintf("VLAN %d has neither MAAS DHCP nor a DHCP relay", boot.VLAN.VID))
		}
		if err := c.Note(ctx, "pxe_preflight", fmt.Sprintf("warning: VLAN %d has no MAAS DHCP or relay (strict_pxe_preflight off)", boot.VLAN.VID)); err != nil {
			return out, err
		}
	}

	// Link AUTO before unlinking anything: the subnet is found from the
	// interface's links, so a try that removed the old links and then failed
	// to link would leave its retry nothing to link to. MAAS's AUTO link
	// also drops the DHCP and LINK_UP links itself (maas-behaviour §9), so the
	// links to remove are planned from the interface it returns.
	iface := boot
	keep, stale := planAutoRelink(iface, subnet.ID)
	linked := keep == nil
	if linked {
		if iface, err = client.LinkSubnet(ctx, m.SystemID, boot.ID, maas.LinkSubnetParams{Mode: maas.LinkModeAuto, SubnetID: subnet.ID}); err != nil {
			return out, err
		}
		_, stale = planAutoRelink(iface, subnet.ID)
	}
	for _, l := range stale {
		if _, err := client.UnlinkSubnet(ctx, m.SystemID, boot.ID, l.ID); err != nil {
			return out, err
		}
		c.Log.InfoContext(ctx, "boot interface link removed", slog.Int("link_id", l.ID), slog.String("mode", l.Mode))
	}
	out.Relinked = linked || len(stale) > 0
	mode := "AUTO"
	if keep != nil && !strings.EqualFold(keep.Mode, maas.LinkModeAuto) {
		mode = "STATIC " + keep.IPAddress
	}
	detail := fmt.Sprintf("boot interface %s (%s) %s on %s via %s", boot.Name, out.MACAddress, mode, subnet.CIDR, subnet.GatewayIP)
	if out.Relinked {
		detail += fmt.Sprintf("; relinked (%d old links removed)", len(stale))
	}
	return out, c.Exit(ctx, detail)
}

// bootInterface picks the machine's boot interface: the one MAAS names,
// else the only physical interface.
func bootInterface(m maas.Machine, ifaces []maas.Interface) (maas.Interface, bool) {
	for _, i := range ifaces {
		if m.BootInterfaceID != 0 && i.ID == m.BootInterfaceID {
			return i, true
		}
	}
	var physical []maas.Interface
	for _, i := range ifaces {
		if i.Type == "" || i.Type == "physical" {
			physical = append(physical, i)
		}
	}
	if m.BootInterfaceID == 0 && len(physical) == 1 {
		return physical[0], true
	}
	return maas.Interface{}, false
}

// vlanSubnet is the subnet to link AUTO: among the interface's links to a
// subnet of the interface's VLAN, an AUTO link's subnet first, then DHCP,
// STATIC and others, lowest link id first.
func vlanSubnet(i maas.Interface) *maas.Subnet {
	rank := map[string]int{"auto": 0, "dhcp": 1, "static": 2}
	links := make([]maas.Link, 0, len(i.Links))
	for _, l := range i.Links {
		if l.Subnet == nil || (l.Subnet.VLAN != nil && i.VLAN != nil && l.Subnet.VLAN.ID != i.VLAN.ID) {
			continue
		}
		links = append(links, l)
	}
	sort.SliceStable(links, func(a, b int) bool {
		ra, ok := rank[strings.ToLower(links[a].Mode)]
		if !ok {
			ra = 3
		}
		rb, ok := rank[strings.ToLower(links[b].Mode)]
		if !ok {
			rb = 3
		}
		if ra != rb {
			return ra < rb
		}
		return links[a].ID < links[b].ID
	})
	if len(links) == 0 {
		return nil
	}
	s := *links[0].Subnet
	return &s
}

// planAutoRelink keeps the first AUTO link on subnetID and marks every
// other link for removal (a second AUTO link, DHCP, STATIC, LINK_UP, links
// to other subnets). A STATIC link with an address on subnetID is kept
// instead of any AUTO link: the site design gave the boot interface that
// address (configure_machine), and MAAS deploys it as configured as
// surely as an AUTO one.
func planAutoRelink(i maas.Interface, subnetID int) (keep *maas.Link, stale []maas.Link) {
	links := append([]maas.Link(nil), i.Links...)
	sort.Slice(links, func(a, b int) bool { return links[a].ID < links[b].ID })
	for idx := range links {
		l := links[idx]
		if keep == nil && strings.EqualFold(l.Mode, "static") && l.IPAddress != "" && l.Subnet != nil && l.Subnet.ID == subnetID {
			keep = &links[idx]
		}
	}
	if keep != nil {
		for _, l := range links {
			if l.ID != keep.ID {
				stale = append(stale, l)
			}
		}
		return keep, stale
	}
	for idx := range links {
		l := links[idx]
		if keep == nil && strings.EqualFold(l.Mode, maas.LinkModeAuto) && l.Subnet != nil && l.Subnet.ID == subnetID {
			keep = &links[idx]
			continue
		}
		stale = append(stale, l)
	}
	return keep, stale
}

// unlinkedBootSubnet chooses the subnet of a boot interface that has no link
// to a subnet of its VLAN: the subnet commissioning discovered on it, else
// the only subnet of its VLAN in the region. A nil subnet comes with the
// reason no choice is safe. The region's subnet list (when the client can
// list it) also refreshes a discovered subnet's gateway, which is what the
// preflight validates next.
func unlinkedBootSubnet(ctx context.Context, client activities.MAAS, boot maas.Interface) (*maas.Subnet, string, error) {
	var all []maas.Subnet
	if lister, ok := client.(activities.SubnetLister); ok {
		var err error
		if all, err = lister.Subnets(ctx); err != nil {
			return nil, "", err
		}
	}
	onVLAN := func(s *maas.Subnet) bool {
		return s != nil && (s.VLAN == nil || s.VLAN.ID == boot.VLAN.ID)
	}
	byID := func(s maas.Subnet) maas.Subnet {
		for _, r := range all {
			if r.ID == s.ID {
				return r
			}
		}
		return s
	}
	pick := func(cands []maas.Subnet) (*maas.Subnet, []string) {
		seen := map[int]bool{}
		var uniq []maas.Subnet
		for _, s := range cands {
			if !seen[s.ID] {
				seen[s.ID] = true
				uniq = append(uniq, s)
			}
		}
		if len(uniq) == 1 {
			s := byID(uniq[0])
			return &s, nil
		}
		names := make([]string, 0, len(uniq))
		for _, s := range uniq {
			names = append(names, s.CIDR)
		}
		sort.Strings(names)
		return nil, names
	}

	var discovered []maas.Subnet
	for _, d := range boot.Discovered {
		if onVLAN(d.Subnet) {
			discovered = append(discovered, *d.Subnet)
		}
	}
	if len(discovered) > 0 {
		s, names := pick(discovered)
		if s != nil {
			return s, "", nil
		}
		return nil, fmt.Sprintf("no subnet is linked and MAAS discovered the interface on several subnets of VLAN %d (%s): link one by hand", boot.VLAN.VID, strings.Join(names, ", ")), nil
	}
	var vlan []maas.Subnet
	for _, s := range all {
		if s.VLAN != nil && s.VLAN.ID == boot.VLAN.ID {
			vlan = append(vlan, s)
		}
	}
	switch s, names := pick(vlan); {
	case s != nil:
		return s, "", nil
	case len(names) > 1:
		return nil, fmt.Sprintf("no subnet is linked, MAAS discovered none on the interface, and VLAN %d has several subnets (%s): link one by hand", boot.VLAN.VID, strings.Join(names, ", ")), nil
	default:
		return nil, fmt.Sprintf("no subnet of VLAN %d is linked on the interface and the VLAN has no subnet", boot.VLAN.VID), nil
	}
}

// keepNodePXEMAC keeps the observed boot MAC on the node record, so that a
// later onboarding of the node (a reimage is a new onboarding) can match
// its machine by it (requirements readiness §4.1 step 3).
func (c *call) keepNodePXEMAC(ctx context.Context, mac string) error {
	if mac == "" || c.Rec.NodeID == "" {
		return nil
	}
	n, err := c.a.d.Store.GetNode(ctx, c.Rec.NodeID)
	if err != nil {
		var nf *activities.RecordNotFoundError
		if errors.As(activities.StoreError("", err), &nf) {
			return nil
		}
		return activities.StoreError("read node", err)
	}
	if n.PXEMAC == mac {
		return nil
	}
	if _, err := c.a.d.Store.UpdateNode(ctx, c.Rec.NodeID, func(n *domain.Node) error {
		n.PXEMAC = mac
		return nil
	}); err != nil {
		return activities.StoreError("record the node's PXE MAC", err)
	}
	return nil
}
