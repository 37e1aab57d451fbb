package onboarding

import (
	"context"

	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/domain"
)

// RunContext is what ValidateOnboarding resolved once for the run from the
// site and the profile, and the state machine hands to the later
// activities (`$.policy.run`), so that they do not read both records again
// on every step: the effective policy, the site's connection and the
// profile's image. A run therefore works with the policy as it was
// validated at its start; an edit takes effect for the next run, and a
// recovery that resumes a run passes through ValidateOnboarding again
// (docs/decisions.md).
//
// It never holds a secret, because the state machine records it in the
// execution history: the bootstrap reference and the enrollment URL (either
// may carry credentials in its URL), the records' own policy layers and
// the probe are left out. The activities that need them (CheckPredeploy,
// DeployMachine) read the site and profile.
type RunContext struct {
	Policy  domain.EffectivePolicy `json:"policy"`
	Site    domain.Site            `json:"site"`
	Profile domain.Profile         `json:"profile"`
	// SKU is the onboarding's SKU as the guardrails read it (VerifyHardware).
	SKU *domain.SKU `json:"sku,omitempty"`
}

// newRunContext keeps what a later step may carry of pol, site and profile.
func newRunContext(pol domain.EffectivePolicy, site domain.Site, profile domain.Profile) *RunContext {
	pol.Bootstrap, pol.EnrollmentURL = domain.BootstrapRef{}, ""
	site.Policy, site.Probe = domain.Policy{}, nil
	profile.Policy = domain.Policy{}
	return &RunContext{Policy: pol, Site: site, Profile: profile}
}

// runContext returns the run context the state machine passed when it belongs to
// the onboarding as read (same site and profile), else nil: the records
// are read instead.
func (c *call) runContext() *RunContext {
	r := c.ref.Context
	if r == nil || c.Rec.ID == "" || r.Site.ID != c.Rec.SiteID || r.Profile.ID != c.Rec.ProfileID || r.Profile.SiteID != c.Rec.SiteID {
		return nil
	}
	return r
}

// runPolicy is the effective policy and the profile for a step that needs
// neither the bootstrap reference nor the enrollment URL: the run's, or
// resolved from the records now when the execution carries none.
func (c *call) runPolicy(ctx context.Context) (domain.EffectivePolicy, domain.Profile, error) {
	if r := c.runContext(); r != nil {
		return r.Policy, r.Profile, nil
	}
	pol, _, profile, err := c.policy(ctx)
	return pol, profile, err
}

// siteRecordConnector builds a site's MAAS client from a site record the
// caller already holds (SiteConnector.ForSiteRecord).
type siteRecordConnector interface {
	ForSiteRecord(ctx context.Context, site domain.Site) (activities.MAAS, error)
}
