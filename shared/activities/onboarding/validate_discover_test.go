package onboarding_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/internal/maassim"
	"github.com/maasflow/maasflow/shared/activities/activitiestest"
	"github.com/maasflow/maasflow/shared/activities/onboarding"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/events"
)

func TestValidateOnboardingIsIdempotent(t *testing.T) {
	e := newEnv(t, activitiestest.Options{})
	o := e.f.AddOnboarding(t, "gpu-01", "10.0.0.11")

	for range 2 {
		var out onboarding.ValidateOnboardingOutput
		e.must("ValidateOnboarding", refIn{ref(o)}, &out)
		assert.Equal(t, 1800, out.EnrollmentTimeoutSeconds)
	}
	got := e.onboarding(o.ID)
	assert.Equal(t, domain.OnboardingRunning, got.Status)
	assert.Equal(t, domain.StageValidate, got.Stage)
	require.Len(t, e.f.Events.Events(), 1, "started is published once per attempt")
	assert.Equal(t, events.OnboardingStarted, e.f.Events.Events()[0].DetailType)
}

func TestValidateOnboardingPolicyComesFromSiteAndProfile(t *testing.T) {
	yes, three, timeout := true, 3, 600
	e := newEnv(t, activitiestest.Options{
		SitePolicy:    domain.Policy{DeployRetries: &three, RoCEPhase2: &yes},
		ProfilePolicy: domain.Policy{EnrollmentTimeoutSeconds: &timeout},
	})
	o := e.f.AddOnboarding(t, "gpu-01", "10.0.0.11")
	var out onboarding.ValidateOnboardingOutput
	e.must("ValidateOnboarding", refIn{ref(o)}, &out)
	require.NotNil(t, out.Context)
	assert.Equal(t, 3, out.Context.Policy.DeployRetries, "the run carries the resolved policy")
	assert.Equal(t, 600, out.Context.Policy.EnrollmentTimeoutSeconds)
	out.Context = nil
	assert.Equal(t, onboarding.ValidateOnboardingOutput{NodeID: o.NodeID, EnrollmentTimeoutSeconds: 600, DeployRetries: 3,
		RoCEPhase2: true, StrictPXEPreflight: true}, out)
}

func TestValidateOnboardingGuardrails(t *testing.T) {
	ctx := context.Background()
	zero := 0
	tests := []struct {
		name  string
		check string
		setup func(e *env, o domain.Onboarding)
	}{
		{"site disabled", "site", func(e *env, _ domain.Onboarding) {
			_, err := e.f.Store.UpdateSite(ctx, activitiestest.SiteID, func(s *domain.Site) error { s.Status = domain.StatusDisabled; return nil })
			require.NoError(t, err)
		}},
		{"site never probed", "site_probe", func(e *env, _ domain.Onboarding) {
			_, err := e.f.Store.UpdateSite(ctx, activitiestest.SiteID, func(s *domain.Site) error { s.Probe = nil; return nil })
			require.NoError(t, err)
		}},
		{"site probe unhealthy", "site_probe", func(e *env, _ domain.Onboarding) {
			_, err := e.f.Store.UpdateSite(ctx, activitiestest.SiteID, func(s *domain.Site) error { s.Probe.Healthy = false; return nil })
			require.NoError(t, err)
		}},
		{"credentials not set", "site_credentials", func(e *env, _ domain.Onboarding) {
			_, err := e.f.Store.UpdateSite(ctx, activitiestest.SiteID, func(s *domain.Site) error { s.CredentialsSet = false; return nil })
			require.NoError(t, err)
		}},
		{"profile disabled", "profile", func(e *env, _ domain.Onboarding) {
			_, err := e.f.Store.UpdateProfile(ctx, activitiestest.SiteID, activitiestest.ProfileID, func(p *domain.Profile) error {
				p.Status = domain.StatusDisabled
				return nil
			})
			require.NoError(t, err)
		}},
		{"SKU inactive", "sku", func(e *env, _ domain.Onboarding) {
			_, err := e.f.Store.UpdateSKU(ctx, activitiestest.SKUID, func(s *domain.SKU) error { s.Active = false; return nil })
			require.NoError(t, err)
		}},
		{"SKU unknown", "sku", func(e *env, o domain.Onboarding) {
			_, err := e.f.Store.UpdateOnboarding(ctx, o.ID, func(x *domain.Onboarding) error { x.SKUID = "a100-nope"; return nil })
			require.NoError(t, err)
		}},
		{"enrollment timeout of zero", "policy", func(e *env, _ domain.Onboarding) {
			_, err := e.f.Store.UpdateProfile(ctx, activitiestest.SiteID, activitiestest.ProfileID, func(p *domain.Profile) error {
				p.Policy.EnrollmentTimeoutSeconds = &zero
				return nil
			})
			require.NoError(t, err)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, activitiestest.Options{})
			o := e.f.AddOnboarding(t, "gpu-01", "10.0.0.11")
			tc.setup(e, o)

			err := e.call("ValidateOnboarding", refIn{ref(o)}, nil)
			requireErrorName(t, err, "GuardrailError")
			var g *onboarding.GuardrailError
			require.ErrorAs(t, err, &g)
			assert.Equal(t, tc.check, g.Check)
			assert.Equal(t, "failed", e.lastExit(o.ID, domain.StageValidate).Outcome)
			assert.Empty(t, e.f.Events.Events(), "no started event for a refused onboarding")
			assert.Zero(t, e.f.Sim.Calls().Total, "guardrails never touch MAAS")
		})
	}
}

