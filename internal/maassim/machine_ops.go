package maassim

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Operations on one machine: machines/{system_id}/ (maas-behaviour §5, §8).

func (s *Simulator) readMachine(rq *request) reply {
	m, bad := s.lookup(rq)
	if bad != nil {
		return *bad
	}
	return s.machineReply(m)
}

// readNode is GET nodes/{system_id}/; only machines exist here.
func (s *Simulator) readNode(rq *request) reply {
	m, bad := s.lookupNode(rq)
	if bad != nil {
		return *bad
	}
	return s.machineReply(m)
}

func (s *Simulator) updateMachine(rq *request) reply {
	m, bad := s.lookupEditable(rq)
	if bad != nil {
		return *bad
	}
	p := rq.params
	// Validate everything first: MAAS rolls the request back on any error
	// (maas-behaviour §2).
	h := strings.TrimSpace(p.Get("hostname"))
	if h != "" && h != m.hostname && len(s.st.byHostname[h]) > 0 {
		return formError("hostname", "Node with this Hostname already exists.")
	}
	pt := p.Get("power_type")
	if pt != "" && !powerTypes[pt] {
		return formError("power_type", fmt.Sprintf("Select a valid choice. %s is not one of the available choices.", pt))
	}
	// The create rule again (MachineForm.clean): only ipmi may do without
	// interfaces.
	if pt != "" && pt != m.powerType && pt != "ipmi" && len(m.ifaces) == 0 {
		return formError("power_type", fmt.Sprintf("Can't set power type to %s without network interfaces", pt))
	}
	params, bad := powerParamsFrom(rq)
	if bad != nil {
		return *bad
	}

	if h != "" && h != m.hostname {
		s.renameMachine(m, h)
	}
	if _, ok := p["description"]; ok {
		m.description = p.Get("description")
	}
	if a := p.Get("architecture"); a != "" {
		m.architecture = fixArchitecture(a)
	}
	if pt != "" {
		m.powerType = pt
	}
	for k, v := range params {
		m.setPowerParam(k, v)
	}
	if _, ok := params["power_address"]; ok && m.powerType == "ipmi" {
		m.hw = s.st.hwByBMC[params["power_address"]]
	}
	if v := p.Get("cpu_count"); v != "" {
		m.cpuCount = atoiOr(v, m.cpuCount)
	}
	if v := p.Get("memory"); v != "" {
		m.memory = atoiOr(v, m.memory)
	}
	if _, ok := p["min_hwe_kernel"]; ok {
		m.minHWEKernel = p.Get("min_hwe_kernel")
	}
	return s.machineReply(m)
}

func (s *Simulator) deleteMachine(rq *request) reply {
	m, bad := s.lookupEditable(rq)
	if bad != nil {
		return *bad
	}
	s.removeMachine(m)
	return reply{code: http.StatusNoContent}
}

// removeMachine deletes the record; the host stays. Its events go with it,
// as MAAS's events query only covers existing nodes.
func (s *Simulator) removeMachine(m *machine) {
	m.cancelPhase()
	m.deleted = true
	for _, i := range m.ifaces {
		s.releaseLinks(i)
	}
	delete(s.st.machines, m.systemID)
	for n, x := range s.st.order {
		if x == m {
			s.st.order = append(s.st.order[:n:n], s.st.order[n+1:]...)
			break
		}
	}
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
	kept := s.st.events[:0]
	for _, e := range s.st.events {
		if e.m != m {
			kept = append(kept, e)
		}
	}
	for n := len(kept); n < len(s.st.events); n++ {
		s.st.events[n] = nil
	}
	s.st.events = kept
}

func (s *Simulator) powerParameters(rq *request) reply {
	m, bad := s.lookup(rq)
	if bad != nil {
		return *bad
	}
	return reply{code: http.StatusOK, ctype: jsonType, body: m.powerParamsJSON()}
}

// powerProblem is the 503 MAAS answers when no rack controller can drive
// the BMC (maas-behaviour §3).
func powerProblem(m *machine) reply {
	return textReply(http.StatusServiceUnavailable, fmt.Sprintf("No rack controllers can access the BMC of node %s", m.hostname))
}

