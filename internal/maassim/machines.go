package maassim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strings"
)

var machinesResource = resource{
	"GET ":                 (*Simulator).listMachines,
	"POST ":                (*Simulator).createMachine,
	"POST allocate":        (*Simulator).allocate,
	"POST accept":          (*Simulator).accept,
	"POST accept_all":      (*Simulator).acceptAll,
	"POST release":         (*Simulator).releaseMany,
	"GET list_allocated":   (*Simulator).listAllocated,
	"GET power_parameters": (*Simulator).powerParametersMany,
	"GET is_registered":    (*Simulator).isRegistered,
}

var machineResource = resource{
	"GET ":                    (*Simulator).readMachine,
	"PUT ":                    (*Simulator).updateMachine,
	"DELETE ":                 (*Simulator).deleteMachine,
	"GET power_parameters":    (*Simulator).powerParameters,
	"GET query_power_state":   (*Simulator).queryPowerState,
	"GET get_curtin_config":   (*Simulator).curtinConfig,
	"POST commission":         (*Simulator).commission,
	"POST deploy":             (*Simulator).deployMachine,
	"POST abort":              (*Simulator).abort,
	"POST release":            (*Simulator).releaseMachine,
	"POST mark_broken":        (*Simulator).markBroken,
	"POST mark_fixed":         (*Simulator).markFixed,
	"POST power_on":           (*Simulator).powerOn,
	"POST power_off":          (*Simulator).powerOff,
	"POST set_storage_layout": (*Simulator).setStorageLayout,
	"POST rescue_mode":        (*Simulator).rescueMode,
	"POST exit_rescue_mode":   (*Simulator).exitRescueMode,
	"POST lock":               (*Simulator).lock,
	"POST unlock":             (*Simulator).unlock,
}

var nodeResource = resource{
	"GET ": (*Simulator).readNode,
}

// machineReply renders one machine.
func (s *Simulator) machineReply(m *machine) reply {
	return jsonReply(http.StatusOK, s.renderMachine(m))
}

// lookup finds the machine of the URL, or MAAS's 404.
func (s *Simulator) lookup(rq *request) (*machine, *reply) {
	m := s.st.machines[rq.vars[0]]
	if m == nil {
		rp := notFound("Machine")
		return nil, &rp
	}
	return m, nil
}

// lookupEditable is lookup followed by canEdit: the prologue of every
// machine operation that needs edit permission.
func (s *Simulator) lookupEditable(rq *request) (*machine, *reply) {
	m, bad := s.lookup(rq)
	if bad != nil {
		return nil, bad
	}
	if bad := canEdit(m, rq.user); bad != nil {
		return nil, bad
	}
	return m, nil
}

// canEdit is MAAS's edit permission: an admin may edit every machine, any
// other user only machines that are unowned or their own; nobody edits a
// locked machine (maas-behaviour §5).
func canEdit(m *machine, user string) *reply {
	if m.locked || (user != adminUser && m.owner != "" && m.owner != user) {
		rp := forbidden()
		return &rp
	}
	return nil
}

// --- collection --------------------------------------------------------------

// listFilters are the keys GET machines/ understands; any other key is
// "No such constraint." (maas-behaviour §6).
var listFilters = map[string]bool{
	"id": true, "system_id": true, "not_id": true, "hostname": true, "not_hostname": true,
	"mac_address": true, "domain": true, "not_domain": true, "zone": true, "not_in_zone": true,
	"pool": true, "not_in_pool": true, "agent_name": true, "not_agent_name": true, "status": true,
	"not_status": true, "simple_status": true, "not_simple_status": true, "tags": true, "not_tags": true,
	"arch": true, "not_arch": true, "owner": true, "not_owner": true, "power_state": true,
	"not_power_state": true, "cpu_count": true, "mem": true, "fabrics": true, "not_fabrics": true,
	"subnets": true, "not_subnets": true, "vlans": true, "not_vlans": true, "link_speed": true,
	"fabric_classes": true, "not_fabric_classes": true, "storage": true, "devices": true,
	"interfaces": true, "pod": true, "not_pod": true, "pod_type": true, "not_pod_type": true,
	"cpu_speed": true,
}

