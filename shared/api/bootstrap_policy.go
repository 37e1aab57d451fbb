package api

import (
	"context"
	"fmt"
	"net/http"

	"github.com/maasflow/maasflow/shared/domain"
)

// CodePolicyIncomplete: the effective policy cannot resolve the bootstrap
// inputs a deploy needs, so an onboarding could only fail at hardening,
// after MAAS has created and commissioned the machine.
const CodePolicyIncomplete = "policy_incomplete"

// checkBootstrapPolicy refuses an onboarding whose effective policy lacks a
// static bootstrap input: the same pure check the hardening stage runs
// (domain.CheckBootstrapInputs), done before anything happens in MAAS. The
// reachability checks stay in hardening, where the site's network is.
func (s *server) checkBootstrapPolicy(site domain.Site, profile domain.Profile) error {
	bad := s.bootstrapInputs(site.Policy, profile.Policy)
	if bad == nil {
		return nil
	}
	return &StatusError{Status: http.StatusUnprocessableEntity, Code: CodePolicyIncomplete, Field: bad.Field,
		Message: fmt.Sprintf("%s: the effective policy of site %q and profile %q cannot bootstrap a node: %s", bad.Field, site.ID, profile.ID, bad.Reason)}
}

// bootstrapInputs checks the policy a site and profile resolve to, with
// the deployment's enrollment URL and CA bundle as its defaults.
func (s *server) bootstrapInputs(site, profile domain.Policy) *domain.BootstrapInputError {
	return domain.CheckBootstrapInputs(domain.ResolvePolicy(site, profile), s.lifecycle.bundles.APIURL, s.lifecycle.bundles.CABundle)
}

// policyWarnings says which of the site's active profiles (or the site's
// own policy, when it has none) could not onboard anything: an onboarding
// with them would be refused with 422 policy_incomplete. A PATCH still
// succeeds; policy is often set in steps.
func (s *server) policyWarnings(ctx context.Context, site domain.Site, only *domain.Profile) []string {
	var profiles []domain.Profile
	if only != nil {
		profiles = []domain.Profile{*only}
	} else if all, err := s.store.ListProfiles(ctx, site.ID); err == nil {
		for _, p := range all {
			if p.Status == domain.StatusActive {
				profiles = append(profiles, p)
			}
		}
	}
	var warnings []string
	if len(profiles) == 0 {
		if bad := s.bootstrapInputs(site.Policy, domain.Policy{}); bad != nil {
			warnings = append(warnings, fmt.Sprintf("site %s: %s; onboardings are refused until a profile or the site sets it", site.ID, bad))
		}
		return warnings
	}
	for _, p := range profiles {
		if bad := s.bootstrapInputs(site.Policy, p.Policy); bad != nil {
			warnings = append(warnings, fmt.Sprintf("profile %s: %s; onboardings with it are refused", p.ID, bad))
		}
	}
	return warnings
}