func (s *Simulator) queryPowerState(rq *request) reply {
	m, bad := s.lookup(rq)
	if bad != nil {
		return *bad
	}
	if m.hw == nil || m.hw.faults.PowerFails || !m.bmcAccepts() {
		s.event(m, rq.now, levelWarning, "Failed to query node's BMC",
			"Unable to power control the node. Please check power credentials.", "")
		return powerProblem(m)
	}
	return jsonReply(http.StatusOK, map[string]string{"state": s.powerState(m)})
}

func (s *Simulator) curtinConfig(rq *request) reply {
	m, bad := s.lookup(rq)
	if bad != nil {
		return *bad
	}
	switch m.status {
	case statusDeploying, statusDeployed, statusFailedDeployment:
	default:
		return badRequest(fmt.Sprintf("Machine %s is not in a deployment state.", m.hostname))
	}
	y := fmt.Sprintf("install:\n  log_file: /tmp/install.log\n  error_tarfile: /tmp/curtin-logs.tar\n"+
		"sources:\n  00_cmdline:\n    type: squashfs\n    uri: http://maas/images/ubuntu/amd64/ga-22.04/%s/stable/squashfs\n"+
		"storage:\n  version: 1\n  layout: %s\n", m.distroSeries, m.storageLayout)
	return reply{code: http.StatusOK, ctype: "text/plain; charset=utf-8", body: []byte(y)}
}

func (s *Simulator) commission(rq *request) reply {
	m, bad := s.lookupEditable(rq)
	if bad != nil {
		return *bad
	}
	switch m.status {
	case statusNew, statusReady, statusFailedCommissioning, statusBroken:
	default:
		return formError("__all__", "Commission is not available because of the current state of the node.")
	}
	flags := commissionFlagsFrom(rq)
	scripts, tests, refused := s.commissionScripts(rq)
	if refused != nil {
		return *refused
	}
	flags.scripts, flags.tests = scripts, tests
	s.startCommissioning(m, rq.now, rq.user, flags)
	return s.machineReply(m)
}

// distroSeries accepts the spellings MAAS resolves (maas-behaviour §8).
var distroSeries = map[string]string{
	"": "jammy", "jammy": "jammy", "ubuntu/jammy": "jammy", "22.04": "jammy",
	"noble": "noble", "ubuntu/noble": "noble", "24.04": "noble",
	"focal": "focal", "ubuntu/focal": "focal", "20.04": "focal",
}

var defaultKernels = map[string]string{"jammy": "ga-22.04", "noble": "ga-24.04", "focal": "ga-20.04"}

// decodeUserData decodes base64 user_data, keeping plain text as is (MAAS
// decodes only valid base64).
func decodeUserData(v string) []byte {
	if v == "" {
		return nil
	}
	if b, err := base64.StdEncoding.DecodeString(v); err == nil {
		return b
	}
	return []byte(v)
}

func (s *Simulator) deployMachine(rq *request) reply {
	m, bad := s.lookupEditable(rq)
	if bad != nil {
		return *bad
	}
	return s.deploy(m, rq)
}

// deploy validates everything before touching m, since MAAS rolls the whole
// request back (including the implicit allocate) on any error (maas-behaviour §2).
func (s *Simulator) deploy(m *machine, rq *request) reply {
	p := rq.params
	switch m.status {
	case statusReady:
		if m.owner != "" && m.owner != rq.user {
			return conflict("Can't allocate a machine belonging to another user.")
		}
	case statusAllocated:
	default:
		return conflict(fmt.Sprintf("Can't deploy a machine that is in the '%s' state", m.status.name()))
	}
	series, ok := distroSeries[p.Get("distro_series")]
	if !ok {
		return formError("distro_series", fmt.Sprintf("'%s' is not a valid distro_series.  It should be one of: '', 'ubuntu/focal', 'ubuntu/jammy', 'ubuntu/noble'.",
			p.Get("distro_series")))
	}
	for _, k := range []string{"install_kvm", "register_vmhost", "install_rackd"} {
		if v, _ := rq.stringBool(k); v {
			return badRequest(fmt.Sprintf("Support for %s allocation parameter has been removed.", k))
		}
	}
	if !m.hasNetwork() {
		return formError("network", "Node must be configured to use a network")
	}
	if len(m.disks) == 0 {
		return formError("storage", "Machine is missing a boot disk; no storage layout can be applied.")
	}
	if !s.assignAutoIPs(m) {
		return textReply(http.StatusServiceUnavailable, fmt.Sprintf("%s: Unable to allocate static IP due to address exhaustion.", m.systemID))
	}
	if m.status == statusReady {
		m.owner = rq.user
		s.setStatus(m, rq.now, statusAllocated)
		s.userEvent(m, rq.now, "User acquiring node", rq.user, "")
	}
	m.osystem = "ubuntu"
	m.distroSeries = series
	m.hweKernel = p.Get("hwe_kernel")
	if m.hweKernel == "" {
		m.hweKernel = defaultKernels[series]
	}
	if a := p.Get("agent_name"); a != "" {
		m.agentName = a
	}
	m.userData = decodeUserData(p.Get("user_data"))
	m.metadataHost = rq.http.Host
	s.startDeployment(m, rq.now, rq.user, p.Get("comment"))
	return s.machineReply(m)
}

