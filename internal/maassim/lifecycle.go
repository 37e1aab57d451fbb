package maassim

import (
	"fmt"
	"net/netip"
	"strings"
	"time"
)

// --- events ------------------------------------------------------------------

// event records a node event; status_message follows the newest one of level
// INFO or above (maas-behaviour §7, §11).
func (s *Simulator) event(m *machine, at time.Time, level int, typ, description, user string) {
	e := &event{
		id: s.st.nextEventID, m: m, username: user, level: level, typ: typ,
		description: description, created: at,
	}
	s.st.nextEventID++
	s.st.events = append(s.st.events, e)
	m.events = append(m.events, e)
	if level >= levelInfo {
		m.statusEvent = e
	}
}

// userEvent is a DEBUG "User …" request event, described "(user)" or
// "(user) - comment".
func (s *Simulator) userEvent(m *machine, at time.Time, typ, user, comment string) {
	desc := "(" + user + ")"
	if comment != "" {
		desc += " - " + comment
	}
	s.event(m, at, levelDebug, typ, desc, user)
}

// markFailed moves m to the failure status of its phase, storing the comment
// as error_description and logging "Marking node failed" (MS/models/node.py
// mark_failed).
func (s *Simulator) markFailed(m *machine, at time.Time, st status, comment string) {
	m.cancelPhase()
	s.setStatus(m, at, st)
	m.errorDescription = comment
	s.event(m, at, levelError, "Marking node failed", comment, "")
	s.abortRunningScripts(m, at)
}

// --- script results --------------------------------------------------------

func (s *Simulator) newSet(m *machine, typ int, at time.Time, names []string, hwTypes []int, estimate string) *scriptSet {
	ss := &scriptSet{id: s.st.nextSetID, m: m, typ: typ}
	s.st.nextSetID++
	for n, name := range names {
		r := &scriptResult{
			id: s.st.nextResultID, scriptID: 10 + n + 20*typ, name: name, status: scriptPending,
			created: at, updated: at, estimated: estimate,
		}
		if hwTypes != nil {
			r.hardwareType = hwTypes[n]
		}
		s.st.nextResultID++
		ss.results = append(ss.results, r)
	}
	m.sets = append(m.sets, ss)
	return ss
}

func startResults(ss *scriptSet, at time.Time) {
	if ss == nil {
		return
	}
	for _, r := range ss.results {
		if r.status == scriptPending {
			t := at
			r.status = scriptRunning
			r.started = &t
			r.updated = at
		}
	}
}

func finishResult(r *scriptResult, at time.Time, st, exit int, stdout, stderr string) {
	t := at
	if r.started == nil {
		r.started = &t
	}
	r.ended = &t
	r.status = st
	e := exit
	r.exitStatus = &e
	r.stdout = []byte(stdout)
	r.stderr = []byte(stderr)
	r.result = []byte(fmt.Sprintf("status: %s\n", strings.ToLower(scriptStatusNames[st])))
	r.updated = at
}

// abortRunningScripts marks pending and running results of m's current sets
// Aborted, as MAAS does when a machine enters a failed status or is aborted.
func (s *Simulator) abortRunningScripts(m *machine, at time.Time) {
	for _, ss := range []*scriptSet{m.currentCommissioning, m.currentTesting, m.currentInstallation, m.currentRelease} {
		if ss == nil {
			continue
		}
		for _, r := range ss.results {
			if r.status == scriptPending || r.status == scriptRunning {
				r.status = scriptAborted
				r.updated = at
			}
		}
	}
}

// --- power -----------------------------------------------------------------

// power drives the host's BMC. It fails when no host answers at the power
// address or the host's power_fails fault is set.
func (s *Simulator) power(m *machine, on bool) bool {
	if m.hw == nil || m.hw.faults.PowerFails || !m.bmcAccepts() {
		return false
	}
	m.hw.powerOn = on
	return true
}

// powerFailure reverts a status change whose power-on failed after the
// reply was built: the caller sees the new status once, then the old one
// with the event MAAS logs (maas-behaviour §14.14).
func (s *Simulator) powerFailure(m *machine, at time.Time, from, to status) {
	s.at(m, at, func(at time.Time) {
		m.cancelPhase()
		s.abortRunningScripts(m, at)
		s.setStatus(m, at, from)
		s.event(m, at, levelError, "Failed to power on node", fmt.Sprintf(
			"Aborting %s and reverting to %s. Unable to power control the node. Please check power credentials.",
			strings.ToUpper(to.name()), strings.ToUpper(from.name())), "")
	})
}

