package domain

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestDecideDiscovery(t *testing.T) {
	m := func(id, status string) MachineCandidate {
		return MachineCandidate{SystemID: id, Hostname: "gpu-01", StatusName: status}
	}
	named := func(id, host, status string) MachineCandidate {
		return MachineCandidate{SystemID: id, Hostname: host, StatusName: status}
	}
	tests := []struct {
		name           string
		in             DiscoveryInput
		wantAction     string
		wantRule       string
		wantMachine    string
		wantCandidates []string
		wantClaimed    bool
	}{
		{name: "nothing matches: create", in: DiscoveryInput{Hostname: "gpu-01"}, wantAction: DiscoveryCreate, wantRule: DiscoveryRuleNone},
		{
			name:       "ready by hostname: adopt",
			in:         DiscoveryInput{ByHostname: []MachineCandidate{m("aaa", "Ready")}},
			wantAction: DiscoveryAdopt, wantRule: DiscoveryRuleHostname, wantMachine: "aaa",
		},
		{
			name:       "allocated by power address: adopt",
			in:         DiscoveryInput{ByPowerAddress: []MachineCandidate{m("bbb", "Allocated")}},
			wantAction: DiscoveryAdopt, wantRule: DiscoveryRulePowerAddress, wantMachine: "bbb",
		},
		{
			name: "hostname preferred over power address when both agree",
			in: DiscoveryInput{
				ByHostname:     []MachineCandidate{m("aaa", "Ready")},
				ByPowerAddress: []MachineCandidate{m("aaa", "Ready")},
			},
			wantAction: DiscoveryAdopt, wantRule: DiscoveryRuleHostname, wantMachine: "aaa",
		},
		{
			name:       "duplicate rows of one machine are one match",
			in:         DiscoveryInput{ByHostname: []MachineCandidate{m("aaa", "Ready"), m("aaa", "Ready")}},
			wantAction: DiscoveryAdopt, wantRule: DiscoveryRuleHostname, wantMachine: "aaa",
		},
		{
			name:       "two by hostname: ambiguous",
			in:         DiscoveryInput{ByHostname: []MachineCandidate{m("ccc", "Ready"), m("aaa", "Ready")}},
			wantAction: DiscoveryAmbiguous, wantRule: DiscoveryRuleHostname, wantCandidates: []string{"aaa", "ccc"},
		},
		{
			name:       "two by power address: ambiguous",
			in:         DiscoveryInput{ByPowerAddress: []MachineCandidate{m("aaa", "New"), m("bbb", "Ready")}, AutoClaimNew: true},
			wantAction: DiscoveryAmbiguous, wantRule: DiscoveryRulePowerAddress, wantCandidates: []string{"aaa", "bbb"},
		},
		{
			name: "rules disagree: ambiguous",
			in: DiscoveryInput{
				ByHostname:     []MachineCandidate{m("aaa", "Ready")},
				ByPowerAddress: []MachineCandidate{m("bbb", "Ready")},
			},
			wantAction: DiscoveryAmbiguous, wantRule: DiscoveryRuleHostname, wantCandidates: []string{"aaa", "bbb"},
		},
		{
			name: "later rule with several matches including the chosen one: ambiguous",
			in: DiscoveryInput{
				ByHostname:     []MachineCandidate{m("aaa", "Ready")},
				ByPowerAddress: []MachineCandidate{m("aaa", "Ready"), m("bbb", "New")},
			},
			wantAction: DiscoveryAmbiguous, wantRule: DiscoveryRuleHostname, wantCandidates: []string{"aaa", "bbb"},
		},
		{
			name:       "MAC rule ignored when no MAC was observed",
			in:         DiscoveryInput{ByPXEMAC: []MachineCandidate{m("ddd", "Ready")}},
			wantAction: DiscoveryCreate, wantRule: DiscoveryRuleNone,
		},
		{
			name:       "MAC rule applies when a MAC is known",
			in:         DiscoveryInput{PXEMACKnown: true, ByPXEMAC: []MachineCandidate{m("ddd", "Ready")}},
			wantAction: DiscoveryAdopt, wantRule: DiscoveryRulePXEMAC, wantMachine: "ddd",
		},
		{
			name:       "two by MAC: ambiguous",
			in:         DiscoveryInput{PXEMACKnown: true, ByPXEMAC: []MachineCandidate{m("ddd", "Ready"), m("eee", "Ready")}},
			wantAction: DiscoveryAmbiguous, wantRule: DiscoveryRulePXEMAC, wantCandidates: []string{"ddd", "eee"},
		},
		{
			name: "MAC disagrees with power address: ambiguous",
			in: DiscoveryInput{
				PXEMACKnown:    true,
				ByPowerAddress: []MachineCandidate{m("aaa", "Ready")},
				ByPXEMAC:       []MachineCandidate{m("ddd", "Ready")},
			},
			wantAction: DiscoveryAmbiguous, wantRule: DiscoveryRulePowerAddress, wantCandidates: []string{"aaa", "ddd"},
		},
		{
			name:       "new machine, auto-claim off: not allowed",
			in:         DiscoveryInput{ByPowerAddress: []MachineCandidate{named("nnn", "maas-enlisted", "New")}},
			wantAction: DiscoveryClaimNotAllowed, wantRule: DiscoveryRulePowerAddress, wantMachine: "nnn",
		},
		{
			name:       "new machine by hostname, auto-claim off: not allowed",
			in:         DiscoveryInput{Hostname: "gpu-01", ByHostname: []MachineCandidate{m("nnn", "New")}},
			wantAction: DiscoveryClaimNotAllowed, wantRule: DiscoveryRuleHostname, wantMachine: "nnn",
		},
		{
			name:       "new machine, auto-claim on: claimed",
			in:         DiscoveryInput{AutoClaimNew: true, ByPowerAddress: []MachineCandidate{named("nnn", "maas-enlisted", "New")}},
			wantAction: DiscoveryCommission, wantRule: DiscoveryRulePowerAddress, wantMachine: "nnn", wantClaimed: true,
		},
		{
			name:       "new machine this onboarding recorded: commission, not a claim",
			in:         DiscoveryInput{OwnSystemID: "nnn", ByPowerAddress: []MachineCandidate{named("nnn", "x", "New")}},
			wantAction: DiscoveryCommission, wantRule: DiscoveryRulePowerAddress, wantMachine: "nnn",
		},
		{
			name: "create answer lost: the New machine with our hostname is ours",
			in: DiscoveryInput{
				Hostname: "gpu-01", CreateRequested: true,
				ByHostname:     []MachineCandidate{m("nnn", "New")},
				ByPowerAddress: []MachineCandidate{m("nnn", "New")},
			},
			wantAction: DiscoveryCommission, wantRule: DiscoveryRuleHostname, wantMachine: "nnn",
		},
		{
			name: "create requested but the New machine has another hostname: still a claim",
			in: DiscoveryInput{
				Hostname: "gpu-01", CreateRequested: true,
				ByPowerAddress: []MachineCandidate{named("nnn", "enlisted-by-pxe", "New")},
			},
			wantAction: DiscoveryClaimNotAllowed, wantRule: DiscoveryRulePowerAddress, wantMachine: "nnn",
		},
		{
			name:       "own system id that is not New follows its status",
			in:         DiscoveryInput{OwnSystemID: "aaa", ByHostname: []MachineCandidate{m("aaa", "Deployed")}},
			wantAction: DiscoveryUnsafe, wantRule: DiscoveryRuleHostname, wantMachine: "aaa",
		},
		{
			name:       "commissioning: wait",
			in:         DiscoveryInput{ByHostname: []MachineCandidate{m("aaa", "Commissioning")}},
			wantAction: DiscoveryWait, wantRule: DiscoveryRuleHostname, wantMachine: "aaa",
		},
		{
			name:       "testing: wait",
			in:         DiscoveryInput{ByHostname: []MachineCandidate{m("aaa", "Testing")}},
			wantAction: DiscoveryWait, wantRule: DiscoveryRuleHostname, wantMachine: "aaa",
		},
		{
			name:       "failed commissioning: recommission",
			in:         DiscoveryInput{ByHostname: []MachineCandidate{m("aaa", "Failed commissioning")}},
			wantAction: DiscoveryRecommission, wantRule: DiscoveryRuleHostname, wantMachine: "aaa",
		},
		{
			name:       "failed testing: unsafe (MAAS cannot commission it)",
			in:         DiscoveryInput{ByHostname: []MachineCandidate{m("aaa", "Failed testing")}},
			wantAction: DiscoveryUnsafe, wantRule: DiscoveryRuleHostname, wantMachine: "aaa",
		},
	}
	for _, status := range []string{"Deployed", "Deploying", "Broken", "Failed deployment", "Releasing", "Disk erasing",
		"Rescue mode", "Missing", "Reserved", "Retired", "Releasing failed", "Failed disk erasing", ""} {
		tests = append(tests, struct {
			name           string
			in             DiscoveryInput
			wantAction     string
			wantRule       string
			wantMachine    string
			wantCandidates []string
			wantClaimed    bool
		}{
			name:       "unsafe status " + status,
			in:         DiscoveryInput{AutoClaimNew: true, ByPowerAddress: []MachineCandidate{m("zzz", status)}},
			wantAction: DiscoveryUnsafe, wantRule: DiscoveryRulePowerAddress, wantMachine: "zzz",
		})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := DecideDiscovery(tc.in)
			assert.Equal(t, tc.wantAction, got.Action)
			assert.Equal(t, tc.wantRule, got.Rule)
			assert.Equal(t, tc.wantMachine, got.Machine.SystemID)
			assert.Equal(t, tc.wantCandidates, got.Candidates)
			assert.Equal(t, tc.wantClaimed, got.Claimed)
			assert.NotEmpty(t, got.Reason)
		})
	}
}