func (s *Simulator) abort(rq *request) reply {
	m, bad := s.lookupEditable(rq)
	if bad != nil {
		return *bad
	}
	comment := rq.params.Get("comment")
	var target status
	var typ, done string
	switch m.status {
	case statusCommissioning:
		target, typ, done = statusNew, "User aborting node commissioning", "Aborted commissioning"
	case statusDeploying:
		target, typ, done = statusAllocated, "User aborting deployment", "Aborted deployment"
	case statusDiskErasing:
		target, typ, done = statusFailedDiskErasing, "User aborting disk erasing", "Aborted disk erasing"
	case statusTesting:
		target, typ, done = statusReady, "User aborting node testing", "Aborted testing"
		if m.previousStatus != statusCommissioning && m.previousStatus != statusReady {
			target = m.previousStatus
		}
	default:
		return conflict(fmt.Sprintf("Cannot abort in current state: node %s is in state %s.", m.systemID, m.status.name()))
	}
	m.cancelPhase()
	s.userEvent(m, rq.now, typ, rq.user, comment)
	// The status is written once the power-off completes, after the reply
	// (maas-behaviour §14.5), so the answer still shows the old status.
	s.at(m, rq.now, func(at time.Time) {
		s.abortRunningScripts(m, at)
		if m.status == statusDeploying {
			s.releaseAutoIPs(m)
		}
		s.power(m, false)
		s.setStatus(m, at, target)
		s.event(m, at, levelInfo, done, "", "")
	})
	return s.machineReply(m)
}

func (s *Simulator) releaseMachine(rq *request) reply {
	m, bad := s.lookupEditable(rq)
	if bad != nil {
		return *bad
	}
	if m.status == statusReady || m.status == statusReleasing {
		return s.machineReply(m)
	}
	if !releasableStatuses[m.status] {
		return conflict(fmt.Sprintf("Machine cannot be released in its current state ('%s').", m.status.name()))
	}
	erase := rq.flag("erase") || rq.flag("secure_erase") || rq.flag("quick_erase")
	s.startRelease(m, rq.now, rq.user, rq.params.Get("comment"), erase)
	return s.machineReply(m)
}

func (s *Simulator) markBroken(rq *request) reply {
	m, bad := s.lookupEditable(rq)
	if bad != nil {
		return *bad
	}
	// MAAS requires the caller to own the machine, admins included
	// (maas-behaviour §14.4).
	if m.owner != rq.user {
		return forbidden()
	}
	comment := rq.params.Get("comment")
	if comment == "" {
		comment = rq.params.Get("error_description")
	}
	m.cancelPhase()
	s.abortRunningScripts(m, rq.now)
	if releasableStatuses[m.status] {
		s.power(m, false)
		s.releaseAutoIPs(m)
	}
	s.setStatus(m, rq.now, statusBroken)
	m.errorDescription = comment
	s.userEvent(m, rq.now, "User marking node broken", rq.user, comment)
	return s.machineReply(m)
}

func (s *Simulator) markFixed(rq *request) reply {
	m, bad := s.lookupEditable(rq)
	if bad != nil {
		return *bad
	}
	if m.status != statusBroken {
		return conflict("Can't mark a non-broken node as 'Ready'.")
	}
	target := statusReady
	if m.previousStatus == statusDeployed {
		target = statusDeployed
	}
	s.setStatus(m, rq.now, target)
	m.osystem = ""
	m.distroSeries = ""
	m.errorDescription = ""
	s.userEvent(m, rq.now, "User marking node fixed", rq.user, rq.params.Get("comment"))
	return s.machineReply(m)
}