// --- commissioning ---------------------------------------------------------

var commissioningScripts = []string{
	"00-maas-00-support-info", "20-maas-01-install-lldpd", "30-maas-01-bmc-config",
	"50-maas-01-commissioning", "maas-lshw",
}

// startCommissioning moves m to Commissioning (maas-behaviour §5 commission).
func (s *Simulator) startCommissioning(m *machine, at time.Time, user string, flags commissionFlags) {
	m.cancelPhase()
	from := m.status
	// MAAS registers the request event before the status change is saved
	// (MS/models/node.py start_commissioning).
	s.userEvent(m, at, "User starting node commissioning", user, "")
	s.setStatus(m, at, statusCommissioning)
	m.owner = user
	m.commission = flags
	m.errorDescription = ""
	m.currentCommissioning = s.newSet(m, resultCommissioning, at, scriptNames(commissioningScripts, flags.scripts), nil, "0:00:10")
	m.currentTesting = nil
	switch {
	case flags.noTesting && len(flags.tests) == 0:
	case len(flags.tests) > 0:
		hw := make([]int, len(flags.tests))
		for k, sc := range flags.tests {
			hw[k] = sc.hwType
		}
		m.currentTesting = s.newSet(m, resultTesting, at, scriptNames(nil, flags.tests), hw, "0:00:30")
	default:
		m.currentTesting = s.newSet(m, resultTesting, at, []string{"smartctl-validate"}, []int{3}, "0:00:30")
	}
	// MAAS power-cycles a machine that is on and powers on one that is off
	// (maas-behaviour §5); either way the host sees power arrive.
	if !s.power(m, true) {
		s.powerFailure(m, at, from, statusCommissioning)
		return
	}
	switch hw := m.hw; {
	case hw == nil:
	case hw.faults.NeverBoots:
		hw.hung = true
	case hw.faults.NoBootUntilPowerCycle:
		hw.faults.NoBootUntilPowerCycle = false
		hw.hung = true
	default:
		// Any start after the first is a cycle or a power-on from off:
		// a hung host boots.
		hw.hung = false
	}
	s.commissioningTimeout(m, at)
	if m.hw != nil && m.hw.hung {
		// Powered, but stuck before PXE: no event until someone cycles it
		// or node_timeout fails the commissioning.
		return
	}
	s.commissioningBoot(m, at)
}

// commissioningTimeout fails a commissioning still running node_timeout
// after it started, as MAAS's status monitor does (maas-behaviour §4).
func (s *Simulator) commissioningTimeout(m *machine, at time.Time) {
	set := m.currentCommissioning
	minutes := int(s.dur.NodeTimeout.Round(time.Minute) / time.Minute)
	s.at(m, at.Add(s.dur.NodeTimeout), func(at time.Time) {
		if m.status != statusCommissioning || m.currentCommissioning != set {
			return
		}
		s.markFailed(m, at, statusFailedCommissioning,
			fmt.Sprintf("Node operation 'Commissioning' timed out after %d minutes.", minutes))
	})
}

// hostPoweredOn is the host seeing power arrive after being off. A hung host
// boots now; if MAAS is still waiting for it to commission, commissioning
// proceeds from here.
func (s *Simulator) hostPoweredOn(m *machine, at time.Time) {
	hw := m.hw
	if hw == nil || !hw.hung || hw.faults.NeverBoots {
		return
	}
	hw.hung = false
	if m.status == statusCommissioning {
		s.commissioningBoot(m, at)
	}
}

// commissioningBoot plays the host PXE-booting the ephemeral image and
// running the commissioning scripts.
func (s *Simulator) commissioningBoot(m *machine, at time.Time) {
	d := s.dur.Commissioning
	s.event(m, at, levelInfo, "Performing PXE boot", "", "")
	s.at(m, at.Add(d/4), func(at time.Time) {
		s.event(m, at, levelInfo, "Loading ephemeral", "", "")
		s.event(m, at, levelInfo, "Commissioning", "", "")
		startResults(m.currentCommissioning, at)
	})
	s.at(m, at.Add(d), func(at time.Time) { s.commissioningDone(m, at) })
}

