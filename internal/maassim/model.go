package maassim

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"strconv"
	"time"
)

// hardware is a physical host: what it is (spec) and what it is doing
// (power, remaining faults, enrollment attempts). It outlives machine
// records: deleting a machine leaves the host in place.
type hardware struct {
	spec    Hardware
	faults  Faults // remaining fault counts, consumed per attempt
	powerOn bool
	// bmcUsers are the IPMI users the BMC accepts, name → password; nil
	// accepts any (bmc.go).
	bmcUsers map[string]string
	// hung: the host got power but never booted (NoBootUntilPowerCycle);
	// only an off-to-on transition of its power boots it (never, with
	// NeverBoots).
	hung   bool
	enroll enrollState
	// bootstrap is the node bootstrap bundle cloud-init wrote to the disk
	// when the last deployed OS booted; nil once a deployment or an erase
	// rewrites the disk.
	bootstrap []byte
	// agent is the node agent of the last boot (agent_identity.go).
	agent *agentRun
}

// enrollState is what the node agent (played by the simulator) did.
type enrollState struct {
	Attempts  int    `json:"attempts"`
	Succeeded int    `json:"succeeded"`
	LastCode  int    `json:"last_status_code,omitempty"`
	LastError string `json:"last_error,omitempty"`
	// Agent is what the node agent did after enrolling.
	Agent AgentState `json:"agent,omitzero"`
}

// commissionFlags are the commissioning form flags that change the outcome.
type commissionFlags struct {
	enableSSH      bool
	skipBMCConfig  bool
	skipNetworking bool
	skipStorage    bool
	noTesting      bool
	// scripts are the commissioning scripts asked for beyond the built-in
	// ones; tests, when set, replace the default tests (scripts.go).
	scripts []scriptDef
	tests   []scriptDef
}

// deployOutcome is decided when a deployment starts, consuming one fault, so
// that aborting and retrying does not replay the same failure forever.
type deployOutcome int

const (
	deployOK deployOutcome = iota
	deployCurtinFails
	deployDatasourceFails
)

// machine is MAAS's machine record.
type machine struct {
	id          int
	systemID    string
	hostname    string
	description string

	status         status
	previousStatus status
	owner          string
	locked         bool

	powerType   string
	powerParams map[string]string // keys without the power_parameters_ prefix; written through setPowerParam(s)
	powerEntry  []byte            // "<system_id>":<powerParams>, nil until asked for after a change
	hw          *hardware

	architecture string
	minHWEKernel string
	hweKernel    string // "" renders as null
	osystem      string
	distroSeries string
	cpuCount     int
	memory       int
	disks        []Disk
	ifaces       []*iface
	bootIfaceID  int
	// devices are the node devices the last commissioning found (devices.go).
	devices []*nodeDevice
	// bootDisk names the disk set_boot_disk chose; "" is MAAS's default,
	// the first disk (blockdevices.go).
	bootDisk string
	// diskIDs are the block device ids of m's disks by name, unique in
	// the region as MAAS's are (blockdevices.go).
	diskIDs map[string]int

	storageLayout    string
	errorDescription string
	commissioned     bool // the last commissioning passed: release lands in Ready, not New
	netboot          bool
	agentName        string

	commission     commissionFlags
	deploy         deployOutcome
	deployStart    time.Time
	userData       []byte
	metadataHost   string
	rescuePrevious status

	// gen invalidates scheduled phase steps: bumping it cancels them.
	gen uint64

	events      []*event
	statusEvent *event // newest event of level INFO or above: status_message

	sets                 []*scriptSet
	currentCommissioning *scriptSet
	currentTesting       *scriptSet
	currentInstallation  *scriptSet
	// currentRelease is the release script set of the erase in progress
	// (release_scripts.go).
	currentRelease *scriptSet

	deleted bool
}

// setStatus moves m to st. MAAS logs every change of a node's status as a
// DEBUG "Node changed status" event described "From 'X' to 'Y'", with
// " (to <owner>)" when the node becomes Allocated (MS/models/signals/events.py,
// maas-behaviour §11); a move to the status it already has logs nothing.
func (s *Simulator) setStatus(m *machine, at time.Time, st status) {
	if st != m.status {
		desc := fmt.Sprintf("From '%s' to '%s'", m.status.name(), st.name())
		if st == statusAllocated {
			desc += " (to " + m.owner + ")"
		}
		m.previousStatus = m.status
		m.status = st
		s.event(m, at, levelDebug, "Node changed status", desc, "")
	}
	// Any move to New or Ready clears the owner (MS/models/signals/nodes.py).
	if st == statusNew || st == statusReady {
		m.owner = ""
	}
}

func (m *machine) iface(id int) *iface {
	for _, i := range m.ifaces {
		if i.id == id {
			return i
		}
	}
	return nil
}

func (m *machine) bootIface() *iface {
	if i := m.iface(m.bootIfaceID); i != nil {
		return i
	}
	if len(m.ifaces) > 0 {
		return m.ifaces[0]
	}
	return nil
}