func (s *Simulator) powerOn(rq *request) reply {
	m, bad := s.lookupEditable(rq)
	if bad != nil {
		return *bad
	}
	if m.owner == "" {
		return conflict("Can't start node: it hasn't been allocated.")
	}
	if m.status == statusAllocated {
		return s.deploy(m, rq)
	}
	wasOn := m.hw != nil && m.hw.powerOn
	if !s.power(m, true) {
		s.event(m, rq.now, levelError, "Failed to power on node",
			"Unable to power control the node. Please check power credentials.", "")
		return powerProblem(m)
	}
	s.userEvent(m, rq.now, "User powering up node", rq.user, rq.params.Get("comment"))
	// power_off then power_on is how an API client power-cycles a machine
	// (there is no power_cycle op, maas-behaviour §5). Powering on a host
	// that is already on changes nothing.
	if !wasOn {
		s.hostPoweredOn(m, rq.now)
	}
	return s.machineReply(m)
}

func (s *Simulator) powerOff(rq *request) reply {
	m, bad := s.lookupEditable(rq)
	if bad != nil {
		return *bad
	}
	if !s.power(m, false) {
		s.event(m, rq.now, levelError, "Failed to power off node",
			"Unable to power control the node. Please check power credentials.", "")
		return powerProblem(m)
	}
	s.userEvent(m, rq.now, "User powering down node", rq.user, rq.params.Get("comment"))
	return s.machineReply(m)
}

var storageLayouts = []string{"flat", "lvm", "bcache", "vmfs6", "vmfs7", "custom", "blank"}

func (s *Simulator) setStorageLayout(rq *request) reply {
	m, bad := s.lookupEditable(rq)
	if bad != nil {
		return *bad
	}
	if m.status != statusReady {
		return conflict("Cannot change the storage layout on a machine that is not Ready.")
	}
	layout := rq.params.Get("storage_layout")
	if !contains(storageLayouts, layout) {
		if layout == "" {
			return formError("storage_layout", "This field is required.")
		}
		return formError("storage_layout", fmt.Sprintf("Select a valid choice. %s is not one of the available choices.", layout))
	}
	if len(m.disks) == 0 {
		return badRequest("Machine is missing a boot disk; no storage layout can be applied.")
	}
	if layout == "bcache" && len(m.disks) < 2 {
		return badRequest("Failed to configure storage layout 'bcache': Node doesn't have an available cache device to setup bcache.")
	}
	m.storageLayout = layout
	return s.machineReply(m)
}

func (s *Simulator) rescueMode(rq *request) reply {
	m, bad := s.lookupEditable(rq)
	if bad != nil {
		return *bad
	}
	if !rescueFrom[m.status] {
		return conflict(fmt.Sprintf("Invalid transition: %s -> %s.", m.status.name(), statusEnteringRescueMode.name()))
	}
	s.startRescue(m, rq.now, rq.user)
	return s.machineReply(m)
}

func (s *Simulator) exitRescueMode(rq *request) reply {
	m, bad := s.lookupEditable(rq)
	if bad != nil {
		return *bad
	}
	if !exitRescueFrom[m.status] {
		return conflict(fmt.Sprintf("Invalid transition: %s -> %s.", m.status.name(), statusExitingRescueMode.name()))
	}
	s.exitRescue(m, rq.now, rq.user)
	return s.machineReply(m)
}

func (s *Simulator) lock(rq *request) reply {
	m, bad := s.lookup(rq)
	if bad != nil {
		return *bad
	}
	if m.locked {
		return conflict("Machine is already locked")
	}
	if m.status != statusDeployed && m.status != statusDeploying {
		return conflict("Can't lock, node is not deployed or deploying")
	}
	m.locked = true
	s.userEvent(m, rq.now, "User locking node", rq.user, rq.params.Get("comment"))
	return s.machineReply(m)
}

func (s *Simulator) unlock(rq *request) reply {
	m, bad := s.lookup(rq)
	if bad != nil {
		return *bad
	}
	if !m.locked {
		return conflict("Machine is not locked")
	}
	m.locked = false
	s.userEvent(m, rq.now, "User unlocking node", rq.user, rq.params.Get("comment"))
	return s.machineReply(m)
}