func (s *Simulator) commissioningDone(m *machine, at time.Time) {
	hw := m.hw
	ss := m.currentCommissioning
	failing := failingResult(hw, ss)
	if hw != nil && hw.faults.CommissionFailures > 0 {
		hw.faults.CommissionFailures--
		failing = "50-maas-01-commissioning"
	}
	if failing != "" {
		for _, r := range ss.results {
			if r.name == failing && failing == "50-maas-01-commissioning" {
				finishResult(r, at, scriptFailed, 1, "Gathering machine resources...\n",
					"machine-resources: failed to read /sys/class/dmi/id: input/output error\n")
				continue
			}
			if r.name == failing {
				stdout, stderr := failingScriptOutput(r.name)
				finishResult(r, at, scriptFailed, 1, stdout, stderr)
				continue
			}
			finishResult(r, at, scriptPassed, 0, r.name+": done\n", "")
		}
		s.abortRunningScripts(m, at)
		m.commissioned = false
		s.setStatus(m, at, statusFailedCommissioning)
		m.owner = ""
		s.event(m, at, levelInfo, "Failed commissioning", "", "")
		s.power(m, false)
		return
	}
	s.applyCommissioning(m)
	for _, r := range ss.results {
		finishResult(r, at, scriptPassed, 0, commissioningOutput(m, r.name), "")
	}
	if m.currentTesting == nil {
		s.commissioningFinished(m, at)
		return
	}
	s.setStatus(m, at, statusTesting)
	startResults(m.currentTesting, at)
	s.at(m, at.Add(s.dur.Testing), func(at time.Time) { s.testingDone(m, at) })
}

func (s *Simulator) testingDone(m *machine, at time.Time) {
	r := m.currentTesting.results[0]
	if failing := failingResult(m.hw, m.currentTesting); failing != "" {
		// The failing_script fault: that test fails, the others pass.
		for _, x := range m.currentTesting.results {
			if x.name == failing {
				stdout, stderr := failingScriptOutput(x.name)
				finishResult(x, at, scriptFailed, 1, stdout, stderr)
			} else {
				finishResult(x, at, scriptPassed, 0, x.name+": passed\n", "")
			}
		}
		s.setStatus(m, at, statusFailedTesting)
		m.owner = ""
		s.event(m, at, levelInfo, "Failed testing", "", "")
		s.power(m, false)
		return
	}
	if m.hw != nil && m.hw.faults.TestingFailures > 0 {
		m.hw.faults.TestingFailures--
		finishResult(r, at, scriptFailed, 1, "smartctl: SMART overall-health self-assessment test result: FAILED!\n",
			"Error: SMART status FAILED on /dev/nvme0n1\n")
		s.setStatus(m, at, statusFailedTesting)
		m.owner = ""
		s.event(m, at, levelInfo, "Failed testing", "", "")
		s.power(m, false)
		return
	}
	for _, x := range m.currentTesting.results {
		out := x.name + ": passed\n"
		if x.name == "smartctl-validate" {
			out = "SMART overall-health self-assessment test result: PASSED\n"
		}
		finishResult(x, at, scriptPassed, 0, out, "")
	}
	s.commissioningFinished(m, at)
}

func (s *Simulator) commissioningFinished(m *machine, at time.Time) {
	s.setStatus(m, at, statusReady)
	s.event(m, at, levelInfo, "Ready", "", "")
	if !m.commission.enableSSH {
		s.power(m, false)
	}
}

func commissioningOutput(m *machine, name string) string {
	switch name {
	case "50-maas-01-commissioning":
		return fmt.Sprintf("Gathering machine resources...\ncpu: %d cores\nmemory: %d MiB\ndisks: %d\nnics: %d\n",
			m.cpuCount, m.memory, len(m.disks), len(m.ifaces))
	case "30-maas-01-bmc-config":
		if m.commission.skipBMCConfig {
			return "INFO: BMC configuration skipped (skip_bmc_config)\n"
		}
		return "INFO: IPMI user maas configured\n"
	default:
		return name + ": done\n"
	}
}

