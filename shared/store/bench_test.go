package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
)

// BenchmarkListOnboardings reads one 50-row page out of 10,000 onboardings
// (4 sites, 2,500 hosts, 1% still open) through each index, on local
// mode's database (memdb).
func BenchmarkListOnboardings(b *testing.B) {
	ctx := context.Background()
	db, err := NewLocalDB(ctx, "")
	require.NoError(b, err)
	s := New(db, "", nil)
	statuses := []domain.OnboardingStatus{domain.OnboardingCompleted, domain.OnboardingFailed, domain.OnboardingCancelled, domain.OnboardingManualIntervention}
	for i := range 10_000 {
		o := onboarding(fmt.Sprintf("o%05d", i), fmt.Sprintf("s%d", i%4), fmt.Sprintf("gpu%04d", i%2500))
		o.Status = statuses[i%3] // closed: a plain conditional put
		if i < 2500 && i%25 == 0 {
			o.Status = statuses[3] // open: also takes the host lock
		}
		o.CreatedAt = t0.Add(time.Duration(i) * time.Second)
		require.NoError(b, s.CreateOnboarding(ctx, o))
	}
	second, err := s.ListOnboardings(ctx, OnboardingFilter{SiteID: "s1"})
	require.NoError(b, err)

	cases := []struct {
		name string
		f    OnboardingFilter
	}{
		{"all", OnboardingFilter{}},
		{"status", OnboardingFilter{Status: domain.OnboardingFailed}},
		{"site", OnboardingFilter{SiteID: "s1"}},
		{"site_next_page", OnboardingFilter{SiteID: "s1", Cursor: second.NextCursor}},
		{"hostname", OnboardingFilter{Hostname: "gpu0042"}},
		{"site_and_status", OnboardingFilter{SiteID: "s2", Status: domain.OnboardingCompleted}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				page, err := s.ListOnboardings(ctx, c.f)
				if err != nil || len(page.Items) == 0 {
					b.Fatalf("page: %d items, %v", len(page.Items), err)
				}
			}
		})
	}
}
