package onboarding_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/internal/maassim"
	"github.com/maasflow/maasflow/shared/activities/activitiestest"
	"github.com/maasflow/maasflow/shared/activities/onboarding"
	"github.com/maasflow/maasflow/shared/domain"
)

// TestRunContextHoldsNoSecret: the run context goes into the execution
// history, so the bootstrap reference and the enrollment URL, which may
// carry credentials, stay out of it, and so does every seeded secret.
func TestRunContextHoldsNoSecret(t *testing.T) {
	enroll := "https://enroll:hunter2@api.example.com"
	e := newEnv(t, activitiestest.Options{SitePolicy: domain.Policy{EnrollmentURL: &enroll}})
	o := e.f.AddOnboarding(t, "gpu-01", "10.0.0.11")
	var v onboarding.ValidateOnboardingOutput
	e.must("ValidateOnboarding", refIn{ref(o)}, &v)
	require.NotNil(t, v.Context)
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	assertNoSecrets(t, "the run context", string(raw))
	for _, s := range []string{"hunter2", e.f.Site.Policy.Bootstrap.URL, e.f.Site.Policy.Bootstrap.CABundle[:40]} {
		assert.NotContains(t, string(raw), s)
	}
	assert.Equal(t, e.f.Site.MAASURL, v.Context.Site.MAASURL, "the site's connection is carried")
	assert.Equal(t, e.f.Profile.Architecture, v.Context.Profile.Architecture, "the profile's image is carried")
}

// TestRunContextSparesRecordReads: a step given the run context reads
// neither the site nor the profile; the same step without it reads both,
// and a context naming another site is not trusted.
func TestRunContextSparesRecordReads(t *testing.T) {
	e := newEnv(t, activitiestest.Options{})
	e.addHardware("gpu-01", "10.0.0.11", "52:54:00:00:00:11", maassim.Faults{})
	o := e.f.AddOnboarding(t, "gpu-01", "10.0.0.11")
	var v onboarding.ValidateOnboardingOutput
	e.must("ValidateOnboarding", refIn{ref(o)}, &v)
	e.must("DiscoverMachine", refIn{ref(o)}, nil)
	e.must("CommissionMachine", refIn{ref(o)}, nil)
	e.toReady(o)

	gets := func(in onboarding.OnboardingRef) int64 {
		before := e.f.DB.Counts().GetItem
		e.must("ConfigureStorage", refIn{in}, nil)
		return e.f.DB.Counts().GetItem - before
	}
	withRun := ref(o)
	withRun.Context = v.Context
	without := gets(ref(o))
	with := gets(withRun)
	assert.Equal(t, without-3, with, "site (policy), profile and site (MAAS client) are not read")

	other := *v.Context
	other.Site.ID = "another-site"
	foreign := ref(o)
	foreign.Context = &other
	assert.Equal(t, without, gets(foreign), "a context of another site is ignored: the records are read")

	// The MAAS client is built from the carried site record.
	_, err := e.f.Store.UpdateSite(context.Background(), activitiestest.SiteID, func(s *domain.Site) error {
		s.MAASURL = "http://127.0.0.1:1/MAAS"
		return nil
	})
	require.NoError(t, err)
	e.must("ConfigureStorage", refIn{withRun}, nil)
}
