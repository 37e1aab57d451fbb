package maassim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"
)

// SimulatorInputError reports a control-API request the simulator cannot
// act on, naming the offending field.
type SimulatorInputError struct {
	Field  string
	Reason string
}

func (e *SimulatorInputError) Error() string {
	return fmt.Sprintf("invalid %s: %s", e.Field, e.Reason)
}

// SimulatorConflictError reports a host that clashes with one already added
// (same BMC address or MAC).
type SimulatorConflictError struct {
	Field string
	Value string
}

func (e *SimulatorConflictError) Error() string {
	return fmt.Sprintf("a host with %s %s already exists", e.Field, e.Value)
}

// SimulatorNotFoundError reports a control-API lookup that found nothing:
// no host of that name, or nothing of the kind asked for on it.
type SimulatorNotFoundError struct {
	Hostname string
	Reason   string
}

func (e *SimulatorNotFoundError) Error() string {
	return fmt.Sprintf("host %s: %s", e.Hostname, e.Reason)
}

// defaultDisk is the disk a host gets when none is given.
var defaultDisk = Disk{Name: "nvme0n1", SizeBytes: 3840755982336, Model: "SAMSUNG MZQL23T8HCLS-00A07"}

// AddHardware adds a physical host (POST /_sim/hardware). MAAS does not know
// it until a machine is created with its BMC address.
func (s *Simulator) AddHardware(h Hardware) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err := s.addHardwareLocked(h)
	return err
}

func (s *Simulator) addHardwareLocked(h Hardware) (*hardware, error) {
	h.BMCIP = strings.TrimSpace(h.BMCIP)
	if h.BMCIP == "" || strings.ContainsAny(h.BMCIP, " /") {
		return nil, &SimulatorInputError{Field: "bmc_ip", Reason: "a BMC address is required"}
	}
	mac, err := net.ParseMAC(h.PXEMAC)
	if err != nil {
		return nil, &SimulatorInputError{Field: "pxe_mac", Reason: "not a MAC address"}
	}
	h.PXEMAC = mac.String()
	for n, x := range h.ExtraMACs {
		mac, err := net.ParseMAC(x)
		if err != nil {
			return nil, &SimulatorInputError{Field: "extra_macs", Reason: "not a MAC address"}
		}
		h.ExtraMACs[n] = mac.String()
	}
	if h.Faults.negativeCount() {
		return nil, &SimulatorInputError{Field: "faults", Reason: "counts cannot be negative"}
	}
	if _, dup := s.st.hwByBMC[h.BMCIP]; dup {
		return nil, &SimulatorConflictError{Field: "bmc_ip", Value: h.BMCIP}
	}
	for _, m := range append([]string{h.PXEMAC}, h.ExtraMACs...) {
		if _, dup := s.st.hwByMAC[m]; dup {
			return nil, &SimulatorConflictError{Field: "mac", Value: m}
		}
	}
	if h.Architecture == "" {
		h.Architecture = "amd64/generic"
	}
	h.Architecture = fixArchitecture(h.Architecture)
	if h.CPUCount <= 0 {
		h.CPUCount = 64
	}
	if h.MemoryMiB <= 0 {
		h.MemoryMiB = 524288
	}
	if len(h.Disks) == 0 {
		d := defaultDisk
		d.Serial = "S64H" + strings.ToUpper(strings.ReplaceAll(h.PXEMAC, ":", ""))
		h.Disks = []Disk{d}
	}
	if err := setHardwareDefaults(&h); err != nil {
		return nil, err
	}
	hw := &hardware{spec: h, faults: h.Faults, bmcUsers: bmcUsersOf(h)}
	s.st.hwByBMC[h.BMCIP] = hw
	for _, m := range append([]string{h.PXEMAC}, h.ExtraMACs...) {
		s.st.hwByMAC[m] = hw
	}
	s.st.hwOrder = append(s.st.hwOrder, hw)
	// A record that already points at this BMC now reaches a host.
	for _, m := range s.st.order {
		if m.hw == nil && m.powerType == "ipmi" && m.powerParams["power_address"] == h.BMCIP {
			m.hw = hw
		}
	}
	return hw, nil
}

// AddMachine adds a record MAAS already has (POST /_sim/machines) and
// returns its system id. See MachineSeed for the accepted statuses.
func (s *Simulator) AddMachine(seed MachineSeed) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.advanceLocked(now)
	m, err := s.addMachineLocked(seed, now)
	if err != nil {
		return "", err
	}
	return m.systemID, nil
}