// applyCommissioning records what commissioning discovered from the host:
// hardware, interfaces and their initial links (unless skip_networking), the
// storage layout (unless skip_storage), and the IPMI user MAAS creates on the
// BMC (unless skip_bmc_config; maas-behaviour §8).
func (s *Simulator) applyCommissioning(m *machine) {
	hw := m.hw
	if hw == nil {
		// The power address was changed away from the host mid-phase:
		// nothing was discovered.
		return
	}
	m.commissioned = true
	spec := hw.spec
	m.architecture = spec.Architecture
	m.cpuCount = spec.CPUCount
	m.memory = spec.MemoryMiB
	m.disks = visibleDisks(hw)
	s.assignDiskIDs(m)
	if !m.commission.skipStorage || m.storageLayout == "" {
		m.storageLayout = "flat"
	}
	if !m.commission.skipNetworking || len(m.ifaces) == 0 {
		s.buildInterfaces(m, true)
	}
	if !m.commission.skipBMCConfig && m.powerType == "ipmi" {
		m.setPowerParam("power_user", "maas")
		m.setPowerParam("power_pass", s.randomString(20))
		hw.addBMCUser(m.powerParams["power_user"], m.powerParams["power_pass"])
	}
	s.discoverDevices(m)
}

// buildInterfaces creates m's interfaces from its host, keeping the ids of
// known MACs. With initialLinks the PXE interface gets an AUTO link to the
// subnet and the others LINK_UP, as set_initial_networking_configuration
// does; the host's pxe_unlinked fault leaves the PXE interface disconnected.
func (s *Simulator) buildInterfaces(m *machine, initialLinks bool) {
	old := map[string]*iface{}
	for _, i := range m.ifaces {
		if i.kind == "" { // a bond carries its first member's MAC
			old[i.mac] = i
		} else {
			s.releaseLinks(i) // a bond or VLAN interface is not rebuilt: free its addresses
		}
	}
	macs := visibleMACs(m.hw)
	ifaces := make([]*iface, 0, len(macs))
	for n, mac := range macs {
		i := old[mac]
		if i == nil {
			i = &iface{id: s.st.nextIfaceID, mac: mac}
			s.st.nextIfaceID++
		}
		i.name = fmt.Sprintf("eno%d", n+1)
		i.enabled = true
		s.releaseLinks(i)
		i.links = nil
		i.vlan = s.net.vlan
		if initialLinks {
			i.discovered = nil
			pxeLease := n == 0 && !m.hw.faults.PXEUnlinked && !m.hw.faults.PXENotDiscovered
			if pxeLease {
				// The ephemeral environment took a DHCP lease from the
				// dynamic range: MAAS records it as DISCOVERED.
				i.discovered = []discoveredAddr{{ip: s.leaseFor(i), subnet: s.net.subnet}}
			}
			switch {
			case n == 0 && m.hw.faults.PXEUnlinked:
				i.vlan = nil
			case n == 0 && m.hw.faults.PXELinkUpOnly:
				i.links = []*link{s.newLink("link_up", nil, "")}
			case n == 0:
				// AUTO on the discovered subnet, else on the VLAN's subnet.
				i.links = []*link{s.newLink("auto", s.net.subnet, "")}
			default:
				i.links = []*link{s.newLink("link_up", nil, "")}
			}
		}
		ifaces = append(ifaces, i)
	}
	m.ifaces = ifaces
	m.bootIfaceID = ifaces[0].id
}

// leaseFor is the DHCP address i took during commissioning: one of the
// subnet's dynamic range, fixed per interface so replies are deterministic.
func (s *Simulator) leaseFor(i *iface) string {
	lo, hi := s.net.subnet.dynamicLow.As4(), s.net.subnet.dynamicHi.As4()
	span := int(hi[3]) - int(lo[3]) + 1
	a := s.net.subnet.dynamicLow
	for n := i.id % span; n > 0; n-- {
		a = a.Next()
	}
	return a.String()
}

func (s *Simulator) newLink(mode string, sn *subnet, ip string) *link {
	l := &link{id: s.st.nextLinkID, mode: mode, subnet: sn, ip: ip}
	s.st.nextLinkID++
	return l
}

// releaseLinks frees every address of i's links, static ones included.
func (s *Simulator) releaseLinks(i *iface) {
	for _, l := range i.links {
		s.freeIP(l)
	}
}