// ignoredConstraints are skipped by the constraint forms (maas-behaviour §2).
var ignoredConstraints = map[string]bool{
	"op": true, "comment": true, "agent_name": true, "bridge_all": true, "bridge_type": true,
	"bridge_stp": true, "bridge_fd": true, "dry_run": true, "verbose": true,
}

func (s *Simulator) listMachines(rq *request) reply {
	for k := range rq.params {
		if !listFilters[k] && !ignoredConstraints[k] {
			return formError(k, "No such constraint.")
		}
	}
	for _, mac := range rq.params["mac_address"] {
		if _, err := net.ParseMAC(mac); err != nil {
			return formError("mac_address", fmt.Sprintf("'%s' is not a valid MAC address.", mac))
		}
	}
	for _, key := range []string{"status", "not_status"} {
		for _, v := range rq.params[key] {
			if _, ok := statusByConstant[v]; !ok {
				return formError(key, fmt.Sprintf("Select a valid choice. %s is not one of the available choices.", v))
			}
		}
	}
	candidates := s.st.order
	switch ids := append(rq.params["id"], rq.params["system_id"]...); {
	case len(rq.params["hostname"]) > 0:
		candidates = s.byHostnames(rq.params["hostname"])
	case len(ids) > 0:
		candidates = nil
		for _, id := range ids {
			if m := s.st.machines[id]; m != nil && !containsMachine(candidates, m) {
				candidates = append(candidates, m)
			}
		}
		sort.Slice(candidates, func(i, j int) bool { return candidates[i].id < candidates[j].id })
	}
	out := make([]machineJSON, 0)
	for _, m := range candidates {
		if matchesFilters(s, m, rq) {
			out = append(out, s.renderMachine(m))
		}
	}
	return jsonReply(http.StatusOK, out)
}

