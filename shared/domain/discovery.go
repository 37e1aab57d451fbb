package domain

import (
	"fmt"
	"sort"
	"strings"
)

// MachineCandidate is a MAAS machine as discovery sees it. StatusName is
// MAAS's status_name label ("New", "Ready", "Failed commissioning", …).
type MachineCandidate struct {
	SystemID   string `json:"system_id"`
	Hostname   string `json:"hostname"`
	StatusName string `json:"status_name"`
}

// Discovery rules, in the order requirements readiness §4.1 fixes: hostname, then the BMC
// power address, then the PXE MAC (only when one is known).
const (
	DiscoveryRuleHostname     = "hostname"
	DiscoveryRulePowerAddress = "power_address"
	DiscoveryRulePXEMAC       = "pxe_mac"
	// DiscoveryRuleNone: no rule matched; the machine is created.
	DiscoveryRuleNone = "none"
)

// Discovery actions: what the workflow does with the decision.
const (
	// DiscoveryCreate: nothing matched; create the machine with the site's
	// IPMI credentials.
	DiscoveryCreate = "create"
	// DiscoveryAdopt: a Ready or Allocated machine is taken as it is.
	DiscoveryAdopt = "adopt"
	// DiscoveryCommission: a New machine this onboarding created, or one
	// auto-claimed under policy; commissioning runs next.
	DiscoveryCommission = "commission"
	// DiscoveryWait: MAAS is commissioning or testing it; wait for Ready.
	DiscoveryWait = "wait"
	// DiscoveryRecommission: commissioning failed earlier; commission again.
	DiscoveryRecommission = "recommission"
	// DiscoveryAmbiguous: more than one machine matched (or the rules
	// disagree); fail closed without touching MAAS.
	DiscoveryAmbiguous = "ambiguous"
	// DiscoveryClaimNotAllowed: a New machine matched that this onboarding
	// did not create and policy does not allow auto-claiming it.
	DiscoveryClaimNotAllowed = "claim_not_allowed"
	// DiscoveryUnsafe: the machine is in a state only an operator may
	// resolve (Deployed, Deploying, Broken, Failed testing, …).
	DiscoveryUnsafe = "unsafe"
)

// MAAS status labels discovery reasons about (maas-behaviour §4).
const (
	MAASStatusNew                 = "New"
	MAASStatusCommissioning       = "Commissioning"
	MAASStatusFailedCommissioning = "Failed commissioning"
	MAASStatusReady               = "Ready"
	MAASStatusAllocated           = "Allocated"
	MAASStatusTesting             = "Testing"
	MAASStatusFailedTesting       = "Failed testing"
	MAASStatusDeploying           = "Deploying"
	MAASStatusDeployed            = "Deployed"
	MAASStatusFailedDeployment    = "Failed deployment"
	MAASStatusBroken              = "Broken"
)

// DiscoveryInput is everything the discovery decision looks at. Each By*
// list holds what MAAS answered for that rule (empty when it found
// nothing or the rule was not asked).
type DiscoveryInput struct {
	// Hostname is the onboarding's hostname.
	Hostname       string
	ByHostname     []MachineCandidate
	ByPowerAddress []MachineCandidate
	ByPXEMAC       []MachineCandidate
	// PXEMACKnown says a PXE MAC was observed on an earlier attempt; the
	// MAC rule applies only then.
	PXEMACKnown bool
	// AutoClaimNew is the effective policy auto_claim_new.
	AutoClaimNew bool
	// OwnSystemID is the machine this onboarding already recorded (an
	// earlier attempt created or adopted it); "" when none.
	OwnSystemID string
	// CreateRequested says this onboarding asked MAAS to create the
	// machine before (a create whose answer was lost): a New machine with
	// the onboarding's hostname is then its own, not a claim.
	CreateRequested bool
}

// DiscoveryDecision is the outcome: the action, the rule that matched, the
// machine, and for ambiguity every candidate.
type DiscoveryDecision struct {
	Action  string           `json:"action"`
	Rule    string           `json:"rule"`
	Machine MachineCandidate `json:"machine"`
	// Candidates are the system ids that made the match ambiguous, sorted.
	Candidates []string `json:"candidates,omitempty"`
	// Claimed is set when a New machine is taken under auto_claim_new.
	Claimed bool `json:"claimed,omitempty"`
	// Reason is a one-line, secret-free explanation for the timeline.
	Reason string `json:"reason"`
}

