package maassim

import (
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// The interface operations a machine's design needs, as MAAS performs
// them: create_bond and create_vlan on nodes/{system_id}/interfaces/
// (MS/api/interfaces.py, MS/forms/interface.py BondInterfaceForm and
// VLANInterfaceForm) and the MTU of PUT nodes/{system_id}/interfaces/{id}/
// (InterfaceForm's mtu, kept in the interface's params).

// Interface kinds besides physical ("").
const (
	ifaceBond = "bond"
	ifaceVLAN = "vlan"
)

// bondModes are MAAS's BOND_MODE_CHOICES, in its order (MS/enum.py). A
// bond created without bond_mode gets the field's initial value, the first
// choice, balance-rr (BondInterfaceForm.set_extra_parameters).
var bondModes = []string{"balance-rr", "active-backup", "balance-xor", "broadcast", "802.3ad", "balance-tlb", "balance-alb"}

// minMTU is InterfaceForm's mtu min_value: Linux refuses less than 552.
const minMTU = 552

// defaultMTU is MAAS's DEFAULT_MTU (MS/models/vlan.py).
const defaultMTU = 1500

// children are the interfaces whose parents include i, in id order.
func (m *machine) children(i *iface) []*iface {
	var out []*iface
	for _, c := range m.ifaces {
		for _, p := range c.parents {
			if p == i {
				out = append(out, c)
			}
		}
	}
	return out
}

// effectiveMTU is Interface.get_effective_mtu: the interface's own MTU,
// else its VLAN's, else 1500, raised to the largest child's, since a parent
// smaller than its child is an invalid configuration MAAS corrects rather
// than refuses (MS/models/interface.py, LP: #1662948).
func (m *machine) effectiveMTU(i *iface) int {
	mtu := i.mtu
	if mtu == 0 && i.vlan != nil {
		mtu = i.vlan.mtu
	}
	if mtu == 0 {
		mtu = defaultMTU
	}
	for _, c := range m.children(i) {
		mtu = max(mtu, m.effectiveMTU(c))
	}
	return mtu
}

// setOwnMTU sets i's own MTU (its params) and then does what MAAS's
// interface_mtu_params_update signal does on that change
// (MS/models/signals/interfaces.py): a child whose own MTU is larger is
// lowered to it, and a parent whose own MTU is unset or smaller is raised
// to it, each change propagating the same way. A VLAN interface or bond
// given a larger MTU than its parent's thus raises the parent: MAAS
// refuses neither. Setting the MTU it has changes nothing.
func (m *machine) setOwnMTU(i *iface, mtu int) {
	if mtu == 0 || i.mtu == mtu {
		return
	}
	i.mtu = mtu
	for _, c := range m.children(i) {
		if c.mtu > mtu {
			m.setOwnMTU(c, mtu)
		}
	}
	for _, p := range i.parents {
		if p.mtu == 0 || p.mtu < mtu {
			m.setOwnMTU(p, mtu)
		}
	}
}

// ifaceParams is the params field: a bond's bond_* options and any MTU set
// on the interface; "" when there are none, as MAAS renders empty params.
func ifaceParams(i *iface) any {
	p := map[string]any{}
	if i.kind == ifaceBond {
		p["bond_mode"] = i.bondMode
		p["bond_miimon"] = 100
		p["bond_downdelay"] = 0
		p["bond_updelay"] = 0
		p["bond_num_grat_arp"] = 1
		p["bond_lacp_rate"] = "fast"
		p["bond_xmit_hash_policy"] = "layer2"
	}
	if i.mtu > 0 {
		p["mtu"] = i.mtu
	}
	if len(p) == 0 {
		return ""
	}
	return p
}

// ifaceNames are the names of list, sorted as MAAS renders parents and
// children.
func ifaceNames(list []*iface) []string {
	out := make([]string, 0, len(list))
	for _, i := range list {
		out = append(out, i.name)
	}
	sort.Strings(out)
	return out
}

// formMTU reads the optional mtu field of InterfaceForm: an integer of at
// least 552 (Django's IntegerField messages).
func formMTU(rq *request) (int, *fieldError) {
	v := strings.TrimSpace(rq.params.Get("mtu"))
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, &fieldError{"mtu", "Enter a whole number."}
	}
	if n < minMTU {
		return 0, &fieldError{"mtu", fmt.Sprintf("Ensure this value is greater than or equal to %d.", minMTU)}
	}
	return n, nil
}

