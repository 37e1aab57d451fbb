package reconcile

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func node(id, host, sid string) domain.Node {
	return domain.Node{ID: id, SiteID: "s1", Hostname: host, MAASSystemID: sid, Status: domain.NodeActive}
}

func machine(sid, host, status, power string) maas.Machine {
	return maas.Machine{SystemID: sid, Hostname: host, StatusName: status, PowerState: power}
}

func kinds(fs []Finding) []string {
	out := []string{}
	for _, f := range fs {
		out = append(out, f.NodeID+" "+f.Kind+" "+f.Expected+" → "+f.Observed)
	}
	return out
}

func TestCompareNodes(t *testing.T) {
	tests := []struct {
		name     string
		nodes    []domain.Node
		machines []maas.Machine
		power    map[string]PowerReading
		want     []string
	}{
		{name: "in agreement", nodes: []domain.Node{node("n1", "gpu1", "aaa")},
			machines: []maas.Machine{machine("aaa", "gpu1", "Deployed", "on")}, want: []string{}},
		{name: "gone", nodes: []domain.Node{node("n1", "gpu1", "aaa")},
			want: []string{"n1 machine_missing system_id aaa → absent"}},
		{name: "released", nodes: []domain.Node{node("n1", "gpu1", "aaa")},
			machines: []maas.Machine{machine("aaa", "gpu1", "Ready", "off")},
			want:     []string{"n1 status_mismatch Deployed → Ready"}},
		{name: "broken", nodes: []domain.Node{node("n1", "gpu1", "aaa")},
			machines: []maas.Machine{machine("aaa", "gpu1", "Broken", "on")},
			want:     []string{"n1 status_mismatch Deployed → Broken"}},
		{name: "renamed", nodes: []domain.Node{node("n1", "gpu1", "aaa")},
			machines: []maas.Machine{machine("aaa", "gpu1-old", "Deployed", "on")},
			want:     []string{"n1 hostname_changed gpu1 → gpu1-old"}},
		{name: "hostname case is not drift", nodes: []domain.Node{node("n1", "GPU1", "aaa")},
			machines: []maas.Machine{machine("aaa", "gpu1", "Deployed", "on")}, want: []string{}},
		{name: "enlisted again", nodes: []domain.Node{node("n1", "gpu1", "aaa")},
			machines: []maas.Machine{machine("bbb", "gpu1", "New", "unknown")},
			want:     []string{"n1 system_id_changed aaa → bbb"}},
		{name: "a stranger under a managed hostname", nodes: []domain.Node{node("n1", "gpu1", "aaa")},
			machines: []maas.Machine{machine("aaa", "gpu1", "Deployed", "on"), machine("ccc", "gpu1", "New", "unknown")},
			want:     []string{"maas:ccc unknown_machine only aaa (node n1) named gpu1 → ccc New"}},
		{name: "another node's machine is no stranger",
			nodes:    []domain.Node{node("n1", "gpu1", "aaa"), node("n2", "gpu2", "bbb")},
			machines: []maas.Machine{machine("aaa", "gpu1", "Deployed", "on"), machine("bbb", "gpu1", "Deployed", "on")},
			want:     []string{"n2 hostname_changed gpu2 → gpu1"}},
		{name: "power off, confirmed", nodes: []domain.Node{node("n1", "gpu1", "aaa")},
			machines: []maas.Machine{machine("aaa", "gpu1", "Deployed", "off")},
			power:    map[string]PowerReading{"aaa": {State: "off"}},
			want:     []string{"n1 power_off on → off"}},
		{name: "listed off but the BMC says on", nodes: []domain.Node{node("n1", "gpu1", "aaa")},
			machines: []maas.Machine{machine("aaa", "gpu1", "Deployed", "off")},
			power:    map[string]PowerReading{"aaa": {State: "on"}}, want: []string{}},
		{name: "BMC unreachable", nodes: []domain.Node{node("n1", "gpu1", "aaa")},
			machines: []maas.Machine{machine("aaa", "gpu1", "Deployed", "unknown")},
			power:    map[string]PowerReading{"aaa": {Unreachable: true}},
			want:     []string{"n1 bmc_unreachable power on → BMC unreachable"}},
		{name: "not queried: judged on the listing", nodes: []domain.Node{node("n1", "gpu1", "aaa"), node("n2", "gpu2", "bbb")},
			machines: []maas.Machine{machine("aaa", "gpu1", "Deployed", "error"), machine("bbb", "gpu2", "Deployed", "off")},
			want:     []string{"n1 bmc_unreachable power on → BMC unreachable", "n2 power_off on → off"}},
		{name: "only active nodes are checked",
			nodes: []domain.Node{{ID: "n1", Hostname: "gpu1", MAASSystemID: "aaa", Status: domain.NodeOnboarding},
				{ID: "n2", Hostname: "gpu2", MAASSystemID: "bbb", Status: domain.NodeRetired}},
			want: []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Compare(Observation{SiteID: "s1", Now: t0, Nodes: tt.nodes, Machines: tt.machines, Power: tt.power})
			assert.Equal(t, tt.want, kinds(got))
		})
	}
}

