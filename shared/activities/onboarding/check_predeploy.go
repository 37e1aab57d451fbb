package onboarding

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/enroll"
)

// Pre-deploy check names (requirements readiness §8.1), as PredeployCheckError.Check.
const (
	CheckBootstrapInputs = "bootstrap_inputs"
	CheckCAMaterial      = "ca_material"
	CheckEnrollmentAPI   = "enrollment_api"
	CheckBootstrapFetch  = "bootstrap_fetch"
	CheckPayloadRender   = "payload_render"
)

// predeployHTTPTimeout bounds each check's HTTP request.
const predeployHTTPTimeout = 15 * time.Second

// maxBootstrapBytes bounds the site bootstrap download the check hashes.
const maxBootstrapBytes = 256 << 20

// CheckPredeployInput identifies the onboarding.
type CheckPredeployInput struct {
	OnboardingRef
}

// CheckPredeployOutput lists the checks that passed and the payload part
// versions a deploy would use.
type CheckPredeployOutput struct {
	Checks               []string `json:"checks"`
	SiteBootstrapVersion string   `json:"site_bootstrap_version"`
	NodeBootstrapVersion string   `json:"node_bootstrap_version"`
}

// CheckPredeploy runs the pre-deploy hardening of requirements readiness §8.1 before
// anything is deployed, in this order: the bootstrap inputs resolve (site
// bootstrap reference, enrollment URL, node), the CA material is real PEM
// (not a template placeholder), the enrollment API answers GET
// <api>/api/v1/healthz, the site bootstrap URL is fetchable and matches its
// sha256 when one is given, and the composed payload renders (with a
// throwaway token that is never stored). The reachability checks run from
// the control plane, not from the node's subnet; PXE preflight covers the
// node side (gateway, DHCP). Read-only: repeating it is free.
//
// Errors: PredeployCheckError naming the failed check.
func (a *Activities) CheckPredeploy(ctx context.Context, in CheckPredeployInput) (out CheckPredeployOutput, err error) {
	ctx, cancel := a.bound(ctx)
	defer cancel()
	c, err := a.beginIn(ctx, "CheckPredeploy", domain.StageHardening, in.OnboardingRef)
	defer c.Finish(ctx, &err)
	if err != nil {
		return out, err
	}
	pol, siteRecord, _, err := c.policy(ctx)
	if err != nil {
		return out, err
	}
	fail := func(check, reason string) error { return &PredeployCheckError{Check: check, Reason: reason} }
	site, api := pol.Bootstrap, a.enrollmentURL(pol)

	// The static inputs are the rules POST /onboardings already applied;
	// checked again because the policy may have changed since.
	if bad := domain.CheckBootstrapInputs(pol, a.d.Config.APIURL, a.d.Config.CABundle); bad != nil {
		check := CheckBootstrapInputs
		if bad.Field == domain.FieldBootstrapCA {
			check = CheckCAMaterial
		}
		return out, fail(check, bad.Error())
	}
	if c.Rec.NodeID == "" {
		return out, fail(CheckBootstrapInputs, "the onboarding has no node record")
	}
	out.Checks = append(out.Checks, CheckBootstrapInputs, CheckCAMaterial)

	// The checks run from the site's network: through a connector site's
	// connector (requirements readiness §8.1, "from the MAAS node subnet").
	doer, err := a.siteHTTP(ctx, siteRecord)
	if err != nil {
		return out, err
	}
	if _, err := a.fetch(ctx, doer, api+"/api/v1/healthz"); err != nil {
		return out, fail(CheckEnrollmentAPI, err.Error())
	}
	out.Checks = append(out.Checks, CheckEnrollmentAPI)

	body, err := a.fetch(ctx, doer, site.URL)
	if err != nil {
		return out, fail(CheckBootstrapFetch, err.Error())
	}
	if site.SHA256 != "" {
		sum := sha256.Sum256(body)
		if got := hex.EncodeToString(sum[:]); !strings.EqualFold(got, site.SHA256) {
			return out, fail(CheckBootstrapFetch, fmt.Sprintf("sha256 of %s is %s, the policy expects %s", redactURL(site.URL), got, site.SHA256))
		}
	}
	out.Checks = append(out.Checks, CheckBootstrapFetch)

	throwaway, err := enroll.NewToken()
	if err != nil {
		return out, fail(CheckPayloadRender, "cannot make a token: "+err.Error())
	}
	p, err := a.renderPayload(pol, c.Rec.NodeID, throwaway)
	if err != nil {
		return out, fail(CheckPayloadRender, err.Error())
	}
	out.Checks = append(out.Checks, CheckPayloadRender)
	out.SiteBootstrapVersion, out.NodeBootstrapVersion = p.SiteVersion, p.NodeVersion
	return out, c.Exit(ctx, fmt.Sprintf("pre-deploy checks passed (%s); site-bootstrap %s, node-bootstrap %s",
		strings.Join(out.Checks, ", "), p.SiteVersion, p.NodeVersion))
}

// fetch GETs url and returns the body of a 200. Errors say what failed
// without the URL's query (which may carry a signature).
func (a *Activities) fetch(ctx context.Context, doer activities.HTTPDoer, url string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, predeployHTTPTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("bad URL %s", redactURL(url))
	}
	resp, err := doer.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("GET %s timed out", redactURL(url))
		}
		return nil, fmt.Errorf("GET %s failed: unreachable", redactURL(url))
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s answered %d", redactURL(url), resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBootstrapBytes+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: reading the body failed", redactURL(url))
	}
	if len(body) > maxBootstrapBytes {
		return nil, fmt.Errorf("GET %s: body larger than %d bytes", redactURL(url), maxBootstrapBytes)
	}
	return body, nil
}

// siteHTTP is the client the site's fetch checks use: the site's own path
// when the MAAS connector offers one (SiteConnector.SiteHTTPFor), else Deps.HTTP.
func (a *Activities) siteHTTP(ctx context.Context, site domain.Site) (activities.HTTPDoer, error) {
	if sh, ok := a.d.MAAS.(interface {
		SiteHTTPFor(site domain.Site) (activities.HTTPDoer, bool, error)
	}); ok {
		doer, own, err := sh.SiteHTTPFor(site)
		if err != nil || own {
			return doer, err
		}
	}
	return a.d.HTTP, nil
}

// redactURL drops a URL's query and user info for messages.
func redactURL(u string) string {
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		u = u[:i]
	}
	if i := strings.Index(u, "://"); i >= 0 {
		if at := strings.Index(u[i+3:], "@"); at >= 0 && !strings.Contains(u[i+3:i+3+at], "/") {
			u = u[:i+3] + u[i+3+at+1:]
		}
	}
	return u
}
