package maassim

import (
	"encoding/binary"
	"fmt"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
)

// Tagged VLANs and the subnet update the design's networks need: a VLAN
// interface joins a tagged VLAN (MS/forms/interface.py VLANInterfaceForm),
// and each subnet carries its DNS servers (MS/forms/subnet.py).

// TaggedVLAN is a tagged VLAN on the simulator's one fabric with one
// subnet. The subnet's gateway is its first address and, as on the PXE
// subnet, .200 to .250 of its first /24 is the dynamic range.
type TaggedVLAN struct {
	VID  int    `json:"vid"`
	CIDR string `json:"cidr"`
	// MTU is the VLAN's MTU; 0 is MAAS's default, 1500.
	MTU int `json:"mtu,omitempty"`
}

// withTagged adds the tagged VLANs and their subnets. VLAN ids follow the
// untagged VLAN's, subnet ids the PXE VLAN's subnets. A VLAN whose VID is
// outside 1-4094 or whose CIDR does not parse as IPv4 /24 or wider is
// skipped: MAAS's VLAN form refuses such a VID.
func (n network) withTagged(tagged []TaggedVLAN) network {
	nextSubnet := 1 + len(n.extra) + 1
	for k, t := range tagged {
		prefix, err := netip.ParsePrefix(t.CIDR)
		if err != nil || !prefix.Addr().Is4() || prefix.Bits() > 24 || t.VID < 1 || t.VID > 4094 {
			continue
		}
		prefix = prefix.Masked()
		mtu := t.MTU
		if mtu == 0 {
			mtu = 1500
		}
		v := &vlan{id: n.vlan.id + 1 + k, name: strconv.Itoa(t.VID), vid: t.VID, mtu: mtu, fabric: n.fabric}
		at := func(off int) netip.Addr {
			a := prefix.Addr().As4()
			binary.BigEndian.PutUint32(a[:], binary.BigEndian.Uint32(a[:])+uint32(off)) //nolint:gosec // G115: off is a small positive offset
			return netip.AddrFrom4(a)
		}
		n.tagged = append(n.tagged, v)
		n.extra = append(n.extra, &subnet{
			id: nextSubnet, name: prefix.String(), cidr: prefix, gateway: at(1), vlan: v,
			dynamicLow: at(200), dynamicHi: at(250),
		})
		nextSubnet++
	}
	return n
}

// vlans are the fabric's VLANs, the untagged one first, as MAAS lists a
// fabric's VLANs by id.
func (n *network) vlans() []*vlan {
	return append([]*vlan{n.vlan}, n.tagged...)
}

func (n *network) vlanByID(id string) *vlan {
	for _, v := range n.vlans() {
		if strconv.Itoa(v.id) == id {
			return v
		}
	}
	return nil
}

// resetSubnetDNS forgets every subnet's DNS servers: Reset starts over.
func (n *network) resetSubnetDNS() {
	n.subnet.dns = nil
	for _, sn := range n.extra {
		sn.dns = nil
	}
}

// updateSubnet is PUT subnets/{id}/ for the one field the design sets,
// dns_servers. MAAS's SubnetForm reads the list with getlist (each value
// may itself hold several addresses split on commas and spaces) and
// checks each with IPListFormField, whose ValidationError is raised from
// clean() and so lands under __all__ (MS/forms/subnet.py
// _clean_dns_servers, MS/fields.py IPListFormField). An empty value
// clears the list.
func (s *Simulator) updateSubnet(rq *request) reply {
	sn := s.findSubnet(rq.vars[0], s.allSubnets())
	if sn == nil {
		return notFound("Subnet")
	}
	vs, ok := rq.params["dns_servers"]
	if !ok {
		return jsonReply(http.StatusOK, renderSubnet(sn))
	}
	servers := []string{}
	if len(vs) != 1 || vs[0] != "" {
		for _, v := range vs {
			for _, ip := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' }) {
				if _, err := netip.ParseAddr(ip); err != nil {
					return formError("__all__", fmt.Sprintf("Invalid IP address: %s; provide a list of space-separated IP addresses", ip))
				}
				servers = append(servers, ip)
			}
		}
	}
	sn.dns = servers
	return jsonReply(http.StatusOK, renderSubnet(sn))
}
