package reconcile

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/maasflow/maasflow/shared/design"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
	"github.com/maasflow/maasflow/shared/store"
	"github.com/maasflow/maasflow/shared/workflow"
)

// Execution statuses as Step Functions names them; the embedded runtime
// uses the same words.
const (
	ExecutionRunning = "RUNNING"
	// ExecutionUnknown: the runtime has no such execution (the local
	// runtime forgets executions on restart; Step Functions after 90 days).
	ExecutionUnknown = workflow.ExecutionUnknown
)

// maasDeployed is the status name MAAS shows for a machine an active node
// runs on (maas-behaviour §5).
const maasDeployed = "Deployed"

// startGrace is how long an open onboarding may have no execution before
// the run reports it: the API writes the record, then starts the
// execution, and a slow start must not look like drift.
const startGrace = 10 * time.Minute

// PowerReading is the answer of one live BMC query.
type PowerReading struct {
	// State is "on", "off", "unknown" or "error" when MAAS answered.
	State string
	// Unreachable is set when MAAS could not reach the BMC (a 503 or a
	// timeout); State is then empty.
	Unreachable bool
}

// OnboardingView is an open onboarding with what the run learnt about it.
type OnboardingView struct {
	Onboarding domain.Onboarding
	// ExecutionStatus is the runtime's status of Onboarding.ExecutionID
	// (empty when the onboarding has no execution yet).
	ExecutionStatus string
	// Token is the stored enrollment token of Onboarding.EnrollmentTokenHash;
	// nil when there is no hash or no record (expired tokens are deleted by
	// their TTL, which is not drift).
	Token *domain.EnrollmentToken
}

// Observation is everything a run read about one site.
type Observation struct {
	SiteID string
	Now    time.Time
	// Nodes are the site's nodes, any status.
	Nodes []domain.Node
	// Machines are the machines MAAS listed for the nodes' system ids and
	// hostnames.
	Machines []maas.Machine
	// Power holds the live BMC queries by system id; a node whose machine
	// was not queried is judged on the listing's power_state.
	Power map[string]PowerReading
	// Onboardings are the site's open onboardings.
	Onboardings []OnboardingView
	// DeadSlots is what of the site's throttle no workflow holds.
	DeadSlots store.DeadSlots
	// Design is the site's applied design; nil when the site has none.
	Design *design.Design
	// Interfaces are the interfaces MAAS reports, by system id, of the
	// Deployed machines of active nodes the design names.
	Interfaces map[string][]design.ObservedInterface
}

// Finding is one disagreement a run saw.
type Finding struct {
	NodeID       string
	Hostname     string
	MAASSystemID string
	OnboardingID string
	Kind         string
	Expected     string
	Observed     string
}

// key identifies a finding across runs: one open item per subject and kind.
func (f Finding) key() string { return f.NodeID + "|" + f.Kind }

// Checked reports whether a node's machine is compared with MAAS: active
// nodes are; an onboarding node belongs to its workflow, retired and
// removed nodes may be anything in MAAS.
func Checked(n domain.Node) bool {
	return n.Status == domain.NodeActive && n.MAASSystemID != ""
}

// Compare returns the drift in obs, ordered by subject and kind. It is pure:
// the same observation always gives the same findings.
func Compare(obs Observation) []Finding {
	byID := map[string]maas.Machine{}
	byHost := map[string][]maas.Machine{}
	for _, m := range obs.Machines {
		if _, dup := byID[m.SystemID]; dup {
			continue // listed by id and by hostname
		}
		byID[m.SystemID] = m
		h := strings.ToLower(m.Hostname)
		byHost[h] = append(byHost[h], m)
	}
	known := map[string]bool{}
	for _, n := range obs.Nodes {
		if n.MAASSystemID != "" && n.Status != domain.NodeRemoved {
			known[n.MAASSystemID] = true
		}
	}

	var out []Finding
	for _, n := range obs.Nodes {
		if Checked(n) {
			out = append(out, compareNode(n, byID, byHost, known, obs.Power)...)
			out = append(out, compareNetwork(n, obs)...)
		}
	}
	for _, v := range obs.Onboardings {
		out = append(out, compareOnboarding(v, obs.Now)...)
	}
	out = append(out, compareSlots(obs.SiteID, obs.DeadSlots)...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].key() < out[j].key() })
	return out
}