// formParents resolves the parents field, a ModelMultipleChoiceField over
// the node's interfaces: a value that is not an integer or not one of this
// node's interface ids is refused with Django's messages, so another
// machine's interface is an unknown parent too.
func formParents(m *machine, values []string, field string) ([]*iface, *fieldError) {
	out := make([]*iface, 0, len(values))
	for _, v := range values {
		id, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return nil, &fieldError{field, fmt.Sprintf("“%s” is not a valid value.", v)}
		}
		i := m.iface(id)
		if i == nil {
			return nil, &fieldError{field, fmt.Sprintf("Select a valid choice. %s is not one of the available choices.", v)}
		}
		if !slices.Contains(out, i) {
			out = append(out, i)
		}
	}
	return out, nil
}

// nameTaken is clean_interface_name_uniqueness's check and message, with
// the node shown as Node.__str__ writes it.
func nameTaken(m *machine, name string) *fieldError {
	for _, i := range m.ifaces {
		if i.name == name {
			return &fieldError{"name", fmt.Sprintf("Node %s (%s) already has an interface named '%s'.", m.systemID, m.hostname, name)}
		}
	}
	return nil
}

// createBond is InterfacesHandler.create_bond: admin, the machine in an
// interface-editable state ("create bond"), then BondInterfaceForm. The
// bond takes its first parent's MAC and VLAN; every parent must be on
// that VLAN and in no other bond or VLAN interface ("Interfaces already
// in-use"); creating it clears its parents' links (Interface._update_parents)
// and gives it a LINK_UP link (ensure_link_up).
func (s *Simulator) createBond(rq *request) reply {
	m, bad := s.lookupNode(rq)
	if bad != nil {
		return *bad
	}
	if bad := interfaceGate(m, "create bond"); bad != nil {
		return *bad
	}
	var errs []fieldError
	name := strings.TrimSpace(rq.params.Get("name"))
	if name == "" {
		errs = append(errs, fieldError{"name", "This field is required."})
	}
	parents, perr := formParents(m, rq.params["parents"], "parents")
	switch {
	case perr != nil:
		errs = append(errs, *perr)
	case len(parents) == 0:
		errs = append(errs, fieldError{"parents", "A bond interface must have one or more parents."})
	}
	mtu, merr := formMTU(rq)
	if merr != nil {
		errs = append(errs, *merr)
	}
	mode := rq.params.Get("bond_mode")
	if mode != "" && !slices.Contains(bondModes, mode) {
		errs = append(errs, fieldError{"bond_mode", fmt.Sprintf("'%s' is not a valid bond_mode.  It should be one of: %s.", mode, quoteList(bondModes))})
	}
	if len(errs) > 0 {
		return formErrors(errs)
	}
	if mode == "" {
		mode = bondModes[0]
	}
	// clean(): the parents' fidelity and VLAN, then the name.
	var inUse []string
	for _, p := range parents {
		if len(m.children(p)) > 0 {
			inUse = append(inUse, p.name)
		}
	}
	if len(inUse) > 0 {
		sort.Strings(inUse)
		return formError("parents", fmt.Sprintf("Interfaces already in-use: %s.", strings.Join(inUse, ", ")))
	}
	for _, p := range parents[1:] {
		if p.vlan != parents[0].vlan {
			return formError("parents", "All parents must belong to the same VLAN.")
		}
	}
	if e := nameTaken(m, name); e != nil {
		return formErrors([]fieldError{*e})
	}
	for _, p := range parents {
		s.releaseLinks(p)
		p.links = nil
	}
	b := &iface{
		id: s.st.nextIfaceID, name: name, mac: parents[0].mac, enabled: true, vlan: parents[0].vlan,
		kind: ifaceBond, parents: parents, bondMode: mode,
	}
	s.st.nextIfaceID++
	m.ifaces = append(m.ifaces, b)
	// The form saves the bond, then its parents, then its params: the MTU
	// change reaches the members (InterfaceForm.save).
	m.setOwnMTU(b, mtu)
	s.ensureLinkUp(b)
	return jsonReply(http.StatusOK, renderIface(m, b))
}