func (s *Simulator) freeIP(l *link) {
	if l.ip == "" {
		return
	}
	if a, err := netip.ParseAddr(l.ip); err == nil {
		delete(s.st.ipsInUse, a)
	}
	l.ip = ""
}

// allocateIP hands out the next free address of the subnet outside its
// gateway and dynamic range.
func (s *Simulator) allocateIP(sn *subnet) (string, bool) {
	for a := sn.cidr.Addr().Next(); sn.cidr.Contains(a); a = a.Next() {
		if a == sn.gateway || sn.inDynamicRange(a) || s.st.ipsInUse[a] || a.Next() == (netip.Addr{}) || !sn.cidr.Contains(a.Next()) {
			continue
		}
		s.st.ipsInUse[a] = true
		return a.String(), true
	}
	return "", false
}

// assignAutoIPs gives every AUTO link of m an address, or none at all when
// the subnet is exhausted.
func (s *Simulator) assignAutoIPs(m *machine) bool {
	var done []*link
	for _, i := range m.ifaces {
		for _, l := range i.links {
			if l.mode != "auto" || l.subnet == nil || l.ip != "" {
				continue
			}
			ip, ok := s.allocateIP(l.subnet)
			if !ok {
				for _, d := range done {
					s.freeIP(d)
				}
				return false
			}
			l.ip = ip
			done = append(done, l)
		}
	}
	return true
}

func (s *Simulator) releaseAutoIPs(m *machine) {
	for _, i := range m.ifaces {
		for _, l := range i.links {
			if l.mode == "auto" || l.mode == "dhcp" {
				s.freeIP(l)
			}
		}
	}
}

// hasNetwork is deploy's network check: some interface has a non-LINK_UP
// link with a subnet (maas-behaviour §14.8).
func (m *machine) hasNetwork() bool {
	for _, i := range m.ifaces {
		for _, l := range i.links {
			if l.mode != "link_up" && l.subnet != nil {
				return true
			}
		}
	}
	return false
}

// --- deployment ------------------------------------------------------------

// startDeployment moves an Allocated m to Deploying and plays the install.
func (s *Simulator) startDeployment(m *machine, at time.Time, user, comment string) {
	m.cancelPhase()
	s.setStatus(m, at, statusDeploying)
	m.errorDescription = ""
	m.deployStart = at
	m.currentInstallation = s.newSet(m, resultInstallation, at, []string{"/tmp/install.log"}, nil, "0:05:00")
	m.deploy = deployOK
	if hw := m.hw; hw != nil {
		switch {
		case hw.faults.DeployOtherFailures > 0:
			hw.faults.DeployOtherFailures--
			m.deploy = deployCurtinFails
		case hw.faults.DeployDatasourceFailures > 0:
			hw.faults.DeployDatasourceFailures--
			m.deploy = deployDatasourceFails
		}
	}
	s.userEvent(m, at, "User starting deployment", user, comment)
	s.event(m, at, levelInfo, "Deploying", "", "")
	if !s.power(m, true) {
		s.powerFailure(m, at, statusAllocated, statusDeploying)
		return
	}
	d := s.dur.Deploying
	s.at(m, at.Add(d/16), func(at time.Time) { s.event(m, at, levelInfo, "Performing PXE boot", "", "") })
	s.at(m, at.Add(2*d/16), func(at time.Time) { s.event(m, at, levelInfo, "Loading ephemeral", "", "") })
	s.at(m, at.Add(3*d/16), func(at time.Time) {
		s.event(m, at, levelInfo, "Installing OS", "", "")
		startResults(m.currentInstallation, at)
		// curtin repartitions the disk: the previous OS and what cloud-init
		// wrote on it are gone.
		if m.hw != nil {
			m.hw.bootstrap = nil
		}
	})
	s.at(m, at.Add(10*d/16), func(at time.Time) { s.curtinDone(m, at) })
}

func (s *Simulator) curtinDone(m *machine, at time.Time) {
	r := m.currentInstallation.results[0]
	if m.deploy == deployCurtinFails {
		finishResult(r, at, scriptFailed, 1, curtinLog(m, false), "")
		s.event(m, at, levelError, "Node installation failure", "'curtin' curtin command install", "")
		s.markFailed(m, at, statusFailedDeployment,
			"Installation failed (refer to the installation log for more information).")
		return
	}
	finishResult(r, at, scriptPassed, 0, curtinLog(m, true), "")
	s.event(m, at, levelInfo, "Configuring OS", "", "")
	s.event(m, at, levelInfo, "Rebooting", "", "")
	s.at(m, m.deployStart.Add(s.dur.Deploying), func(at time.Time) { s.deployedOSBooted(m, at) })
}

