package maassim

import (
	"encoding/binary"
	"fmt"
	"net/http"
	"net/netip"
	"sort"
	"strconv"
	"strings"
)

var interfacesResource = resource{
	"GET ":             (*Simulator).listInterfaces,
	"POST create_bond": (*Simulator).createBond,
	"POST create_vlan": (*Simulator).createVLAN,
}

var interfaceResource = resource{
	"GET ":               (*Simulator).readInterface,
	"PUT ":               (*Simulator).updateInterface,
	"DELETE ":            (*Simulator).deleteInterface,
	"POST link_subnet":   (*Simulator).linkSubnet,
	"POST unlink_subnet": (*Simulator).unlinkSubnet,
	"POST disconnect":    (*Simulator).disconnect,
}

var (
	subnetsResource     = resource{"GET ": (*Simulator).listSubnets}
	subnetResource      = resource{"GET ": (*Simulator).readSubnet, "PUT ": (*Simulator).updateSubnet}
	fabricsResource     = resource{"GET ": (*Simulator).listFabrics}
	fabricResource      = resource{"GET ": (*Simulator).readFabric}
	fabricVLANsResource = resource{"GET ": (*Simulator).listFabricVLANs}
	fabricVLANResource  = resource{"GET ": (*Simulator).readFabricVLAN}
	vlanResource        = resource{"GET ": (*Simulator).readVLAN}
)

// lookupNode is lookup for the nodes/ handlers, whose 404 names Node.
func (s *Simulator) lookupNode(rq *request) (*machine, *reply) {
	m := s.st.machines[rq.vars[0]]
	if m == nil {
		rp := notFound("Node")
		return nil, &rp
	}
	return m, nil
}

// lookupInterface resolves the interface specifier: a numeric id or a name.
func (s *Simulator) lookupInterface(rq *request) (*machine, *iface, *reply) {
	m, bad := s.lookupNode(rq)
	if bad != nil {
		return nil, nil, bad
	}
	spec := rq.vars[1]
	for _, i := range m.ifaces {
		if strconv.Itoa(i.id) == spec || i.name == spec {
			return m, i, nil
		}
	}
	rp := notFound("Interface")
	return nil, nil, &rp
}

func (s *Simulator) listInterfaces(rq *request) reply {
	m, bad := s.lookupNode(rq)
	if bad != nil {
		return *bad
	}
	out := make([]ifaceJSON, 0, len(m.ifaces))
	for _, i := range m.ifaces {
		out = append(out, renderIface(m, i))
	}
	return jsonReply(http.StatusOK, out)
}

func (s *Simulator) readInterface(rq *request) reply {
	m, i, bad := s.lookupInterface(rq)
	if bad != nil {
		return *bad
	}
	return jsonReply(http.StatusOK, renderIface(m, i))
}

// interfaceGate is the state check on interface edits (maas-behaviour §9).
func interfaceGate(m *machine, operation string) *reply {
	if m.locked {
		rp := forbidden()
		return &rp
	}
	if !interfaceEditable[m.status] {
		rp := conflict(fmt.Sprintf("Cannot %s interface because the machine is not New, Ready, Allocated, or Broken.", operation))
		return &rp
	}
	return nil
}

// findSubnet resolves a subnet specifier (id, CIDR or name) among the
// subnets the form offers.
func (s *Simulator) findSubnet(spec string, choices []*subnet) *subnet {
	spec = strings.TrimPrefix(strings.TrimPrefix(spec, "cidr:"), "name:")
	for _, sn := range choices {
		if strconv.Itoa(sn.id) == spec || sn.cidr.String() == spec || sn.name == spec {
			return sn
		}
	}
	return nil
}

// allSubnets are the region's subnets, ordered by id as MAAS lists them.
func (s *Simulator) allSubnets() []*subnet {
	return append([]*subnet{s.net.subnet}, s.net.extra...)
}