// byHostnames returns the machines named (by hostname or FQDN), by id.
func (s *Simulator) byHostnames(names []string) []*machine {
	seen := map[*machine]bool{}
	var out []*machine
	for _, h := range names {
		h = strings.TrimSuffix(h, "."+defaultDomain.Name)
		for _, m := range s.st.byHostname[h] {
			if !seen[m] {
				seen[m] = true
				out = append(out, m)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

func containsMachine(list []*machine, m *machine) bool {
	for _, x := range list {
		if x == m {
			return true
		}
	}
	return false
}

func anyOf(vals []string, pred func(string) bool) bool {
	for _, v := range vals {
		if pred(v) {
			return true
		}
	}
	return false
}

func matchesFilters(s *Simulator, m *machine, rq *request) bool {
	p := rq.params
	check := func(key string, pred func(string) bool) bool {
		vals := p[key]
		return len(vals) == 0 || anyOf(vals, pred)
	}
	exclude := func(key string, pred func(string) bool) bool {
		vals := p[key]
		return len(vals) == 0 || !anyOf(vals, pred)
	}
	is := func(want string) func(string) bool { return func(v string) bool { return v == want } }
	macs := func(v string) bool {
		hw, _ := net.ParseMAC(v)
		for _, i := range m.ifaces {
			if i.mac == hw.String() {
				return true
			}
		}
		return false
	}
	return check("id", is(m.systemID)) && check("system_id", is(m.systemID)) && exclude("not_id", is(m.systemID)) &&
		exclude("not_hostname", is(m.hostname)) &&
		check("mac_address", macs) &&
		check("status", is(statusTable[m.status].constant)) && exclude("not_status", is(statusTable[m.status].constant)) &&
		check("simple_status", func(v string) bool { return strings.EqualFold(v, statusTable[m.status].simple) }) &&
		check("domain", is(defaultDomain.Name)) && check("zone", is(defaultZone.Name)) && check("pool", is(defaultPool.Name)) &&
		check("agent_name", is(m.agentName)) && check("owner", is(m.owner)) && exclude("not_owner", is(m.owner)) &&
		check("power_state", is(s.powerState(m))) && exclude("not_power_state", is(s.powerState(m))) &&
		check("arch", func(v string) bool { return m.architecture == v || strings.HasPrefix(m.architecture, v+"/") }) &&
		check("tags", func(string) bool { return false })
}

var validArchitectures = []string{"amd64/generic", "arm64/generic", "i386/generic", "ppc64el/generic", "s390x/generic"}

var powerTypes = map[string]bool{
	"ipmi": true, "redfish": true, "manual": true, "virsh": true, "lxd": true, "amt": true, "webhook": true,
}

// powerParamsFrom reads power_parameters_<name> fields, or the JSON
// power_parameters string.
func powerParamsFrom(rq *request) (map[string]string, *reply) {
	out := map[string]string{}
	if raw := rq.params.Get("power_parameters"); raw != "" {
		var decoded map[string]any
		if err := json.Unmarshal([]byte(raw), &decoded); err != nil {
			rp := formError("power_parameters", "Enter a valid JSON object.")
			return nil, &rp
		}
		for k, v := range decoded {
			out[k] = fmt.Sprint(v)
		}
	}
	for k, vs := range rq.params {
		if name, ok := strings.CutPrefix(k, "power_parameters_"); ok && name != "skip_check" && len(vs) > 0 {
			out[name] = vs[0]
		}
	}
	return out, nil
}

func fixArchitecture(a string) string {
	if a != "" && !strings.Contains(a, "/") {
		return a + "/generic"
	}
	return a
}

func (s *Simulator) createMachine(rq *request) reply {
	p := rq.params
	hostname := strings.TrimSpace(p.Get("hostname"))
	arch := fixArchitecture(p.Get("architecture"))
	powerType := p.Get("power_type")
	if powerType != "" && !powerTypes[powerType] {
		return formError("power_type", fmt.Sprintf("Select a valid choice. %s is not one of the available choices.", powerType))
	}
	if arch != "" && !contains(validArchitectures, arch) {
		return formError("architecture", fmt.Sprintf("'%s' is not a valid architecture.  It should be one of: %s.",
			arch, quoteList(validArchitectures)))
	}
	params, bad := powerParamsFrom(rq)
	if bad != nil {
		return *bad
	}
	if powerType == "ipmi" && params["power_address"] == "" && !rq.flag("power_parameters_skip_check") {
		return formError("power_parameters", "power_address: This field is required.")
	}
	var macs []string
	for _, mac := range p["mac_addresses"] {
		if mac != "" {
			macs = append(macs, mac)
		}
	}
	// MAAS's create form (MS/forms/__init__.py): architecture and
	// mac_addresses are required fields unless power_type is ipmi, whose
	// machine enlists by PXE and is matched to its host by BMC address
	// (requires_macs_and_architecture). Then the form's clean() refuses any
	// other power type without interfaces, under power_type. Django reports
	// every failing field at once (maas-behaviour §6).
	var errs []fieldError
	needed := powerType != "ipmi"
	if needed && arch == "" {
		errs = append(errs, fieldError{"architecture", "This field is required."})
	}
	macsValid := true
	for _, mac := range macs {
		if _, err := net.ParseMAC(mac); err != nil {
			errs = append(errs, fieldError{"mac_addresses", fmt.Sprintf("'%s' is not a valid MAC address.", mac)})
			macsValid = false
			break
		}
	}
	if needed && len(macs) == 0 {
		errs = append(errs, fieldError{"mac_addresses", "This field is required."})
	}
	if powerType != "" && powerType != "ipmi" && (len(macs) == 0 || !macsValid) {
		errs = append(errs, fieldError{"power_type", fmt.Sprintf("Can't set power type to %s without network interfaces", powerType)})
	}
	if len(errs) > 0 {
		return formErrors(errs)
	}
	// With power_type=ipmi and no architecture MAAS drops the MACs, so the
	// machine boots into enlistment and MAAS learns its architecture; with
	// an architecture it keeps them, and with neither MAC it still links
	// the machine to its host by BMC address (maas-behaviour §6, §14.9).
	if powerType == "ipmi" && arch == "" {
		macs = nil
	}
	for _, mac := range macs {
		norm := normMAC(mac)
		if other := s.machineWithMAC(norm); other != nil {
			return formError("mac_addresses", fmt.Sprintf("MAC address %s already in use on %s.", norm, other.hostname))
		}
	}
	if hostname != "" && len(s.st.byHostname[hostname]) > 0 {
		return formError("hostname", "Node with this Hostname already exists.")
	}
	if powerType == "ipmi" {
		if params["power_driver"] == "" {
			params["power_driver"] = "LAN_2_0"
		}
		if params["cipher_suite_id"] == "" {
			params["cipher_suite_id"] = "3"
		}
		if params["privilege_level"] == "" {
			params["privilege_level"] = "OPERATOR"
		}
		if params["power_boot_type"] == "" {
			params["power_boot_type"] = "auto"
		}
	}
	m := s.newMachine(hostname)
	m.description = p.Get("description")
	m.architecture = arch
	m.minHWEKernel = p.Get("min_hwe_kernel")
	m.powerType = powerType
	m.setPowerParams(params)
	// IPMI machines reach their host through the BMC address; others are
	// matched by a MAC of the host (the operator powers them by hand).
	if powerType == "ipmi" {
		m.hw = s.st.hwByBMC[params["power_address"]]
	} else {
		for _, mac := range macs {
			if hw := s.st.hwByMAC[normMAC(mac)]; hw != nil {
				m.hw = hw
				break
			}
		}
	}
	for n, mac := range macs {
		i := &iface{id: s.st.nextIfaceID, name: fmt.Sprintf("eth%d", n), mac: normMAC(mac), enabled: true, vlan: s.net.vlan}
		s.st.nextIfaceID++
		m.ifaces = append(m.ifaces, i)
	}
	if len(m.ifaces) > 0 {
		m.bootIfaceID = m.ifaces[0].id
	}
	commission := true
	if v := p.Get("commission"); v != "" {
		commission, _ = rq.stringBool("commission")
	}
	// Only an admin's new machine is commissioned; anyone else's stays New
	// for an admin to accept (maas-behaviour §6, §14.9).
	if commission && rq.user == adminUser {
		s.startCommissioning(m, rq.now, rq.user, commissionFlagsFrom(rq))
	}
	return s.machineReply(m)
}

func commissionFlagsFrom(rq *request) commissionFlags {
	return commissionFlags{
		enableSSH:      rq.flag("enable_ssh"),
		skipBMCConfig:  rq.flag("skip_bmc_config"),
		skipNetworking: rq.flag("skip_networking"),
		skipStorage:    rq.flag("skip_storage"),
		noTesting:      strings.TrimSpace(strings.ToLower(rq.params.Get("testing_scripts"))) == "none",
	}
}

// newMachine registers an empty record with a seeded system id.
func (s *Simulator) newMachine(hostname string) *machine {
	sid := s.newSystemID()
	if hostname == "" {
		hostname = s.petName()
	}
	m := &machine{
		id: s.st.nextMachineID, systemID: sid, hostname: hostname, status: statusNew,
		previousStatus: statusNew, powerParams: map[string]string{}, netboot: true,
	}
	s.st.nextMachineID++
	s.st.machines[sid] = m
	s.st.order = append(s.st.order, m)
	s.st.byHostname[hostname] = append(s.st.byHostname[hostname], m)
	return m
}

func (s *Simulator) machineWithMAC(mac string) *machine {
	for _, m := range s.st.order {
		for _, i := range m.ifaces {
			if i.mac == mac {
				return m
			}
		}
	}
	return nil
}

func (s *Simulator) renameMachine(m *machine, hostname string) {
	list := s.st.byHostname[m.hostname]
	for n, x := range list {
		if x == m {
			list = append(list[:n:n], list[n+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(s.st.byHostname, m.hostname)
	} else {
		s.st.byHostname[m.hostname] = list
	}
	m.hostname = hostname
	s.st.byHostname[hostname] = append(s.st.byHostname[hostname], m)
}

// allocateConstraints are the keys op=allocate understands (maas-behaviour §6).
var allocateConstraints = map[string]bool{
	"name": true, "system_id": true, "arch": true, "cpu_count": true, "mem": true, "tags": true,
	"not_tags": true, "zone": true, "not_in_zone": true, "pool": true, "not_in_pool": true,
	"subnets": true, "not_subnets": true, "fabrics": true, "not_fabrics": true, "fabric_classes": true,
	"not_fabric_classes": true, "interfaces": true, "storage": true, "devices": true, "pod": true,
	"not_pod": true, "pod_type": true, "not_pod_type": true,
}

func (s *Simulator) allocate(rq *request) reply {
	p := rq.params
	var keys []string
	for k := range p {
		if ignoredConstraints[k] {
			continue
		}
		if !allocateConstraints[k] {
			return formError(k, "No such constraint.")
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if z := p.Get("zone"); z != "" && z != defaultZone.Name {
		return formError("zone", fmt.Sprintf("No such zone: '%s'.", z))
	}
	if pl := p.Get("pool"); pl != "" && pl != defaultPool.Name {
		return formError("pool", fmt.Sprintf("No such pool: '%s'.", pl))
	}
	if a := p.Get("arch"); a != "" && !contains(validArchitectures, fixArchitecture(a)) {
		return formError("arch", fmt.Sprintf("Architecture not recognised: %s", a))
	}
	var best *machine
	for _, m := range s.st.order {
		if m.status != statusReady || m.locked || m.owner != "" {
			continue
		}
		if n := p.Get("name"); n != "" && n != m.hostname && n != m.hostname+"."+defaultDomain.Name {
			continue
		}
		if id := p.Get("system_id"); id != "" && id != m.systemID {
			continue
		}
		if a := p.Get("arch"); a != "" && m.architecture != fixArchitecture(a) {
			continue
		}
		if c := p.Get("cpu_count"); c != "" && atoiOr(c, 0) > m.cpuCount {
			continue
		}
		if mem := p.Get("mem"); mem != "" && atoiOr(mem, 0) > m.memory {
			continue
		}
		if len(p["tags"]) > 0 {
			continue
		}
		cost := func(x *machine) float64 { return float64(x.cpuCount) + float64(x.memory)/1024 }
		if best == nil || cost(m) < cost(best) {
			best = m
		}
	}
	if best == nil {
		switch {
		case len(keys) == 0:
			return conflict("No machine available.")
		case len(keys) == 1 && keys[0] == "system_id":
			return conflict(fmt.Sprintf("No machine with system ID %s available.", p.Get("system_id")))
		}
		var parts, resolved []string
		for _, k := range keys {
			parts = append(parts, fmt.Sprintf("('%s', [%s])", k, quoteList(p[k])))
			resolved = append(resolved, k+"="+strings.Join(p[k], ","))
		}
		return conflict(fmt.Sprintf("No available machine matches constraints: [%s] (resolved to \"%s\")",
			strings.Join(parts, ", "), strings.Join(resolved, " ")))
	}
	if dry, _ := rq.stringBool("dry_run"); dry {
		j := s.renderMachine(best)
		j.ConstraintsByType = json.RawMessage(`{}`)
		return jsonReply(http.StatusOK, j)
	}
	best.owner = rq.user
	s.setStatus(best, rq.now, statusAllocated)
	best.agentName = p.Get("agent_name")
	s.userEvent(best, rq.now, "User acquiring node", rq.user, p.Get("comment"))
	j := s.renderMachine(best)
	j.ConstraintsByType = json.RawMessage(`{}`)
	return jsonReply(http.StatusOK, j)
}

func (s *Simulator) accept(rq *request) reply {
	ids := rq.params["machines"]
	var unknown []string
	for _, id := range ids {
		if s.st.machines[id] == nil {
			unknown = append(unknown, id)
		}
	}
	if len(unknown) > 0 {
		return badRequest(fmt.Sprintf("Unknown machine(s): %s.", strings.Join(unknown, ", ")))
	}
	out := []machineJSON{}
	for _, id := range ids {
		m := s.st.machines[id]
		switch m.status {
		case statusNew:
			s.startCommissioning(m, rq.now, rq.user, commissionFlags{})
			out = append(out, s.renderMachine(m))
		case statusReady, statusCommissioning:
		default:
			return conflict(fmt.Sprintf("Cannot accept node enlistment: node %s is in state %s.", m.systemID, m.status.name()))
		}
	}
	return jsonReply(http.StatusOK, out)
}

func (s *Simulator) acceptAll(rq *request) reply {
	out := []machineJSON{}
	for _, m := range s.st.order {
		if m.status == statusNew && !m.locked {
			s.startCommissioning(m, rq.now, rq.user, commissionFlags{})
			out = append(out, s.renderMachine(m))
		}
	}
	return jsonReply(http.StatusOK, out)
}

func (s *Simulator) releaseMany(rq *request) reply {
	ids := rq.params["machines"]
	var unknown, bad []string
	for _, id := range ids {
		m := s.st.machines[id]
		switch {
		case m == nil:
			unknown = append(unknown, id)
		case m.status == statusReady || m.status == statusReleasing:
		case !releasableStatuses[m.status]:
			bad = append(bad, fmt.Sprintf("%s ('%s')", m.systemID, m.status.name()))
		}
	}
	if len(unknown) > 0 {
		return badRequest(fmt.Sprintf("Unknown machine(s): %s.", strings.Join(unknown, ", ")))
	}
	if len(bad) > 0 {
		return conflict("Machine(s) cannot be released in their current state: " + strings.Join(bad, ", ") + ".")
	}
	released := []string{}
	for _, id := range ids {
		m := s.st.machines[id]
		if releasableStatuses[m.status] {
			s.startRelease(m, rq.now, rq.user, rq.params.Get("comment"), false)
			released = append(released, id)
		}
	}
	return jsonReply(http.StatusOK, released)
}

func (s *Simulator) listAllocated(rq *request) reply {
	out := []machineJSON{}
	for _, m := range s.st.order {
		if m.status == statusAllocated && m.owner == rq.user {
			out = append(out, s.renderMachine(m))
		}
	}
	return jsonReply(http.StatusOK, out)
}

func (s *Simulator) powerParametersMany(rq *request) reply {
	// A JSON object of system_id to parameters, copied together from each
	// machine's encoded entry into a pooled buffer: discovery reads every
	// machine's parameters once per onboarding, and while onboardings
	// create and commission machines a reply kept whole would be out of
	// date at nearly every read, leaving a new copy of the site's
	// parameters behind each time.
	ids := rq.params["id"]
	buf, _ := replyBuffers.Get().(*bytes.Buffer)
	buf.Reset()
	buf.Grow(s.st.powerParamsSize)
	buf.WriteByte('{')
	first := true
	for _, m := range s.st.order {
		if len(ids) == 0 || contains(ids, m.systemID) {
			if !first {
				buf.WriteByte(',')
			}
			first = false
			buf.Write(m.powerParamsEntry())
		}
	}
	buf.WriteByte('}')
	if len(ids) == 0 {
		s.st.powerParamsSize = buf.Len()
	}
	return reply{code: http.StatusOK, ctype: jsonType, body: buf.Bytes(), pooled: buf}
}

func (s *Simulator) isRegistered(rq *request) reply {
	mac := rq.params.Get("mac_address")
	hw, err := net.ParseMAC(mac)
	if err != nil {
		return badRequest(fmt.Sprintf("Invalid MAC address: %s", mac))
	}
	return jsonReply(http.StatusOK, s.machineWithMAC(hw.String()) != nil)
}