func TestActivitiesFenceTheAttempt(t *testing.T) {
	e := newEnv(t, activitiestest.Options{})
	o := e.f.AddOnboarding(t, "gpu-01", "10.0.0.11")
	stale := ref(o)
	stale.Attempt = 2
	requireErrorName(t, e.call("ValidateOnboarding", refIn{stale}, nil), "StaleAttemptError")
	assert.Empty(t, e.timeline(o.ID), "a stale execution writes nothing")
	assert.Equal(t, domain.OnboardingPending, e.onboarding(o.ID).Status)

	requireErrorName(t, e.call("DiscoverMachine", refIn{ref(o)}, nil), "OnboardingClosedError")
	e.must("ValidateOnboarding", refIn{ref(o)}, nil)
	requireErrorName(t, e.call("CommissionMachine", refIn{ref(o)}, nil), "MachineNotRecordedError")
	requireErrorName(t, e.call("ValidateOnboarding", refIn{onboarding.OnboardingRef{}}, nil), "InvalidInputError")
}

// A run a recovery operation replaced (its execution stopped, a Lambda of
// it still in flight) is fenced like an older attempt: same attempt, older
// run, nothing written.
func TestActivitiesFenceTheRun(t *testing.T) {
	e := newEnv(t, activitiestest.Options{})
	o := e.f.AddOnboarding(t, "gpu-01", "10.0.0.11")
	old := ref(o)
	e.must("ValidateOnboarding", refIn{old}, nil)
	_, err := e.f.Store.UpdateOnboarding(context.Background(), o.ID, func(cur *domain.Onboarding) error {
		cur.Run++ // what retry, resume and adopt write before they start the new run
		return nil
	})
	require.NoError(t, err)
	before := len(e.timeline(o.ID))

	err = e.call("DiscoverMachine", refIn{old}, nil)
	requireErrorName(t, err, "StaleAttemptError")
	assert.Contains(t, err.Error(), "attempt 1 run 1, not attempt 1 run 0")
	assert.Len(t, e.timeline(o.ID), before, "the replaced run writes nothing")
	assert.Zero(t, e.f.Sim.Calls().Total, "nor touches MAAS")

	current := old
	current.Run = 1
	e.must("DiscoverMachine", refIn{current}, nil)
}