func TestCompareOnboardings(t *testing.T) {
	o := domain.Onboarding{ID: "o1", SiteID: "s1", Hostname: "gpu1", NodeID: "n1", Attempt: 2, Status: domain.OnboardingRunning,
		ExecutionID: "arn:aws:states:local:0:execution:onboarding:onboarding-o1-2", CreatedAt: t0.Add(-time.Hour)}
	token := func(onb string, attempt int, nodeID string) *domain.EnrollmentToken {
		return &domain.EnrollmentToken{OnboardingID: onb, Attempt: attempt, NodeID: nodeID}
	}
	withExec := func(id string) domain.Onboarding { c := o; c.ExecutionID = id; return c }
	young := o
	young.ExecutionID, young.CreatedAt = "", t0.Add(-time.Minute)
	old := young
	old.CreatedAt = t0.Add(-time.Hour)
	noNode := o
	noNode.NodeID = ""
	frozen := o
	frozen.Status = domain.OnboardingManualIntervention

	tests := []struct {
		name string
		view OnboardingView
		want []string
	}{
		{"running", OnboardingView{Onboarding: o, ExecutionStatus: ExecutionRunning, Token: token("o1", 2, "n1")}, []string{}},
		{"killed", OnboardingView{Onboarding: o, ExecutionStatus: "ABORTED"}, []string{"n1 execution_not_running execution RUNNING → execution ABORTED"}},
		{"forgotten", OnboardingView{Onboarding: noNode, ExecutionStatus: ExecutionUnknown},
			[]string{"onboarding:o1 execution_not_running execution RUNNING → execution UNKNOWN"}},
		{"not started yet", OnboardingView{Onboarding: young}, []string{}},
		{"manual intervention: ended on purpose", OnboardingView{Onboarding: frozen, ExecutionStatus: "SUCCEEDED"}, []string{}},
		{"never started", OnboardingView{Onboarding: old}, []string{"n1 execution_not_running execution RUNNING → no execution"}},
		{"execution of another attempt", OnboardingView{Onboarding: withExec("arn:x:execution:onboarding:onboarding-o1-1"), ExecutionStatus: ExecutionRunning},
			[]string{"n1 attempt_mismatch execution onboarding-o1-2 → execution onboarding-o1-1"}},
		{"token of another attempt", OnboardingView{Onboarding: o, ExecutionStatus: ExecutionRunning, Token: token("o1", 1, "n1")},
			[]string{"n1 token_mismatch token of attempt 2 → token of attempt 1"}},
		{"token of another onboarding", OnboardingView{Onboarding: o, ExecutionStatus: ExecutionRunning, Token: token("o9", 2, "n1")},
			[]string{"n1 token_mismatch token of onboarding o1 → token of onboarding o9"}},
		{"token of another node", OnboardingView{Onboarding: o, ExecutionStatus: ExecutionRunning, Token: token("o1", 2, "n7")},
			[]string{"n1 token_mismatch token of node n1 → token of node n7"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Compare(Observation{SiteID: "s1", Now: t0, Onboardings: []OnboardingView{tt.view}})
			assert.Equal(t, tt.want, kinds(got))
		})
	}
}

func TestPlanDrift(t *testing.T) {
	f := func(node, kind, observed string) Finding {
		return Finding{NodeID: node, Kind: kind, Expected: "Deployed", Observed: observed}
	}
	open := []domain.DriftItem{
		{ID: "d1", NodeID: "n1", Kind: domain.DriftStatusMismatch, Expected: "Deployed", Observed: "Broken", State: domain.DriftOpen, FirstSeen: t0},
		{ID: "d2", NodeID: "n2", Kind: domain.DriftStatusMismatch, Expected: "Deployed", Observed: "Ready", State: domain.DriftOpen, FirstSeen: t0,
			Resolution: &domain.DriftResolution{Action: domain.DriftAcknowledge}},
		{ID: "d3", NodeID: "n3", Kind: domain.DriftStatusMismatch, Expected: "Deployed", Observed: "Ready", State: domain.DriftOpen, FirstSeen: t0},
	}
	now := t0.Add(time.Hour)
	p := PlanDrift("s1", "r2", now, open, []Finding{
		f("n1", domain.DriftStatusMismatch, "Broken"), // unchanged
		f("n2", domain.DriftStatusMismatch, "New"),    // acknowledged, then changed
		f("n4", domain.DriftPowerOff, "off"),          // new
		f("n4", domain.DriftPowerOff, "off"),          // reported twice: once
	})
	ids := func(items []domain.DriftItem) []string {
		out := []string{}
		for _, d := range items {
			out = append(out, d.NodeID)
		}
		return out
	}
	assert.Equal(t, []string{"n1"}, ids(p.Seen))
	assert.Equal(t, now, p.Seen[0].LastSeen)
	assert.Equal(t, t0, p.Seen[0].FirstSeen)
	assert.Equal(t, []string{"n2", "n4"}, ids(p.New))
	assert.Nil(t, p.New[0].Resolution, "a change ends the acknowledgement")
	assert.Equal(t, ItemID("r2", "s1", "n4|power_off"), p.New[1].ID)
	assert.Equal(t, []string{"n2", "n3"}, ids(p.Closed))
	for _, d := range p.Closed {
		assert.Equal(t, domain.DriftClosed, d.State)
		assert.Equal(t, "r2", d.ClosedBy)
	}
}
