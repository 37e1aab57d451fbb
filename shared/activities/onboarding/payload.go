package onboarding

import (
	"errors"
	"strings"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/enroll"
)

// Payload parts, separately versioned so a failure says which one broke
// (requirements readiness §3.4).
const (
	partSiteBootstrap = "site-bootstrap"
	partNodeBootstrap = "node-bootstrap"
)

// payload is a rendered first-boot payload. UserData holds the token: it
// goes to MAAS and nowhere else.
type payload struct {
	UserData    domain.Secret
	SiteVersion string
	NodeVersion string
}

// enrollmentURL is the node-facing API base: the policy's, else the
// deployment's.
func (a *Activities) enrollmentURL(pol domain.EffectivePolicy) string {
	if pol.EnrollmentURL != "" {
		return strings.TrimRight(pol.EnrollmentURL, "/")
	}
	return strings.TrimRight(a.d.Config.APIURL, "/")
}

// renderPayload composes the cloud-init user_data: the site bootstrap
// first, then the node bootstrap bundle carrying the token (firstboot
// contract, requirements runbook bundle fields). Errors are PayloadRenderError naming
// the part and its version; they never hold the token.
func (a *Activities) renderPayload(pol domain.EffectivePolicy, nodeID string, token domain.Secret) (payload, error) {
	site := pol.Bootstrap
	if site.URL == "" || site.Version == "" {
		return payload{}, &PayloadRenderError{Part: partSiteBootstrap, Version: versionOrNone(site.Version),
			Reason: "the policy names no site bootstrap bundle (bootstrap.url and bootstrap.version are required)"}
	}
	bundle, err := enroll.NewBundle(enroll.BundleInput{
		NodeID:             nodeID,
		APIURL:             a.enrollmentURL(pol),
		Token:              token,
		TaskSigningPubKeys: a.taskSigningKeys(),
		CABundlePEM:        pol.CABundleOr(a.d.Config.CABundle),
		Package:            a.d.Config.Package,
	})
	if err != nil {
		return payload{}, renderError(err, site.Version)
	}
	ud, err := enroll.RenderUserData(site, bundle)
	if err != nil {
		return payload{}, renderError(err, site.Version)
	}
	return payload{UserData: domain.Secret(ud), SiteVersion: site.Version, NodeVersion: bundle.BundleVersion}, nil
}

func (a *Activities) taskSigningKeys() []string {
	keys := a.d.Config.TaskSigningPubKeys
	if keys == nil {
		return []string{}
	}
	return keys
}

// renderError attributes an enroll error to the payload part it is about.
func renderError(err error, siteVersion string) error {
	var be *enroll.BundleError
	if errors.As(err, &be) {
		if strings.HasPrefix(be.Field, "site_bootstrap") {
			return &PayloadRenderError{Part: partSiteBootstrap, Version: versionOrNone(siteVersion), Reason: be.Error()}
		}
		return &PayloadRenderError{Part: partNodeBootstrap, Version: enroll.BundleVersion, Reason: be.Error()}
	}
	// enroll's other errors are generic and never quote values.
	return &PayloadRenderError{Part: partNodeBootstrap, Version: enroll.BundleVersion, Reason: err.Error()}
}

func versionOrNone(v string) string {
	if v == "" {
		return "(no version)"
	}
	return v
}