func TestDiscoverMachineDecisions(t *testing.T) {
	tests := []struct {
		name      string
		seed      []maassim.MachineSeed
		autoClaim bool
		wantErr   string
		action    string
		rule      string
	}{
		{name: "ready by hostname", seed: []maassim.MachineSeed{{Hostname: "gpu-01", BMCIP: "10.0.0.11", PXEMAC: "52:54:00:00:01:01", Status: "ready"}},
			action: domain.DiscoveryAdopt, rule: domain.DiscoveryRuleHostname},
		{name: "allocated by power address", seed: []maassim.MachineSeed{{Hostname: "other", BMCIP: "10.0.0.11", PXEMAC: "52:54:00:00:01:01", Status: "allocated"}},
			action: domain.DiscoveryAdopt, rule: domain.DiscoveryRulePowerAddress},
		{name: "commissioning: wait", seed: []maassim.MachineSeed{{Hostname: "gpu-01", BMCIP: "10.0.0.11", PXEMAC: "52:54:00:00:01:01", Status: "commissioning"}},
			action: domain.DiscoveryWait, rule: domain.DiscoveryRuleHostname},
		{name: "failed commissioning: recommission", seed: []maassim.MachineSeed{{Hostname: "gpu-01", BMCIP: "10.0.0.11", PXEMAC: "52:54:00:00:01:01", Status: "failed_commissioning"}},
			action: domain.DiscoveryRecommission, rule: domain.DiscoveryRuleHostname},
		{name: "two by hostname", seed: []maassim.MachineSeed{
			{Hostname: "gpu-01", BMCIP: "10.0.0.11", PXEMAC: "52:54:00:00:01:01", Status: "ready"},
			{Hostname: "gpu-01", BMCIP: "10.0.0.99", PXEMAC: "52:54:00:00:01:99", Status: "ready"}},
			wantErr: "AmbiguousMachineMatchError"},
		{name: "two by power address", seed: []maassim.MachineSeed{
			{Hostname: "a", BMCIP: "10.0.0.11", PXEMAC: "52:54:00:00:01:01", Status: "ready"},
			{Hostname: "b", BMCIP: "10.0.0.11", PXEMAC: "52:54:00:00:01:01", Status: "new"}},
			autoClaim: true, wantErr: "AmbiguousMachineMatchError"},
		{name: "hostname and power address disagree", seed: []maassim.MachineSeed{
			{Hostname: "gpu-01", BMCIP: "10.0.0.98", PXEMAC: "52:54:00:00:01:01", Status: "ready"},
			{Hostname: "b", BMCIP: "10.0.0.11", PXEMAC: "52:54:00:00:01:02", Status: "ready"}},
			wantErr: "AmbiguousMachineMatchError"},
		{name: "new, claim not allowed", seed: []maassim.MachineSeed{{Hostname: "enlisted", BMCIP: "10.0.0.11", PXEMAC: "52:54:00:00:01:01", Status: "new"}},
			wantErr: "MachineClaimNotAllowedError"},
		{name: "new, auto-claimed", seed: []maassim.MachineSeed{{Hostname: "enlisted", BMCIP: "10.0.0.11", PXEMAC: "52:54:00:00:01:01", Status: "new"}},
			autoClaim: true, action: domain.DiscoveryCommission, rule: domain.DiscoveryRulePowerAddress},
		{name: "deployed", seed: []maassim.MachineSeed{{Hostname: "gpu-01", BMCIP: "10.0.0.11", PXEMAC: "52:54:00:00:01:01", Status: "deployed"}},
			wantErr: "MachineStateUnsafeError"},
		{name: "broken", seed: []maassim.MachineSeed{{Hostname: "gpu-01", BMCIP: "10.0.0.11", PXEMAC: "52:54:00:00:01:01", Status: "broken"}},
			wantErr: "MachineStateUnsafeError"},
		{name: "failed testing", seed: []maassim.MachineSeed{{Hostname: "gpu-01", BMCIP: "10.0.0.11", PXEMAC: "52:54:00:00:01:01", Status: "failed_testing"}},
			wantErr: "MachineStateUnsafeError"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			claim := tc.autoClaim
			e := newEnv(t, activitiestest.Options{SitePolicy: domain.Policy{AutoClaimNew: &claim}})
			for _, s := range tc.seed {
				_, err := e.f.Sim.AddMachine(s)
				require.NoError(t, err)
			}
			o := e.f.AddOnboarding(t, "gpu-01", "10.0.0.11")
			e.must("ValidateOnboarding", refIn{ref(o)}, nil)

			var out onboarding.DiscoverMachineOutput
			err := e.call("DiscoverMachine", refIn{ref(o)}, &out)
			if tc.wantErr != "" {
				requireErrorName(t, err, tc.wantErr)
				assert.Zero(t, e.mutatingCalls(), "discovery failing closed changes nothing in MAAS")
				assert.Empty(t, e.onboarding(o.ID).MAASSystemID)
				assert.Equal(t, "manual_intervention", e.lastExit(o.ID, domain.StageDiscover).Outcome)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.action, out.Action)
			assert.Equal(t, tc.rule, out.Rule)
			assert.Equal(t, tc.autoClaim && tc.action == domain.DiscoveryCommission, out.Claimed)
			assert.Equal(t, out.SystemID, e.onboarding(o.ID).MAASSystemID)
			node, err := e.f.Store.GetNode(context.Background(), o.NodeID)
			require.NoError(t, err)
			assert.Equal(t, out.SystemID, node.MAASSystemID)
			assert.Zero(t, e.callsTo("POST", ""), "an existing machine is never created again")
		})
	}
}