// createVLAN is InterfacesHandler.create_vlan: "parent" is read as the
// form's parents and its errors are reported under "parent" again; vlan
// is a VLAN object id. The parent must be one interface that is neither a
// VLAN interface nor a bond member, the VLAN a tagged one; the name
// defaults to <parent>.<vid> (build_vlan_interface_name) and must be free.
func (s *Simulator) createVLAN(rq *request) reply {
	m, bad := s.lookupNode(rq)
	if bad != nil {
		return *bad
	}
	if bad := interfaceGate(m, "create VLAN"); bad != nil {
		return *bad
	}
	var errs []fieldError
	var v *vlan
	switch spec := strings.TrimSpace(rq.params.Get("vlan")); {
	case spec == "":
		errs = append(errs, fieldError{"vlan", "A VLAN interface must be connected to a tagged VLAN."})
	case s.net.vlanByID(spec) == nil:
		errs = append(errs, fieldError{"vlan", "Select a valid choice. That choice is not one of the available choices."})
	default:
		v = s.net.vlanByID(spec)
		if v.vid == 0 {
			errs = append(errs, fieldError{"vlan", "A VLAN interface can only belong to a tagged VLAN."})
			v = nil
		}
	}
	parents, perr := formParents(m, rq.params["parent"], "parent")
	switch {
	case perr != nil:
		errs = append(errs, *perr)
	case len(parents) != 1:
		errs = append(errs, fieldError{"parent", "A VLAN interface must have exactly one parent."})
	case parents[0].kind == ifaceVLAN:
		errs = append(errs, fieldError{"parent", "A VLAN interface can't have another VLAN interface as parent."})
	case inBond(m, parents[0]):
		errs = append(errs, fieldError{"parent", "A VLAN interface can't have a parent that is already in a bond."})
	}
	mtu, merr := formMTU(rq)
	if merr != nil {
		errs = append(errs, *merr)
	}
	if len(errs) > 0 {
		return formErrors(errs)
	}
	parent := parents[0]
	name := strings.TrimSpace(rq.params.Get("name"))
	if name == "" {
		name = fmt.Sprintf("%s.%d", parent.name, v.vid)
	}
	if e := nameTaken(m, name); e != nil {
		return formErrors([]fieldError{*e})
	}
	i := &iface{id: s.st.nextIfaceID, name: name, enabled: true, vlan: v, kind: ifaceVLAN, parents: parents}
	s.st.nextIfaceID++
	m.ifaces = append(m.ifaces, i)
	m.setOwnMTU(i, mtu)
	s.ensureLinkUp(i)
	return jsonReply(http.StatusOK, renderIface(m, i))
}

// inBond reports whether i is a member of a bond.
func inBond(m *machine, i *iface) bool {
	for _, c := range m.children(i) {
		if c.kind == ifaceBond {
			return true
		}
	}
	return false
}

// updateInterface is InterfaceHandler.update for the field the design
// sets, mtu: allowed in the interface-editable states and Deployed, where
// DeployedInterfaceForm has no mtu field and so ignores it. An empty mtu
// removes the interface's own MTU (InterfaceForm._set_param). A VLAN
// interface's MTU above its parent's is accepted: the parent rises to it
// (setOwnMTU).
func (s *Simulator) updateInterface(rq *request) reply {
	m, i, bad := s.lookupInterface(rq)
	if bad != nil {
		return *bad
	}
	if m.locked {
		return forbidden()
	}
	if !interfaceEditable[m.status] && m.status != statusDeployed {
		// MAAS words it "Cannot {operation} interface" with the operation
		// "update interface".
		return conflict("Cannot update interface interface because the machine is not New, Ready, Allocated, or Broken.")
	}
	if m.status == statusDeployed {
		return jsonReply(http.StatusOK, renderIface(m, i))
	}
	if vs, ok := rq.params["mtu"]; ok {
		if len(vs) > 0 && strings.TrimSpace(vs[0]) == "" {
			i.mtu = 0
		} else {
			mtu, e := formMTU(rq)
			if e != nil {
				return formErrors([]fieldError{*e})
			}
			m.setOwnMTU(i, mtu)
		}
	}
	return jsonReply(http.StatusOK, renderIface(m, i))
}

// removeInterface deletes i with its links. A child whose only parent i
// is goes with it, as MAAS's delete_children_interface_handler deletes an
// orphaned child (MS/models/signals/interfaces.py); a child with other
// parents (a bond losing one member) keeps them.
func (s *Simulator) removeInterface(m *machine, i *iface) {
	for _, c := range m.children(i) {
		if len(c.parents) == 1 {
			s.removeInterface(m, c)
			continue
		}
		c.parents = slices.DeleteFunc(c.parents, func(p *iface) bool { return p == i })
	}
	s.releaseLinks(i)
	m.ifaces = slices.DeleteFunc(m.ifaces, func(x *iface) bool { return x == i })
}