// deployedOSBooted is the installed OS's first boot: cloud-init fetches its
// user-data from the metadata service, which is what makes MAAS say Deployed
// (maas-behaviour §5, §14.1) — unless the datasource is unreachable.
func (s *Simulator) deployedOSBooted(m *machine, at time.Time) {
	if m.deploy == deployDatasourceFails {
		url := "http://" + m.metadataHost + "/MAAS/metadata/"
		s.event(m, at, levelError, "Node post-installation failure", fmt.Sprintf(
			"'cloudinit' init-network: DataSourceMAAS: failed to read user-data from metadata URL %s: "+
				"url error [[Errno 113] No route to host] (metadata service not reachable)", url), "")
		deadline := m.deployStart.Add(s.dur.NodeTimeout)
		if deadline.Before(at) {
			deadline = at
		}
		minutes := int(s.dur.NodeTimeout.Round(time.Minute) / time.Minute)
		s.at(m, deadline, func(at time.Time) {
			s.markFailed(m, at, statusFailedDeployment,
				fmt.Sprintf("Node operation 'Deploying' timed out after %d minutes.", minutes))
		})
		return
	}
	s.setStatus(m, at, statusDeployed)
	m.netboot = false
	s.event(m, at, levelInfo, "Deployed", "", "")
	s.playNode(m, at)
}

func curtinLog(m *machine, ok bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "curtin: Installation started. (%s)\n", "23.1.1")
	b.WriteString("start: cmd-install/stage-partitioning/builtin/cmd-block-meta: curtin command block-meta\n")
	fmt.Fprintf(&b, "finish: cmd-install/stage-partitioning/builtin/cmd-block-meta: SUCCESS: configuring storage layout %s\n", m.storageLayout)
	b.WriteString("start: cmd-install/stage-network/builtin/cmd-net-meta: curtin command net-meta\n")
	b.WriteString("finish: cmd-install/stage-network/builtin/cmd-net-meta: SUCCESS: curtin command net-meta\n")
	b.WriteString("start: cmd-install/stage-extract/builtin/cmd-extract: curtin command extract\n")
	fmt.Fprintf(&b, "    acquiring and extracting image from http://maas/images/ubuntu/amd64/ga-22.04/%s/stable/squashfs\n", m.distroSeries)
	if !ok {
		b.WriteString("finish: cmd-install/stage-extract/builtin/cmd-extract: FAIL: curtin command extract\n")
		b.WriteString("Traceback (most recent call last):\n")
		b.WriteString("  File \"/curtin/curtin/commands/main.py\", line 202, in main\n")
		b.WriteString("curtin.util.ProcessExecutionError: Unexpected error while running command.\n")
		b.WriteString("Command: ['unsquashfs', '-f', '-d', '/tmp/tmpxk2/target', '/tmp/root.squashfs']\n")
		b.WriteString("Exit code: 1\nStderr: write failed: No space left on device\n")
		b.WriteString("curtin: Installation failed with exception: Unexpected error while running command.\n")
		return b.String()
	}
	b.WriteString("finish: cmd-install/stage-extract/builtin/cmd-extract: SUCCESS: curtin command extract\n")
	b.WriteString("start: cmd-install/stage-curthooks/builtin/cmd-curthooks: curtin command curthooks\n")
	b.WriteString("finish: cmd-install/stage-curthooks/builtin/cmd-curthooks: SUCCESS: curtin command curthooks\n")
	b.WriteString("curtin: Installation finished.\n")
	return b.String()
}

// clearDeployment forgets what a deployment left on the record.
func (s *Simulator) clearDeployment(m *machine) {
	s.releaseAutoIPs(m)
	m.osystem = ""
	m.distroSeries = ""
	m.hweKernel = ""
	m.userData = nil
	m.agentName = ""
	m.netboot = true
}

// --- release ---------------------------------------------------------------