func TestDiscoverMachineCreatesWithIPMICredentials(t *testing.T) {
	e := newEnv(t, activitiestest.Options{})
	e.addHardware("gpu-01", "10.0.0.11", "52:54:00:00:00:11", maassim.Faults{})
	o := e.f.AddOnboarding(t, "gpu-01", "10.0.0.11")
	out := e.toDiscovered(o)
	require.Equal(t, domain.DiscoveryCreate, out.Action)
	m := e.machine(out.SystemID)
	assert.Equal(t, "gpu-01", m.Hostname)
	assert.Equal(t, "ipmi", m.PowerType)
	assert.Equal(t, "New", m.StatusName, "created with commission=false: CommissionMachine commissions with the policy flags")
	assertNoSecrets(t, "logs", e.f.Logs.String())
	assertNoSecrets(t, "timeline", timelineText(e.timeline(o.ID)))
}

func TestDiscoverMachineRetryAfterLostCreateAnswer(t *testing.T) {
	e := newEnv(t, activitiestest.Options{})
	e.addHardware("gpu-01", "10.0.0.11", "52:54:00:00:00:11", maassim.Faults{})
	o := e.f.AddOnboarding(t, "gpu-01", "10.0.0.11")
	first := e.toDiscovered(o)
	// The create reached MAAS but its answer was lost: the onboarding never
	// learnt the system id, and the activity runs again.
	_, err := e.f.Store.UpdateOnboarding(context.Background(), o.ID, func(x *domain.Onboarding) error { x.MAASSystemID = ""; return nil })
	require.NoError(t, err)

	var again onboarding.DiscoverMachineOutput
	e.must("DiscoverMachine", refIn{ref(o)}, &again)
	assert.Equal(t, first.SystemID, again.SystemID)
	assert.Equal(t, domain.DiscoveryCommission, again.Action, "its own New machine, not a claim")
	assert.False(t, again.Claimed)
	assert.Equal(t, 1, e.callsTo("POST", ""), "created once")
}

func TestDiscoverMachineMatchesByAnObservedPXEMAC(t *testing.T) {
	e := newEnv(t, activitiestest.Options{})
	sid, err := e.f.Sim.AddMachine(maassim.MachineSeed{Hostname: "renamed", BMCIP: "10.0.0.77", PXEMAC: "52:54:00:00:00:11", Status: "ready"})
	require.NoError(t, err)
	o := e.f.AddOnboarding(t, "gpu-01", "10.0.0.11")
	// An earlier attempt's PXE preflight observed the MAC.
	_, err = e.f.Store.UpdateOnboarding(context.Background(), o.ID, func(x *domain.Onboarding) error { x.PXEMAC = "52:54:00:00:00:11"; return nil })
	require.NoError(t, err)

	out := e.toDiscovered(o)
	assert.Equal(t, domain.DiscoveryRulePXEMAC, out.Rule)
	assert.Equal(t, sid, out.SystemID)
}
