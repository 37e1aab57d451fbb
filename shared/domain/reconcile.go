package domain

import "time"

// Drift kinds: the ways MAAS, the workflow runtime and maasflow's records
// can disagree. docs/reconciliation.md says what each means and what to do
// about it.
const (
	// DriftMachineMissing: the node's system id is gone from MAAS and no
	// machine carries its hostname.
	DriftMachineMissing = "machine_missing"
	// DriftStatusMismatch: MAAS's status is not the one the node's status
	// implies (an active node's machine is not Deployed).
	DriftStatusMismatch = "status_mismatch"
	// DriftHostnameChanged: the node's machine carries another hostname.
	DriftHostnameChanged = "hostname_changed"
	// DriftSystemIDChanged: the node's system id is gone and a machine of
	// its hostname exists under another system id (deleted and enlisted
	// again).
	DriftSystemIDChanged = "system_id_changed"
	// DriftPowerOff: an active node's BMC answers that the host is off.
	DriftPowerOff = "power_off"
	// DriftBMCUnreachable: MAAS cannot query an active node's BMC.
	DriftBMCUnreachable = "bmc_unreachable"
	// DriftUnknownMachine: a MAAS machine carries a managed hostname but
	// is not the machine maasflow knows under it.
	DriftUnknownMachine = "unknown_machine"
	// DriftExecutionNotRunning: an open onboarding's workflow execution has
	// ended or is unknown, so nothing will ever close the onboarding.
	DriftExecutionNotRunning = "execution_not_running"
	// DriftTokenMismatch: the enrollment token of an open onboarding
	// belongs to another onboarding, attempt or node.
	DriftTokenMismatch = "token_mismatch"
	// DriftAttemptMismatch: an open onboarding's execution belongs to
	// another attempt than the record's.
	DriftAttemptMismatch = "attempt_mismatch"
	// DriftOrphanSlot: a site throttle slot (or queue place) is held by no
	// workflow: its onboarding is gone, closed or on another attempt, or
	// the site's slot count disagrees with the slots held.
	DriftOrphanSlot = "orphan_slot"
	// DriftNetworkMismatch: an active node's interfaces in MAAS no longer
	// match its site design (an interface missing, a bond's members, an
	// MTU, a static address).
	DriftNetworkMismatch = "network_mismatch"
)

// DriftKinds lists every drift kind, in the order documents present them.
func DriftKinds() []string {
	return []string{
		DriftMachineMissing, DriftStatusMismatch, DriftHostnameChanged, DriftSystemIDChanged,
		DriftPowerOff, DriftBMCUnreachable, DriftUnknownMachine, DriftExecutionNotRunning, DriftTokenMismatch,
		DriftAttemptMismatch, DriftOrphanSlot, DriftNetworkMismatch,
	}
}

// IsDriftKind reports whether k is a known drift kind.
func IsDriftKind(k string) bool {
	for _, v := range DriftKinds() {
		if v == k {
			return true
		}
	}
	return false
}

// Drift item states: open while the run still sees it, closed once a run no
// longer does (or an operator adopted MAAS's view).
const (
	DriftOpen   = "open"
	DriftClosed = "closed"
)

// Drift resolution actions an operator can take (requirements API boundary §4.4 resolve).
const (
	DriftAcknowledge = "acknowledge"
	DriftAdopt       = "adopt"
	DriftStart       = "start"
)

// Subjects of drift items that are not about a node: NodeID is then
// UnknownMachineSubject plus a MAAS system id (a machine maasflow has no
// node for), or OnboardingSubject plus an onboarding id (an onboarding
// that has no node yet).
const (
	UnknownMachineSubject = "maas:"
	OnboardingSubject     = "onboarding:"
	// SiteSlotsSubject plus a site id: the site throttle's slot count.
	SiteSlotsSubject = "site-slots:"
)

// DriftItem is one disagreement seen by reconcile runs, from the first run
// that saw it until the first run that no longer did. A changed observation
// closes the item and opens a new one, so the history shows each distinct
// state MAAS was in.
type DriftItem struct {
	ID string `json:"id" dynamodbav:"id"`
	// NodeID is the node the drift is about; for an unknown machine it is
	// UnknownMachineSubject plus the machine's system id.
	NodeID       string    `json:"node_id" dynamodbav:"node_id"`
	Hostname     string    `json:"hostname" dynamodbav:"hostname"`
	SiteID       string    `json:"site_id" dynamodbav:"site_id"`
	MAASSystemID string    `json:"maas_system_id,omitempty" dynamodbav:"maas_system_id,omitempty"`
	OnboardingID string    `json:"onboarding_id,omitempty" dynamodbav:"onboarding_id,omitempty"`
	Kind         string    `json:"kind" dynamodbav:"kind"`
	Expected     string    `json:"expected" dynamodbav:"expected"`
	Observed     string    `json:"observed" dynamodbav:"observed"`
	State        string    `json:"state" dynamodbav:"state"`
	FirstSeen    time.Time `json:"first_seen" dynamodbav:"first_seen"`
	LastSeen     time.Time `json:"last_seen" dynamodbav:"last_seen"`
	// RunID is the run that last saw the drift.
	RunID string `json:"run_id" dynamodbav:"run_id"`
	// ClosedAt and ClosedBy say when and why the item closed: the id of the
	// run that no longer saw it, or "adopt" by an operator.
	ClosedAt   *time.Time       `json:"closed_at,omitempty" dynamodbav:"closed_at,omitempty"`
	ClosedBy   string           `json:"closed_by,omitempty" dynamodbav:"closed_by,omitempty"`
	Resolution *DriftResolution `json:"resolution,omitempty" dynamodbav:"resolution,omitempty"`
	Version    int64            `json:"-" dynamodbav:"version"`
}