// startRelease releases m, erasing first when asked (maas-behaviour §5 release).
func (s *Simulator) startRelease(m *machine, at time.Time, user, comment string, erase bool) {
	m.cancelPhase()
	s.userEvent(m, at, "User releasing node", user, comment)
	if !erase {
		s.startReleasing(m, at)
		return
	}
	from := m.status
	s.setStatus(m, at, statusDiskErasing)
	if !s.power(m, true) {
		s.powerFailure(m, at, from, statusDiskErasing)
		return
	}
	s.event(m, at, levelInfo, "Performing PXE boot", "", "")
	s.startWipe(m, at)
	if s.eraseHangs(m) {
		return
	}
	s.at(m, at.Add(s.dur.DiskErasing), func(at time.Time) {
		if m.hw != nil && m.hw.faults.EraseFailures > 0 {
			m.hw.faults.EraseFailures--
			s.finishWipe(m, at, false)
			s.markFailed(m, at, statusFailedDiskErasing, "Failed to erase disks.")
			return
		}
		s.finishWipe(m, at, true)
		if m.hw != nil {
			m.hw.bootstrap = nil
		}
		s.event(m, at, levelInfo, "Disks erased", "", "")
		s.startReleasing(m, at)
	})
}

// startReleasing waits for the power-off that completes a release. A host
// already off goes straight to Ready; a BMC that cannot be reached leaves the
// machine Releasing until the 5-minute timeout (maas-behaviour §14.6).
func (s *Simulator) startReleasing(m *machine, at time.Time) {
	s.setStatus(m, at, statusReleasing)
	s.clearDeployment(m)
	if m.hw != nil && !m.hw.faults.PowerFails && !m.hw.powerOn {
		s.finishRelease(m, at)
		return
	}
	if !s.power(m, false) {
		minutes := int(s.dur.PowerOffTimeout.Round(time.Minute) / time.Minute)
		s.at(m, at.Add(s.dur.PowerOffTimeout), func(at time.Time) {
			s.markFailed(m, at, statusFailedReleasing,
				fmt.Sprintf("Node operation 'Releasing' timed out after %d minutes.", minutes))
		})
		return
	}
	s.at(m, at.Add(s.dur.Releasing), func(at time.Time) { s.finishRelease(m, at) })
}

func (s *Simulator) finishRelease(m *machine, at time.Time) {
	target := statusReady
	if !m.commissioned {
		target = statusNew
	}
	s.setStatus(m, at, target)
	m.errorDescription = ""
	s.event(m, at, levelInfo, "Released", "", "")
}

// --- rescue mode -----------------------------------------------------------

func (s *Simulator) startRescue(m *machine, at time.Time, user string) {
	m.cancelPhase()
	from := m.status
	m.rescuePrevious = from
	s.setStatus(m, at, statusEnteringRescueMode)
	s.userEvent(m, at, "User starting rescue mode", user, "")
	if !s.power(m, true) {
		s.powerFailure(m, at, from, statusEnteringRescueMode)
		return
	}
	s.at(m, at.Add(s.dur.RescueMode), func(at time.Time) {
		s.setStatus(m, at, statusRescueMode)
		s.event(m, at, levelInfo, "Rescue mode", "", "")
	})
}

func (s *Simulator) exitRescue(m *machine, at time.Time, user string) {
	m.cancelPhase()
	s.setStatus(m, at, statusExitingRescueMode)
	s.userEvent(m, at, "User stopping rescue mode", user, "")
	back := m.rescuePrevious
	on := back == statusDeployed
	if !s.power(m, on) {
		s.at(m, at.Add(s.dur.PowerOffTimeout), func(at time.Time) {
			s.markFailed(m, at, statusFailedExitingRescueMode,
				fmt.Sprintf("Node operation 'Exiting rescue mode' timed out after %d minutes.",
					int(s.dur.PowerOffTimeout.Round(time.Minute)/time.Minute)))
		})
		return
	}
	s.at(m, at.Add(s.dur.RescueMode), func(at time.Time) {
		s.setStatus(m, at, back)
		s.event(m, at, levelInfo, "Exited rescue mode", "", "")
	})
}

// randomString is a seeded password such as the one commissioning gives the
// IPMI user it creates.
func (s *Simulator) randomString(n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[s.rng.IntN(len(alphabet))]
	}
	return string(b)
}