// iface is a machine's physical interface.
type iface struct {
	id      int
	name    string
	mac     string
	enabled bool
	// linkSpeed is the negotiated speed commissioning saw (Mbit/s); 0
	// before commissioning renders as the NIC's full speed.
	linkSpeed int
	vlan      *vlan // nil when disconnected
	links     []*link
	// discovered is what commissioning saw the interface take by DHCP
	// (maas-behaviour §9); nil renders null.
	discovered []discoveredAddr
	// kind is "" for a physical interface, else ifaceBond or ifaceVLAN;
	// parents are a bond's members or a VLAN interface's parent, mtu the
	// MTU set on the interface itself (its params, 0 for none) and
	// bondMode a bond's mode (interfaces_ops.go).
	kind     string
	parents  []*iface
	mtu      int
	bondMode string
}

// discoveredAddr is one DISCOVERED address of an interface.
type discoveredAddr struct {
	ip     string
	subnet *subnet
}

// link is an interface link (a StaticIPAddress row in MAAS).
type link struct {
	id     int
	mode   string // auto, dhcp, static, link_up
	subnet *subnet
	ip     string // assigned address; an AUTO link has none until deploy
}

// fabric, vlan and subnet are the minimal network: one of each.
type fabric struct {
	id   int
	name string
}

type vlan struct {
	id      int
	name    string
	vid     int
	mtu     int
	dhcpOn  bool
	fabric  *fabric
	rackSID string
}

type subnet struct {
	id         int
	name       string
	cidr       netip.Prefix
	gateway    netip.Addr
	vlan       *vlan
	dynamicLow netip.Addr
	dynamicHi  netip.Addr
	// dns are the subnet's DNS servers (PUT subnets/{id}/ dns_servers).
	dns []string
}

func (sn *subnet) inDynamicRange(a netip.Addr) bool {
	return a.Compare(sn.dynamicLow) >= 0 && a.Compare(sn.dynamicHi) <= 0
}

// event is a node event (maas-behaviour §11).
type event struct {
	id          int
	m           *machine
	username    string
	level       int
	typ         string
	description string
	created     time.Time
}

// scriptSet is a commissioning, testing or installation result set.
type scriptSet struct {
	id      int
	m       *machine
	typ     int
	results []*scriptResult
}

// scriptResult is one script's result and output.
type scriptResult struct {
	id           int
	scriptID     int
	name         string
	hardwareType int
	status       int
	exitStatus   *int
	created      time.Time
	updated      time.Time
	started      *time.Time
	ended        *time.Time
	estimated    string
	stdout       []byte
	stderr       []byte
	result       []byte
}

func (r *scriptResult) output() []byte {
	if len(r.stderr) == 0 {
		return r.stdout
	}
	out := make([]byte, 0, len(r.stdout)+len(r.stderr))
	out = append(out, r.stdout...)
	return append(out, r.stderr...)
}

// status of a set: the first present of Running, Pending, …, else Passed
// (maas-behaviour §12).
func (ss *scriptSet) status() int {
	present := map[int]bool{}
	for _, r := range ss.results {
		st := r.status
		switch st {
		case scriptTimeout, 8, 11:
			st = scriptFailed
		}
		present[st] = true
	}
	for _, st := range []int{scriptRunning, scriptPending, 7, 10, scriptAborted, scriptFailed, 6} {
		if present[st] {
			return st
		}
	}
	return scriptPassed
}

// state is everything Reset clears.
type state struct {
	machines   map[string]*machine
	order      []*machine // by id
	byHostname map[string][]*machine
	// powerParamsSize is the length of the last power_parameters reply for
	// every machine, the next one's likely size.
	powerParamsSize int

	hwByBMC map[string]*hardware
	hwByMAC map[string]*hardware
	hwOrder []*hardware

	events []*event

	ipsInUse map[netip.Addr]bool

	nextMachineID int
	nextIfaceID   int
	nextLinkID    int
	nextEventID   int
	nextSetID     int
	nextResultID  int
	nextDeviceID  int
	nextDiskID    int
}

func newState() *state {
	return &state{
		machines:      map[string]*machine{},
		byHostname:    map[string][]*machine{},
		hwByBMC:       map[string]*hardware{},
		hwByMAC:       map[string]*hardware{},
		ipsInUse:      map[netip.Addr]bool{},
		nextMachineID: 1,
		nextIfaceID:   1,
		nextLinkID:    1,
		nextEventID:   1,
		nextSetID:     1,
		nextResultID:  1,
		nextDeviceID:  1,
		nextDiskID:    1,
	}
}

// setPowerParams replaces m's power parameters.
func (m *machine) setPowerParams(params map[string]string) {
	m.powerParams = params
	m.powerEntry = nil
}

// setPowerParam sets one of m's power parameters.
func (m *machine) setPowerParam(name, value string) {
	m.powerParams[name] = value
	m.powerEntry = nil
}

// powerParamsEntry is m's member of the power_parameters reply,
// "<system_id>":{…}, encoded once per change: every discovery by BMC
// address reads all machines' parameters, so a site of a thousand machines
// would otherwise re-encode them on every call.
func (m *machine) powerParamsEntry() []byte {
	if m.powerEntry == nil {
		params, err := json.Marshal(m.powerParams)
		if err != nil {
			panic(err) // a map of strings always encodes
		}
		e := strconv.AppendQuote(make([]byte, 0, len(m.systemID)+3+len(params)), m.systemID) // lowercase letters and digits
		m.powerEntry = append(append(e, ':'), params...)
	}
	return m.powerEntry
}

// powerParamsJSON is m's power parameters as power_parameters returns them.
func (m *machine) powerParamsJSON() []byte {
	e := m.powerParamsEntry()
	return e[len(m.systemID)+3:]
}