func compareNode(n domain.Node, byID map[string]maas.Machine, byHost map[string][]maas.Machine, known map[string]bool, power map[string]PowerReading) []Finding {
	f := func(kind, expected, observed string) Finding {
		return Finding{NodeID: n.ID, Hostname: n.Hostname, MAASSystemID: n.MAASSystemID, OnboardingID: n.OnboardingID,
			Kind: kind, Expected: expected, Observed: observed}
	}
	var out []Finding
	// Machines of the node's hostname that are neither its machine nor
	// another node's.
	var strangers []maas.Machine
	for _, m := range byHost[strings.ToLower(n.Hostname)] {
		if m.SystemID != n.MAASSystemID && !known[m.SystemID] {
			strangers = append(strangers, m)
		}
	}

	m, found := byID[n.MAASSystemID]
	if !found {
		if len(strangers) == 0 {
			return []Finding{f(domain.DriftMachineMissing, "system_id "+n.MAASSystemID, "absent")}
		}
		// Deleted and enlisted again under its hostname: the machines are
		// the node's new identity, not strangers.
		return []Finding{f(domain.DriftSystemIDChanged, n.MAASSystemID, systemIDs(strangers))}
	}
	for _, s := range strangers {
		out = append(out, Finding{NodeID: domain.UnknownMachineSubject + s.SystemID, Hostname: s.Hostname,
			MAASSystemID: s.SystemID, Kind: domain.DriftUnknownMachine,
			Expected: "only " + n.MAASSystemID + " (node " + n.ID + ") named " + n.Hostname,
			Observed: s.SystemID + " " + s.StatusName})
	}
	if !strings.EqualFold(m.Hostname, n.Hostname) {
		out = append(out, f(domain.DriftHostnameChanged, n.Hostname, m.Hostname))
	}
	if m.StatusName != maasDeployed {
		// The status says it all; power follows from it (a released
		// machine is off).
		return append(out, f(domain.DriftStatusMismatch, maasDeployed, m.StatusName))
	}
	state, unreachable := m.PowerState, m.PowerState == "error"
	if r, queried := power[m.SystemID]; queried {
		state, unreachable = r.State, r.Unreachable || r.State == "error"
	}
	switch {
	case unreachable:
		out = append(out, f(domain.DriftBMCUnreachable, "power on", "BMC unreachable"))
	case state == "off":
		out = append(out, f(domain.DriftPowerOff, "on", "off"))
	}
	return out
}

// compareNetwork reports where the node's interfaces in MAAS differ from
// its effective design, one finding listing every difference. A node the
// design does not name, or whose interfaces were not read (its machine
// not Deployed, or no as-built inventory to find its NICs by PCI address
// in), is not compared.
func compareNetwork(n domain.Node, obs Observation) []Finding {
	observed, read := obs.Interfaces[n.MAASSystemID]
	if obs.Design == nil || !read || n.AsBuilt == nil {
		return nil
	}
	e, err := design.EffectiveNode(*obs.Design, n.Hostname)
	if err != nil {
		return nil
	}
	nics := make([]design.NIC, len(n.AsBuilt.NICs))
	for i, nic := range n.AsBuilt.NICs {
		nics[i] = design.NIC{PCIAddress: nic.PCIAddress, Name: nic.Name}
	}
	diff, err := design.NetworkDrift(e, nics, observed)
	if err != nil {
		diff = []string{err.Error()}
	}
	if len(diff) == 0 {
		return nil
	}
	return []Finding{{NodeID: n.ID, Hostname: n.Hostname, MAASSystemID: n.MAASSystemID, OnboardingID: n.OnboardingID,
		Kind: domain.DriftNetworkMismatch, Expected: "interfaces as the site design says", Observed: strings.Join(diff, "; ")}}
}