func (s *Simulator) addMachineLocked(seed MachineSeed, now time.Time) (*machine, error) {
	at := now.UTC()
	name := strings.TrimSpace(seed.Status)
	if name == "" {
		name = "new"
	}
	st, ok := statusByConstant[strings.ToLower(name)]
	if !ok {
		return nil, &SimulatorInputError{Field: "status", Reason: fmt.Sprintf("%q is not a MAAS status name (new, ready, deployed, failed_deployment, …)", seed.Status)}
	}
	var hw *hardware
	bmc := strings.TrimSpace(seed.BMCIP)
	switch {
	case bmc != "":
		hw = s.st.hwByBMC[bmc]
		if hw == nil {
			mac := seed.PXEMAC
			for seed.PXEMAC == "" && (mac == "" || s.st.hwByMAC[mac] != nil) {
				mac = fmt.Sprintf("52:54:00:%02x:%02x:%02x", s.rng.IntN(256), s.rng.IntN(256), s.rng.IntN(256))
			}
			var err error
			if hw, err = s.addHardwareLocked(Hardware{BMCIP: bmc, PXEMAC: mac, Hostname: seed.Hostname}); err != nil {
				return nil, err
			}
		} else if seed.PXEMAC != "" && normMAC(seed.PXEMAC) != hw.spec.PXEMAC {
			return nil, &SimulatorInputError{Field: "pxe_mac", Reason: "does not match the host at bmc_ip"}
		}
	case seed.PXEMAC != "":
		if _, err := net.ParseMAC(seed.PXEMAC); err != nil {
			return nil, &SimulatorInputError{Field: "pxe_mac", Reason: "not a MAC address"}
		}
		hw = s.st.hwByMAC[normMAC(seed.PXEMAC)]
	}

	m := s.newMachine(strings.TrimSpace(seed.Hostname))
	m.hw = hw
	m.powerType = "ipmi"
	m.setPowerParams(map[string]string{
		"power_address": bmc, "power_user": "maas", "power_pass": s.randomString(20),
		"power_driver": "LAN_2_0", "power_boot_type": "auto", "cipher_suite_id": "3", "privilege_level": "OPERATOR",
	})
	owner := seed.Owner
	if owner == "" {
		owner = adminUser
	}

	// Everything past New has been commissioned: record what MAAS learnt.
	if st != statusNew && st != statusCommissioning {
		m.commission = commissionFlags{skipBMCConfig: true}
		m.commissioned = true
		switch {
		case hw != nil:
			s.applyCommissioning(m)
		case seed.PXEMAC != "":
			i := &iface{id: s.st.nextIfaceID, name: "eno1", mac: normMAC(seed.PXEMAC), enabled: true, vlan: s.net.vlan,
				links: []*link{s.newLink("auto", s.net.subnet, "")}}
			s.st.nextIfaceID++
			m.ifaces = []*iface{i}
			m.bootIfaceID = i.id
			m.architecture = "amd64/generic"
		}
		m.currentCommissioning = s.newSet(m, resultCommissioning, at, commissioningScripts, nil, "0:00:10")
		for _, r := range m.currentCommissioning.results {
			finishResult(r, at, scriptPassed, 0, commissioningOutput(m, r.name), "")
		}
		m.currentTesting = s.newSet(m, resultTesting, at, []string{"smartctl-validate"}, []int{3}, "0:00:30")
		finishResult(m.currentTesting.results[0], at, scriptPassed, 0, "SMART overall-health self-assessment test result: PASSED\n", "")
	} else if hw != nil {
		s.buildInterfaces(m, false)
		m.architecture = hw.spec.Architecture
	}

	deployedState := func() {
		m.osystem, m.distroSeries, m.hweKernel = "ubuntu", "jammy", "ga-22.04"
		m.netboot = false
		s.assignAutoIPs(m)
		m.currentInstallation = s.newSet(m, resultInstallation, at, []string{"/tmp/install.log"}, nil, "0:05:00")
		if hw != nil {
			hw.powerOn = true
		}
	}
	switch st {
	case statusNew:
		m.status = statusNew
	case statusCommissioning:
		s.startCommissioning(m, at, owner, commissionFlags{})
	case statusTesting:
		m.currentTesting.results[0].status = scriptRunning
		m.currentTesting.results[0].ended = nil
		m.status = statusTesting
		s.at(m, at.Add(s.dur.Testing), func(at time.Time) { s.testingDone(m, at) })
	case statusDeploying:
		m.status = statusAllocated
		m.owner = owner
		m.osystem, m.distroSeries, m.hweKernel = "ubuntu", "jammy", "ga-22.04"
		if !s.assignAutoIPs(m) {
			return m, nil
		}
		s.startDeployment(m, at, owner, "")
	case statusDeployed:
		m.status = st
		deployedState()
		finishResult(m.currentInstallation.results[0], at, scriptPassed, 0, curtinLog(m, true), "")
	case statusFailedDeployment:
		m.status = st
		deployedState()
		finishResult(m.currentInstallation.results[0], at, scriptFailed, 1, curtinLog(m, false), "")
		m.errorDescription = "Installation failed (refer to the installation log for more information)."
	case statusReleasing:
		m.status = statusDeployed
		deployedState()
		m.owner = owner
		s.startReleasing(m, at)
	case statusDiskErasing:
		m.status = statusDeployed
		deployedState()
		m.owner = owner
		s.startRelease(m, at, owner, "", true)
	case statusEnteringRescueMode:
		m.status = statusReady
		s.startRescue(m, at, owner)
	case statusExitingRescueMode, statusRescueMode:
		m.rescuePrevious = statusReady
		m.status = statusRescueMode
		if st == statusExitingRescueMode {
			s.exitRescue(m, at, owner)
		}
	case statusFailedDiskErasing:
		m.errorDescription = "Failed to erase disks."
		m.status = st
	case statusFailedCommissioning:
		for _, r := range m.currentCommissioning.results {
			if r.name == "50-maas-01-commissioning" {
				finishResult(r, at, scriptFailed, 1, "Gathering machine resources...\n", "machine-resources: failed\n")
			}
		}
		m.commissioned = false
		m.status = st
	case statusFailedTesting:
		finishResult(m.currentTesting.results[0], at, scriptFailed, 1, "", "Error: SMART status FAILED\n")
		m.status = st
	default:
		m.status = st
	}
	if st != statusCommissioning && st != statusDeploying && st != statusReleasing && st != statusDiskErasing {
		m.previousStatus = m.status
	}
	if ownedStatuses[m.status] || ((m.status == statusBroken || m.status == statusRescueMode) && seed.Owner != "") {
		if m.owner == "" {
			m.owner = owner
		}
	}
	return m, nil
}