func (s *Simulator) linkSubnet(rq *request) reply {
	m, i, bad := s.lookupInterface(rq)
	if bad != nil {
		return *bad
	}
	if bad := interfaceGate(m, "link subnet"); bad != nil {
		return *bad
	}
	// A bond member takes no link of its own (InterfaceLinkForm.clean).
	for _, c := range m.children(i) {
		if c.kind == ifaceBond {
			return formError("bond", fmt.Sprintf("Cannot link interface(%s) when interface is in a bond(%s).", i.name, c.name))
		}
	}
	p := rq.params
	force := rq.flag("force")
	raw := p.Get("mode")
	mode := strings.ToLower(raw)
	switch mode {
	case "":
		return formError("mode", "This field is required.")
	case "auto", "dhcp", "static", "link_up":
	default:
		return formError("mode", fmt.Sprintf("'%s' is not a valid mode.  It should be one of: 'auto', 'dhcp', 'static', 'link_up'.", raw))
	}
	// A disconnected interface, or force, may take any subnet; otherwise
	// only the subnets of the interface's VLAN (forms/interface_link.py).
	choices := s.allSubnets()
	if i.vlan != nil && !force {
		choices = choices[:0:0]
		for _, sn := range s.allSubnets() {
			if sn.vlan == i.vlan {
				choices = append(choices, sn)
			}
		}
	}
	var sn *subnet
	if spec := p.Get("subnet"); spec != "" {
		if sn = s.findSubnet(spec, choices); sn == nil {
			return formError("subnet", "Select a valid choice. That choice is not one of the available choices.")
		}
	}
	var ip netip.Addr
	if v := p.Get("ip_address"); v != "" {
		a, err := netip.ParseAddr(v)
		if err != nil {
			return formError("ip_address", "Enter a valid IPv4 or IPv6 address.")
		}
		ip = a
	}
	switch mode {
	case "auto":
		if sn == nil {
			return formError("subnet", "This field is required.")
		}
	case "dhcp":
		for _, l := range i.links {
			if l.mode == "dhcp" {
				if l.subnet != nil {
					return formError("mode", fmt.Sprintf("Interface is already set to DHCP from '%s'.", l.subnet.cidr))
				}
				return formError("mode", "Interface is already set to DHCP.")
			}
		}
	case "static":
		if sn == nil {
			return formError("subnet", "This field is required.")
		}
		if ip.IsValid() {
			if !sn.cidr.Contains(ip) {
				return formError("ip_address", fmt.Sprintf("IP address is not in the given subnet '%s'.", sn.cidr))
			}
			if sn.inDynamicRange(ip) {
				return formError("ip_address", fmt.Sprintf("IP address is inside a dynamic range %s to %s.", sn.dynamicLow, sn.dynamicHi))
			}
			if s.st.ipsInUse[ip] {
				return formError("ip_address", fmt.Sprintf("IP address %s is already in use.", ip))
			}
		}
	case "link_up":
		for _, l := range i.links {
			if l.mode != "link_up" && !force {
				return formError("mode", "Cannot configure interface to link up (with no IP address) while other links are already configured. Specify force=True to override this behavior and delete all links.")
			}
		}
	}
	if rq.flag("default_gateway") {
		switch {
		case mode != "auto" && mode != "static":
			return formError("default_gateway", fmt.Sprintf("Cannot use in mode '%s'.", mode))
		case sn == nil:
			return formError("default_gateway", "Subnet is required when default_gateway is True.")
		}
	}

	if mode == "link_up" || force {
		s.releaseLinks(i)
		i.links = nil
	}
	if force && sn != nil {
		i.vlan = nil
	}
	if i.vlan == nil && sn != nil {
		i.vlan = sn.vlan
	}
	l := s.newLink(mode, sn, "")
	if mode == "static" {
		addr := ip.String()
		if !ip.IsValid() {
			var ok bool
			if addr, ok = s.allocateIP(sn); !ok {
				return textReply(http.StatusServiceUnavailable, fmt.Sprintf("%s: Unable to allocate static IP due to address exhaustion.", m.systemID))
			}
		} else {
			s.st.ipsInUse[ip] = true
		}
		l.ip = addr
	}
	// AUTO and DHCP replace the interface's DHCP links of the subnet's
	// family (and subnet-less ones) (maas-behaviour §9). Linking AUTO twice still
	// makes two AUTO links: MAAS does not de-duplicate (maas-behaviour §14.8).
	if mode == "auto" || mode == "dhcp" {
		s.removeDHCPLinks(i, sn)
	}
	i.links = append(i.links, l)
	s.ensureLinkUp(i)
	return jsonReply(http.StatusOK, renderIface(m, i))
}