// Acknowledged reports whether an operator acknowledged the item: it stays
// open but quiet until what MAAS shows changes.
func (d DriftItem) Acknowledged() bool {
	return d.Resolution != nil && d.Resolution.Action == DriftAcknowledge
}

// DriftResolution is what an operator decided about a drift item.
type DriftResolution struct {
	Action string    `json:"action" dynamodbav:"action"`
	Reason string    `json:"reason" dynamodbav:"reason"`
	By     string    `json:"by" dynamodbav:"by"`
	At     time.Time `json:"at" dynamodbav:"at"`
	// Detail says what the action changed (adopt) or started (start).
	Detail string `json:"detail,omitempty" dynamodbav:"detail,omitempty"`
}

// NodeMAASState is the last state of a node's machine a reconcile run
// observed (requirements API boundary §7 node_maas_state). It is rewritten when what MAAS
// shows changes; the site's last run says when it was last confirmed.
type NodeMAASState struct {
	NodeID       string `json:"node_id" dynamodbav:"node_id"`
	SiteID       string `json:"site_id" dynamodbav:"site_id"`
	Hostname     string `json:"hostname" dynamodbav:"hostname"`
	MAASSystemID string `json:"maas_system_id,omitempty" dynamodbav:"maas_system_id,omitempty"`
	// Found is false when MAAS had no machine for the node.
	Found      bool   `json:"found" dynamodbav:"found"`
	StatusName string `json:"status_name,omitempty" dynamodbav:"status_name,omitempty"`
	PowerState string `json:"power_state,omitempty" dynamodbav:"power_state,omitempty"`
	// ObservedAt is when a run first saw the machine in this state; RunID
	// is that run.
	ObservedAt time.Time `json:"observed_at" dynamodbav:"observed_at"`
	RunID      string    `json:"run_id" dynamodbav:"run_id"`
}

// Reconcile run statuses.
const (
	RunRunning   = "running"
	RunSucceeded = "succeeded"
	// RunPartial: at least one site could not be checked.
	RunPartial = "partial"
)

// ReconcileRun is one reconcile run over one site or all of them.
type ReconcileRun struct {
	ID string `json:"id" dynamodbav:"id"`
	// SiteID is the one site the run was asked for; empty means all.
	SiteID    string        `json:"site_id,omitempty" dynamodbav:"site_id,omitempty"`
	Trigger   string        `json:"trigger" dynamodbav:"trigger"`
	Status    string        `json:"status" dynamodbav:"status"`
	StartedAt time.Time     `json:"started_at" dynamodbav:"started_at"`
	EndedAt   *time.Time    `json:"ended_at,omitempty" dynamodbav:"ended_at,omitempty"`
	Sites     []SiteRunInfo `json:"sites" dynamodbav:"sites"`
	// NodesChecked and DriftByKind sum the sites: open drift items by kind
	// after the run (acknowledged ones included).
	NodesChecked int            `json:"nodes_checked" dynamodbav:"nodes_checked"`
	DriftByKind  map[string]int `json:"drift_by_kind" dynamodbav:"drift_by_kind"`
	Version      int64          `json:"-" dynamodbav:"version"`
}

// SiteRunInfo is what a run did on one site.
type SiteRunInfo struct {
	SiteID       string         `json:"site_id" dynamodbav:"site_id"`
	StartedAt    time.Time      `json:"started_at" dynamodbav:"started_at"`
	EndedAt      time.Time      `json:"ended_at" dynamodbav:"ended_at"`
	NodesChecked int            `json:"nodes_checked" dynamodbav:"nodes_checked"`
	DriftByKind  map[string]int `json:"drift_by_kind" dynamodbav:"drift_by_kind"`
	New          int            `json:"new" dynamodbav:"new"`
	Closed       int            `json:"closed" dynamodbav:"closed"`
	MAASCalls    int            `json:"maas_calls" dynamodbav:"maas_calls"`
	PowerQueries int            `json:"power_queries" dynamodbav:"power_queries"`
	// PowerSkipped counts the power queries the per-run bound left out.
	PowerSkipped int `json:"power_skipped,omitempty" dynamodbav:"power_skipped,omitempty"`
	// NetworkSkipped counts the designed nodes whose interfaces the
	// per-run bound left unread.
	NetworkSkipped int `json:"network_skipped,omitempty" dynamodbav:"network_skipped,omitempty"`
	// Error says why the site could not be checked (secret-free).
	Error string `json:"error,omitempty" dynamodbav:"error,omitempty"`
}