// NodeBootstrap returns the node bootstrap bundle JSON that cloud-init wrote
// to the disk of the host named hostname (GET
// /_sim/hardware/{hostname}/bootstrap): exactly the bytes of
// /etc/gpuaas/bootstrap-bundle.json from the user_data of the host's last
// deployment, enrollment token included. It exists for tests that replay,
// expire or cross-use that token; MAAS has no such view. The host is the one
// added with that hostname or the one linked to the machine of that
// hostname. SimulatorNotFoundError when there is no such host or its disk
// holds no bundle (never deployed with one, its OS never fetched its
// user-data, a new deployment or an erase rewrote the disk);
// SimulatorInputError when the name fits several hosts.
func (s *Simulator) NodeBootstrap(hostname string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advanceLocked(s.now())
	hw, err := s.hostNamed(hostname)
	if err != nil {
		return nil, err
	}
	if hw.bootstrap == nil {
		return nil, &SimulatorNotFoundError{Hostname: hostname, Reason: "no node bootstrap bundle on its disk"}
	}
	return bytes.Clone(hw.bootstrap), nil
}

// hostNamed finds the one host added with that hostname or linked to a
// machine of that hostname (or FQDN).
func (s *Simulator) hostNamed(hostname string) (*hardware, error) {
	name := strings.TrimSpace(hostname)
	short := strings.TrimSuffix(name, "."+defaultDomain.Name)
	var found []*hardware
	add := func(hw *hardware) {
		if hw != nil && !slices.Contains(found, hw) {
			found = append(found, hw)
		}
	}
	for _, hw := range s.st.hwOrder {
		if hw.spec.Hostname != "" && (hw.spec.Hostname == name || hw.spec.Hostname == short) {
			add(hw)
		}
	}
	for _, m := range s.byHostnames([]string{name}) {
		add(m.hw)
	}
	switch len(found) {
	case 0:
		return nil, &SimulatorNotFoundError{Hostname: hostname, Reason: "no such host"}
	case 1:
		return found[0], nil
	default:
		return nil, &SimulatorInputError{Field: "hostname", Reason: fmt.Sprintf("%d hosts have that name", len(found))}
	}
}

// --- HTTP --------------------------------------------------------------------

type hardwareView struct {
	Hardware
	PowerState      string      `json:"power_state"`
	RemainingFaults Faults      `json:"remaining_faults"`
	SystemIDs       []string    `json:"system_ids"`
	Enrollment      enrollState `json:"enrollment"`
}

func controlError(w http.ResponseWriter, err error) {
	code := http.StatusBadRequest
	var ce *SimulatorConflictError
	var nf *SimulatorNotFoundError
	switch {
	case errors.As(err, &ce):
		code = http.StatusConflict
	case errors.As(err, &nf):
		code = http.StatusNotFound
	}
	jsonReply(code, map[string]string{"error": err.Error()}).write(w)
}