// removeDHCPLinks drops i's DHCP links that have no subnet or one of sn's
// address family (models/interface.py remove_link_dhcp); a nil sn drops
// them all.
func (s *Simulator) removeDHCPLinks(i *iface, sn *subnet) {
	kept := i.links[:0]
	for _, l := range i.links {
		if l.mode == "dhcp" && (sn == nil || l.subnet == nil || l.subnet.cidr.Addr().Is4() == sn.cidr.Addr().Is4()) {
			s.freeIP(l)
			continue
		}
		kept = append(kept, l)
	}
	i.links = kept
}

// ensureLinkUp keeps MAAS's invariant: LINK_UP links exist only when no other
// link does, and a connected interface without links gets one.
func (s *Simulator) ensureLinkUp(i *iface) {
	other := false
	for _, l := range i.links {
		if l.mode != "link_up" {
			other = true
			break
		}
	}
	if other {
		kept := i.links[:0]
		for _, l := range i.links {
			if l.mode != "link_up" {
				kept = append(kept, l)
			}
		}
		i.links = kept
		return
	}
	if len(i.links) == 0 && i.vlan != nil {
		i.links = []*link{s.newLink("link_up", nil, "")}
	}
}

func (s *Simulator) unlinkSubnet(rq *request) reply {
	m, i, bad := s.lookupInterface(rq)
	if bad != nil {
		return *bad
	}
	if bad := interfaceGate(m, "unlink subnet"); bad != nil {
		return *bad
	}
	v := rq.params.Get("id")
	if v == "" {
		return formError("id", "This field is required.")
	}
	ids := make([]string, 0, len(i.links))
	for n, l := range i.links {
		ids = append(ids, strconv.Itoa(l.id))
		if strconv.Itoa(l.id) == v {
			s.freeIP(l)
			i.links = append(i.links[:n:n], i.links[n+1:]...)
			s.ensureLinkUp(i)
			return jsonReply(http.StatusOK, renderIface(m, i))
		}
	}
	sort.Strings(ids)
	return formError("id", fmt.Sprintf("'%s' is not a valid id.  It should be one of: %s.", v, quoteList(ids)))
}

func (s *Simulator) disconnect(rq *request) reply {
	m, i, bad := s.lookupInterface(rq)
	if bad != nil {
		return *bad
	}
	if bad := interfaceGate(m, "disconnect"); bad != nil {
		return *bad
	}
	s.releaseLinks(i)
	i.links = nil
	i.vlan = nil
	return jsonReply(http.StatusOK, renderIface(m, i))
}

func (s *Simulator) deleteInterface(rq *request) reply {
	m, i, bad := s.lookupInterface(rq)
	if bad != nil {
		return *bad
	}
	if bad := interfaceGate(m, "delete"); bad != nil {
		return *bad
	}
	s.removeInterface(m, i)
	return reply{code: http.StatusNoContent}
}

func (s *Simulator) listSubnets(*request) reply {
	all := s.allSubnets()
	out := make([]*subnetJSON, 0, len(all))
	for _, sn := range all {
		out = append(out, renderSubnet(sn))
	}
	return jsonReply(http.StatusOK, out)
}

func (s *Simulator) readSubnet(rq *request) reply {
	sn := s.findSubnet(rq.vars[0], s.allSubnets())
	if sn == nil {
		return notFound("Subnet")
	}
	return jsonReply(http.StatusOK, renderSubnet(sn))
}

func (s *Simulator) listFabrics(*request) reply {
	return jsonReply(http.StatusOK, []fabricJSON{s.renderFabric()})
}