// DecideDiscovery applies requirements readiness §4.1: the rules in order (hostname, power
// address, PXE MAC when known); the first rule with a match decides. More
// than one machine at that rule fails closed. A later rule that matches a
// different machine also fails closed: adopting machine A by hostname while
// machine B holds the host's BMC address would leave two MAAS records for
// one server, so an operator must decide. No match means create.
func DecideDiscovery(in DiscoveryInput) DiscoveryDecision {
	rules := []struct {
		name  string
		found []MachineCandidate
	}{
		{DiscoveryRuleHostname, in.ByHostname},
		{DiscoveryRulePowerAddress, in.ByPowerAddress},
	}
	if in.PXEMACKnown {
		rules = append(rules, struct {
			name  string
			found []MachineCandidate
		}{DiscoveryRulePXEMAC, in.ByPXEMAC})
	}

	var (
		chosen     *MachineCandidate
		chosenRule string
	)
	for _, r := range rules {
		found := uniqueCandidates(r.found)
		if len(found) == 0 {
			continue
		}
		if chosen == nil {
			if len(found) > 1 {
				return ambiguous(r.name, found, fmt.Sprintf("%d machines match by %s", len(found), r.name))
			}
			chosen, chosenRule = &found[0], r.name
			continue
		}
		// A later rule must agree with the chosen machine.
		if len(found) > 1 || found[0].SystemID != chosen.SystemID {
			all := uniqueCandidates(append([]MachineCandidate{*chosen}, found...))
			return ambiguous(chosenRule, all, fmt.Sprintf(
				"%s matches %s but %s matches %s", chosenRule, chosen.SystemID, r.name, strings.Join(systemIDs(found), ",")))
		}
	}
	if chosen == nil {
		return DiscoveryDecision{Action: DiscoveryCreate, Rule: DiscoveryRuleNone, Reason: "no machine matches by hostname, power address or PXE MAC"}
	}
	return decideForMachine(in, *chosen, chosenRule)
}

func decideForMachine(in DiscoveryInput, m MachineCandidate, rule string) DiscoveryDecision {
	d := DiscoveryDecision{Rule: rule, Machine: m}
	switch m.StatusName {
	case MAASStatusNew:
		switch {
		case in.OwnSystemID != "" && m.SystemID == in.OwnSystemID:
			d.Action, d.Reason = DiscoveryCommission, "New machine already recorded by this onboarding"
		case in.CreateRequested && m.Hostname == in.Hostname:
			d.Action, d.Reason = DiscoveryCommission, "New machine created by this onboarding"
		case in.AutoClaimNew:
			d.Action, d.Claimed, d.Reason = DiscoveryCommission, true, "sole New machine auto-claimed (policy auto_claim_new)"
		default:
			d.Action, d.Reason = DiscoveryClaimNotAllowed, "New machine matched but policy does not allow auto-claiming it"
		}
	case MAASStatusReady, MAASStatusAllocated:
		d.Action, d.Reason = DiscoveryAdopt, "existing "+m.StatusName+" machine adopted"
	case MAASStatusCommissioning, MAASStatusTesting:
		d.Action, d.Reason = DiscoveryWait, "machine is "+m.StatusName+"; waiting for Ready"
	case MAASStatusFailedCommissioning:
		d.Action, d.Reason = DiscoveryRecommission, "commissioning failed earlier; commissioning again"
	case MAASStatusFailedTesting:
		// MAAS refuses commission from Failed testing (maas-behaviour §5: only
		// New, Ready, Failed commissioning, Broken); failed hardware tests
		// need an operator's judgement (re-test, override or repair).
		d.Action, d.Reason = DiscoveryUnsafe, "hardware tests failed; an operator must re-test, override or repair"
	case MAASStatusDeployed:
		// A host whose node was removed without a full decommission comes
		// back still Deployed: a running OS, perhaps with a tenant's data,
		// is never redeployed without an operator's word.
		d.Action, d.Reason = DiscoveryUnsafe, "machine is Deployed (a host whose node was removed keeps its OS); an operator must release it in MAAS, then rerun"
	default:
		d.Action, d.Reason = DiscoveryUnsafe, "machine is "+statusOrUnknown(m.StatusName)+"; an operator must adopt or release it"
	}
	return d
}

func ambiguous(rule string, found []MachineCandidate, reason string) DiscoveryDecision {
	return DiscoveryDecision{Action: DiscoveryAmbiguous, Rule: rule, Candidates: systemIDs(found), Reason: reason}
}

// uniqueCandidates drops repeated system ids (one machine can come back
// twice from a MAAS listing) and sorts by system id for a stable order.
func uniqueCandidates(in []MachineCandidate) []MachineCandidate {
	seen := make(map[string]bool, len(in))
	out := make([]MachineCandidate, 0, len(in))
	for _, c := range in {
		if seen[c.SystemID] {
			continue
		}
		seen[c.SystemID] = true
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].SystemID < out[j].SystemID })
	return out
}

func systemIDs(cs []MachineCandidate) []string {
	ids := make([]string, len(cs))
	for i, c := range cs {
		ids[i] = c.SystemID
	}
	sort.Strings(ids)
	return ids
}

func statusOrUnknown(s string) string {
	if s == "" {
		return "in an unknown state"
	}
	return s
}