func decodeStrict(r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &SimulatorInputError{Field: "body", Reason: "not the expected JSON object: " + err.Error()}
	}
	return nil
}

// serveControl answers /_sim/: the test-control API. It is not MAAS and
// takes no credentials; bind the simulator to localhost.
func (s *Simulator) serveControl(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimSuffix(r.URL.Path, "/")
	switch {
	case path == "/_sim/hardware" && r.Method == http.MethodPost:
		var h Hardware
		if err := decodeStrict(r, &h); err != nil {
			controlError(w, err)
			return
		}
		s.mu.Lock()
		hw, err := s.addHardwareLocked(h)
		var view hardwareView
		if err == nil {
			view = s.viewHardware(hw)
		}
		s.mu.Unlock()
		if err != nil {
			controlError(w, err)
			return
		}
		jsonReply(http.StatusCreated, view).write(w)
	case path == "/_sim/hardware" && r.Method == http.MethodGet:
		s.mu.Lock()
		s.advanceLocked(s.now())
		out := make([]hardwareView, 0, len(s.st.hwOrder))
		for _, hw := range s.st.hwOrder {
			out = append(out, s.viewHardware(hw))
		}
		s.mu.Unlock()
		jsonReply(http.StatusOK, out).write(w)
	case path == "/_sim/machines" && r.Method == http.MethodPost:
		var seed MachineSeed
		if err := decodeStrict(r, &seed); err != nil {
			controlError(w, err)
			return
		}
		s.mu.Lock()
		now := s.now()
		s.advanceLocked(now)
		m, err := s.addMachineLocked(seed, now)
		var body map[string]any
		if err == nil {
			body = map[string]any{
				"system_id": m.systemID, "hostname": m.hostname, "status": int(m.status),
				"status_name": m.status.name(), "resource_uri": fmt.Sprintf("%smachines/%s/", apiPrefix, m.systemID),
			}
		}
		s.mu.Unlock()
		if err != nil {
			controlError(w, err)
			return
		}
		jsonReply(http.StatusCreated, body).write(w)
	case path == "/_sim/calls" && r.Method == http.MethodGet:
		jsonReply(http.StatusOK, s.Calls()).write(w)
	case path == "/_sim/reset" && r.Method == http.MethodPost:
		s.Reset()
		reply{code: http.StatusNoContent}.write(w)
	case path == "/_sim/scripts/missing":
		s.serveMissingScripts(w, r)
	case isFaultsPath(path):
		host, _ := faultsHost(path)
		s.serveSetFaults(w, r, host)
	case isBootstrapPath(path):
		if r.Method != http.MethodGet {
			jsonReply(http.StatusMethodNotAllowed, map[string]string{"error": "method not allowed"}).write(w)
			return
		}
		raw, err := s.NodeBootstrap(bootstrapHost(path))
		if err != nil {
			controlError(w, err)
			return
		}
		// The body holds an enrollment token: never cached, never logged.
		rp := reply{code: http.StatusOK, ctype: "application/json", body: raw, header: http.Header{"Cache-Control": {"no-store"}}}
		rp.write(w)
	case path == "/_sim/hardware" || path == "/_sim/machines" || path == "/_sim/calls" || path == "/_sim/reset":
		jsonReply(http.StatusMethodNotAllowed, map[string]string{"error": "method not allowed"}).write(w)
	default:
		jsonReply(http.StatusNotFound, map[string]string{"error": "no such control endpoint"}).write(w)
	}
}

// isBootstrapPath matches /_sim/hardware/{hostname}/bootstrap.
func isBootstrapPath(path string) bool {
	name, ok := strings.CutPrefix(path, "/_sim/hardware/")
	if !ok {
		return false
	}
	name, ok = strings.CutSuffix(name, "/bootstrap")
	return ok && name != "" && !strings.Contains(name, "/")
}

func bootstrapHost(path string) string {
	return strings.TrimSuffix(strings.TrimPrefix(path, "/_sim/hardware/"), "/bootstrap")
}

func (s *Simulator) viewHardware(hw *hardware) hardwareView {
	v := hardwareView{Hardware: hw.spec, RemainingFaults: hw.faults, SystemIDs: []string{}, Enrollment: hw.enroll}
	switch {
	case hw.faults.PowerFails:
		v.PowerState = "error"
	case hw.powerOn:
		v.PowerState = "on"
	default:
		v.PowerState = "off"
	}
	for _, m := range s.st.order {
		if m.hw == hw {
			v.SystemIDs = append(v.SystemIDs, m.systemID)
		}
	}
	return v
}