func (s *Simulator) readFabric(rq *request) reply {
	if rq.vars[0] != strconv.Itoa(s.net.fabric.id) {
		return notFound("Fabric")
	}
	return jsonReply(http.StatusOK, s.renderFabric())
}

func (s *Simulator) listFabricVLANs(rq *request) reply {
	if rq.vars[0] != strconv.Itoa(s.net.fabric.id) {
		return notFound("Fabric")
	}
	out := []*vlanJSON{}
	for _, v := range s.net.vlans() {
		out = append(out, renderVLAN(v))
	}
	return jsonReply(http.StatusOK, out)
}

func (s *Simulator) readFabricVLAN(rq *request) reply {
	if rq.vars[0] == strconv.Itoa(s.net.fabric.id) {
		for _, v := range s.net.vlans() {
			if rq.vars[1] == strconv.Itoa(v.vid) {
				return jsonReply(http.StatusOK, renderVLAN(v))
			}
		}
	}
	return notFound("VLAN")
}

func (s *Simulator) readVLAN(rq *request) reply {
	v := s.net.vlanByID(rq.vars[0])
	if v == nil {
		return notFound("VLAN")
	}
	return jsonReply(http.StatusOK, renderVLAN(v))
}

// network is the fixed minimal network every machine lives on: one fabric,
// its untagged VLAN with DHCP on, and one subnet.
type network struct {
	fabric *fabric
	vlan   *vlan
	subnet *subnet
	// extra holds further subnets: of the PXE VLAN (Options.SecondSubnet)
	// and of the tagged VLANs (Options.TaggedVLANs).
	extra []*subnet
	// tagged are the fabric's tagged VLANs (network_vlans.go).
	tagged []*vlan
}

// DefaultSubnetCIDR is the simulator's subnet unless Options.SubnetCIDR
// names another.
const DefaultSubnetCIDR = "10.20.0.0/24"

// SecondSubnetCIDR is the subnet Options.SecondSubnet adds to the PXE VLAN.
const SecondSubnetCIDR = "10.21.0.0/24"

// newNetwork builds the network on cidr (DefaultSubnetCIDR when empty or
// malformed). The gateway is the subnet's first address and the dynamic
// range its .200 to .250, as on the default /24; a wider subnet (a /20 holds
// about 4,000 machines) lets one site deploy more machines than a /24's
// ~200 static addresses, since every deployed machine's AUTO link takes
// one outside the dynamic range, and a subnet is named by its CIDR
// (docs/maas-behaviour.md §9, §10).
func newNetwork(cidr string, secondSubnet bool) network {
	prefix, err := netip.ParsePrefix(cidr)
	if err != nil || !prefix.Addr().Is4() || prefix.Bits() > 24 {
		prefix = netip.MustParsePrefix(DefaultSubnetCIDR)
	}
	prefix = prefix.Masked()
	at := func(n int) netip.Addr {
		a := prefix.Addr().As4()
		binary.BigEndian.PutUint32(a[:], binary.BigEndian.Uint32(a[:])+uint32(n)) //nolint:gosec // G115: n is a small positive offset
		return netip.AddrFrom4(a)
	}
	f := &fabric{id: 0, name: "fabric-0"}
	v := &vlan{id: 5001, name: "untagged", vid: 0, mtu: 1500, dhcpOn: true, fabric: f, rackSID: "rack01"}
	sn := &subnet{
		id: 1, name: prefix.String(), cidr: prefix,
		gateway: at(1), vlan: v,
		dynamicLow: at(200), dynamicHi: at(250),
	}
	n := network{fabric: f, vlan: v, subnet: sn}
	if secondSubnet {
		second := netip.MustParsePrefix(SecondSubnetCIDR)
		n.extra = append(n.extra, &subnet{
			id: 2, name: second.String(), cidr: second,
			gateway: netip.MustParseAddr("10.21.0.1"), vlan: v,
			dynamicLow: netip.MustParseAddr("10.21.0.200"), dynamicHi: netip.MustParseAddr("10.21.0.250"),
		})
	}
	return n
}