// DesignedNetwork reports whether a run reads node n's interfaces: an
// active node on a Deployed machine that the site's design names with
// interfaces, whose as-built NICs are known.
func DesignedNetwork(d *design.Design, n domain.Node) bool {
	if d == nil || n.AsBuilt == nil || !Checked(n) {
		return false
	}
	e, err := design.EffectiveNode(*d, n.Hostname)
	return err == nil && len(e.Interfaces) > 0
}

func compareOnboarding(v OnboardingView, now time.Time) []Finding {
	o := v.Onboarding
	subject := o.NodeID
	if subject == "" {
		subject = domain.OnboardingSubject + o.ID
	}
	f := func(kind, expected, observed string) Finding {
		return Finding{NodeID: subject, Hostname: o.Hostname, MAASSystemID: o.MAASSystemID, OnboardingID: o.ID,
			Kind: kind, Expected: expected, Observed: observed}
	}
	var out []Finding
	switch {
	case o.Status == domain.OnboardingManualIntervention:
		// Frozen for an operator: its execution has ended on purpose.
	case o.ExecutionID == "":
		if now.Sub(o.CreatedAt) > startGrace {
			out = append(out, f(domain.DriftExecutionNotRunning, "execution "+ExecutionRunning, "no execution"))
		}
	case v.ExecutionStatus != ExecutionRunning:
		out = append(out, f(domain.DriftExecutionNotRunning, "execution "+ExecutionRunning, "execution "+v.ExecutionStatus))
	}
	if want := workflow.ExecutionName(o); o.ExecutionID != "" && !strings.HasSuffix(o.ExecutionID, ":"+want) {
		out = append(out, f(domain.DriftAttemptMismatch, "execution "+want, "execution "+executionName(o.ExecutionID)))
	}
	if t := v.Token; t != nil {
		switch {
		case t.OnboardingID != o.ID:
			out = append(out, f(domain.DriftTokenMismatch, "token of onboarding "+o.ID, "token of onboarding "+t.OnboardingID))
		case t.Attempt != o.Attempt:
			out = append(out, f(domain.DriftTokenMismatch, fmt.Sprintf("token of attempt %d", o.Attempt), fmt.Sprintf("token of attempt %d", t.Attempt)))
		case o.NodeID != "" && t.NodeID != o.NodeID:
			out = append(out, f(domain.DriftTokenMismatch, "token of node "+o.NodeID, "token of node "+t.NodeID))
		}
	}
	return out
}

// compareSlots reports each throttle row no workflow holds, one item per
// onboarding, and a slot count that disagrees with the slots held.
func compareSlots(siteID string, d store.DeadSlots) []Finding {
	var out []Finding
	seen := map[string]bool{}
	f := func(onboardingID string, attempt int, what string) {
		if seen[onboardingID] {
			return
		}
		seen[onboardingID] = true
		out = append(out, Finding{NodeID: domain.OnboardingSubject + onboardingID, OnboardingID: onboardingID,
			Kind: domain.DriftOrphanSlot, Expected: fmt.Sprintf("%s of attempt %d held by its workflow", what, attempt),
			Observed: d.Why[onboardingID]})
	}
	for _, h := range d.Holders {
		f(h.OnboardingID, h.Attempt, "site slot")
	}
	for _, w := range d.Waiters {
		f(w.OnboardingID, w.Attempt, "queue place")
	}
	if d.CountWrong {
		out = append(out, Finding{NodeID: domain.SiteSlotsSubject + siteID, Kind: domain.DriftOrphanSlot,
			Expected: fmt.Sprintf("%d slots held (one per holder)", d.Alive+len(d.Holders)), Observed: fmt.Sprintf("count %d", d.Held)})
	}
	return out
}

// executionName is the last part of an execution ARN.
func executionName(arn string) string {
	if i := strings.LastIndexByte(arn, ':'); i >= 0 {
		return arn[i+1:]
	}
	return arn
}

func systemIDs(ms []maas.Machine) string {
	ids := make([]string, len(ms))
	for i, m := range ms {
		ids[i] = m.SystemID
	}
	sort.Strings(ids)
	return strings.Join(ids, ",")
}
