package domain

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestResolvePolicy(t *testing.T) {
	yes, no, two := true, false, 2
	lvm := "lvm"
	tests := []struct {
		name          string
		site, profile Policy
		want          func(p *EffectivePolicy)
	}{
		{name: "defaults", want: func(*EffectivePolicy) {}},
		{
			name: "site overrides defaults",
			site: Policy{AutoClaimNew: &yes, DeployRetries: &two},
			want: func(p *EffectivePolicy) { p.AutoClaimNew = true; p.DeployRetries = 2 },
		},
		{
			name:    "profile overrides site",
			site:    Policy{AutoClaimNew: &yes, StorageLayout: &lvm},
			profile: Policy{AutoClaimNew: &no},
			want:    func(p *EffectivePolicy) { p.StorageLayout = "lvm" },
		},
		{
			name:    "bootstrap from profile",
			site:    Policy{Bootstrap: &BootstrapRef{URL: "https://a", Version: "1"}},
			profile: Policy{Bootstrap: &BootstrapRef{URL: "https://b", Version: "2"}},
			want:    func(p *EffectivePolicy) { p.Bootstrap = BootstrapRef{URL: "https://b", Version: "2"} },
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := DefaultPolicy()
			tc.want(&want)
			assert.Equal(t, want, ResolvePolicy(tc.site, tc.profile))
		})
	}
}

func TestIsOpenStatus(t *testing.T) {
	for s, open := range map[OnboardingStatus]bool{
		OnboardingPending: true, OnboardingRunning: true, OnboardingManualIntervention: true,
		OnboardingCompleted: false, OnboardingFailed: false, OnboardingCancelled: false,
	} {
		assert.Equal(t, open, IsOpenStatus(s), string(s))
	}
}
