package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/logfield"
	"github.com/maasflow/maasflow/shared/maas"
	"github.com/maasflow/maasflow/shared/secrets"
	"github.com/maasflow/maasflow/shared/store"
)

// siteView is a site as the API shows it: the record plus the policy its
// profiles inherit (defaults overlaid with the site's own policy).
type siteView struct {
	domain.Site
	EffectivePolicy domain.EffectivePolicy `json:"effective_policy"`
	// Warnings (PATCH and DELETE) name the profiles whose effective
	// policy could not onboard anything, and connector queues that could
	// not be deleted.
	Warnings []string `json:"warnings,omitempty"`
}

func viewSite(s domain.Site) siteView {
	if s.Connectivity == "" {
		s.Connectivity = domain.ConnectivityVPC
	}
	return siteView{Site: s, EffectivePolicy: domain.ResolvePolicy(s.Policy, domain.Policy{})}
}

type siteCreateRequest struct {
	Name        string          `json:"name"`
	MAASURL     string          `json:"maas_url"`
	Description string          `json:"description"`
	Policy      json.RawMessage `json:"policy"`
	// Connectivity and AllowHTTP choose the network path (domain.Site).
	Connectivity *string `json:"connectivity"`
	AllowHTTP    *bool   `json:"allow_http"`
	// Region is the site's region; an SKU with a region onboards only here
	// when they are equal.
	Region string `json:"region"`
}

// PathProber probes a site over its own network path and, for a connector
// site, reports the connector (connector.Paths).
type PathProber interface {
	ProbeSite(ctx context.Context, site domain.Site, apiKey domain.Secret, scripts []string) (maas.ProbeResult, *domain.ConnectorStatus, error)
}

// applyConnectivity sets the site's network path from a request and
// checks the pair: allow_http is for a VPC site whose MAAS URL is http.
func applyConnectivity(site *domain.Site, connectivity *string, allowHTTP *bool) error {
	if connectivity != nil {
		if *connectivity != domain.ConnectivityVPC && *connectivity != domain.ConnectivityConnector {
			return fieldError("connectivity", "must be %q or %q", domain.ConnectivityVPC, domain.ConnectivityConnector)
		}
		site.Connectivity = *connectivity
	}
	if allowHTTP != nil {
		site.AllowHTTP = *allowHTTP
	}
	if site.AllowHTTP && site.ThroughConnector() {
		return fieldError("allow_http", "applies to vpc sites only: a connector reaches MAAS at its own site")
	}
	return nil
}

func (s *server) createSite(rq *request) (int, any, error) {
	var in siteCreateRequest
	if err := decodeBody(rq, &in); err != nil {
		return 0, nil, err
	}
	if err := checkName("name", in.Name); err != nil {
		return 0, nil, err
	}
	if err := checkHTTPURL("maas_url", in.MAASURL, true); err != nil {
		return 0, nil, err
	}
	if err := checkText("description", in.Description, false, 1024); err != nil {
		return 0, nil, err
	}
	if err := checkSiteRegion(in.Region); err != nil {
		return 0, nil, err
	}
	policy, err := decodePolicy(in.Policy, "policy.")
	if err != nil {
		return 0, nil, err
	}
	now := s.clock.Now().UTC()
	site := domain.Site{
		ID:          s.newID(),
		Name:        in.Name,
		MAASURL:     in.MAASURL,
		Description: in.Description,
		Region:      in.Region,
		Status:      domain.StatusActive,
		Policy:      policy,
		CreatedAt:   now,
		UpdatedAt:   now,
	}
	site.Connectivity = domain.ConnectivityVPC
	if err := applyConnectivity(&site, in.Connectivity, in.AllowHTTP); err != nil {
		return 0, nil, err
	}
	rq.setTarget("site:" + site.ID)
	if err := s.ensureConnectorQueues(rq.ctx(), site); err != nil {
		return 0, nil, err
	}
	if err := s.store.CreateSite(rq.ctx(), site); err != nil {
		if isConflict(err) {
			return 0, nil, conflictError("name", "a site named %q already exists", in.Name)
		}
		return 0, nil, err
	}
	rq.w.Header().Set("Location", "/api/v1/admin/maas-sites/"+site.ID)
	return http.StatusCreated, viewSite(site), nil
}

func (s *server) listSites(rq *request) (int, any, error) {
	all, err := s.store.ListSites(rq.ctx())
	if err != nil {
		return 0, nil, err
	}
	views := make([]siteView, 0, len(all))
	for _, site := range all {
		views = append(views, viewSite(site))
	}
	return http.StatusOK, newList(views), nil
}

func (s *server) getSite(rq *request) (int, any, error) {
	site, err := s.store.GetSite(rq.ctx(), rq.r.PathValue("id"))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, viewSite(site), nil
}

// patchFields are the PATCH members sites and profiles share. The request
// types list them again rather than embed this type: encoding/json would
// name an embedded member "patchFields.status" in a type error.
type patchFields struct {
	Name   *string         `json:"name"`
	Status *string         `json:"status"`
	Policy json.RawMessage `json:"policy"`
}

// checkPolicy merges the policy patch into the current policy once up
// front, so that apply, which merges it again into the record the store
// reads, cannot fail on input.
func (p *patchFields) checkPolicy(cur domain.Policy) error {
	if len(p.Policy) == 0 {
		return nil
	}
	_, err := mergePolicy(cur, p.Policy, "policy.")
	return err
}

// apply sets the shared members that were given on a record being updated.
func (p *patchFields) apply(name, status *string, policy *domain.Policy) error {
	if p.Name != nil {
		*name = *p.Name
	}
	if p.Status != nil {
		*status = *p.Status
	}
	if len(p.Policy) > 0 {
		merged, err := mergePolicy(*policy, p.Policy, "policy.")
		if err != nil {
			return err
		}
		*policy = merged
	}
	return nil
}

type sitePatchRequest struct {
	Name        *string         `json:"name"`
	MAASURL     *string         `json:"maas_url"`
	Description *string         `json:"description"`
	Status      *string         `json:"status"`
	Policy      json.RawMessage `json:"policy"`
	// Connectivity and AllowHTTP change the network path.
	Connectivity *string `json:"connectivity"`
	AllowHTTP    *bool   `json:"allow_http"`
	Region       *string `json:"region"`
}

func (s *server) patchSite(rq *request) (int, any, error) {
	var in sitePatchRequest
	if err := decodePatch(rq, &in); err != nil {
		return 0, nil, err
	}
	if in.Name != nil {
		if err := checkName("name", *in.Name); err != nil {
			return 0, nil, err
		}
	}
	if in.MAASURL != nil {
		if err := checkHTTPURL("maas_url", *in.MAASURL, true); err != nil {
			return 0, nil, err
		}
	}
	if in.Description != nil {
		if err := checkText("description", *in.Description, false, 1024); err != nil {
			return 0, nil, err
		}
	}
	if err := checkStatus(in.Status); err != nil {
		return 0, nil, err
	}
	if in.Region != nil {
		if err := checkSiteRegion(*in.Region); err != nil {
			return 0, nil, err
		}
	}
	id := rq.r.PathValue("id")
	cur, err := s.store.GetSite(rq.ctx(), id)
	if err != nil {
		return 0, nil, err
	}
	shared := patchFields{Name: in.Name, Status: in.Status, Policy: in.Policy}
	if err := shared.checkPolicy(cur.Policy); err != nil {
		return 0, nil, err
	}
	wasConnector := cur.ThroughConnector() && cur.Status == domain.StatusActive
	if err := applyConnectivity(&cur, in.Connectivity, in.AllowHTTP); err != nil {
		return 0, nil, err
	}
	if in.Connectivity != nil || in.Status != nil {
		next := cur
		if in.Status != nil {
			next.Status = *in.Status
		}
		if err := s.ensureConnectorQueues(rq.ctx(), next); err != nil {
			return 0, nil, err
		}
	}
	moved := in.MAASURL != nil && *in.MAASURL != cur.MAASURL
	if moved {
		// The credentials were issued by the region at the old URL: they
		// must never be sent to the new one. Clear them before the URL
		// changes, so no moment pairs the old key with the new URL.
		if err := s.clearCredentials(rq, id); err != nil {
			return 0, nil, err
		}
	}
	now := s.clock.Now().UTC()
	site, err := s.store.UpdateSite(rq.ctx(), id, func(site *domain.Site) error {
		if err := shared.apply(&site.Name, &site.Status, &site.Policy); err != nil {
			return err
		}
		if moved || in.MAASURL != nil && *in.MAASURL != site.MAASURL {
			site.MAASURL = *in.MAASURL
			// The last probe spoke to another URL, with credentials that
			// are now cleared: POST new ones, then probe.
			site.Probe = nil
			site.CredentialsSet = false
		}
		if in.Connectivity != nil || in.AllowHTTP != nil {
			before := site.Connectivity
			if err := applyConnectivity(site, in.Connectivity, in.AllowHTTP); err != nil {
				return err
			}
			if site.Connectivity != before {
				// The last probe took another path.
				site.Probe = nil
			}
		}
		if in.Description != nil {
			site.Description = *in.Description
		}
		if in.Region != nil {
			site.Region = *in.Region
		}
		site.UpdatedAt = now
		return nil
	})
	if err != nil {
		if isConflict(err) && in.Name != nil {
			return 0, nil, conflictError("name", "a site named %q already exists", *in.Name)
		}
		return 0, nil, err
	}
	view := viewSite(site)
	view.Warnings = s.policyWarnings(rq.ctx(), site, nil)
	// Also when the site was already off the connector path: a removal
	// that failed is retried by repeating the request, as its warning says
	// (Remove leaves alone queues that do not exist or that the stack made).
	touched := wasConnector || in.Connectivity != nil || in.Status != nil
	if touched && (!site.ThroughConnector() || site.Status != domain.StatusActive) {
		view.Warnings = append(view.Warnings, s.removeConnectorQueues(rq, site.ID)...)
	}
	return http.StatusOK, view, nil
}

// clearCredentials overwrites the site's stored credentials with empty ones
// (the secrets port has no delete): the workflow's MAAS connector then
// refuses to call MAAS for the site (SiteCredentialsError) and a probe asks
// for new credentials. A site that never had credentials is left alone.
func (s *server) clearCredentials(rq *request, id string) error {
	site, err := s.store.GetSite(rq.ctx(), id)
	if err != nil {
		return err
	}
	_, err = secrets.GetSiteCredentials(rq.ctx(), s.secrets, id)
	var nf *secrets.SecretNotFoundError
	if !site.CredentialsSet && errors.As(err, &nf) {
		return nil
	}
	if err := secrets.PutSiteCredentials(rq.ctx(), s.secrets, id, domain.SiteCredentials{}); err != nil {
		return err
	}
	rq.log.InfoContext(rq.ctx(), "site credentials cleared: the MAAS URL changed", logfield.SiteID, id)
	return nil
}

func (s *server) disableSite(rq *request) (int, any, error) {
	if dry, err := dryRun(rq); err != nil || dry {
		return s.planDisableSite(rq, err)
	}
	now := s.clock.Now().UTC()
	site, err := s.store.UpdateSite(rq.ctx(), rq.r.PathValue("id"), func(site *domain.Site) error {
		site.Status = domain.StatusDisabled
		site.UpdatedAt = now
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	view := viewSite(site)
	if site.ThroughConnector() {
		view.Warnings = s.removeConnectorQueues(rq, site.ID)
	}
	return http.StatusOK, view, nil
}

// credentialsRequest holds secrets in plain strings only until they are
// wrapped in domain.Secret; it is never logged or returned.
type credentialsRequest struct {
	MAASAPIKey  string `json:"maas_api_key"`
	BMCUsername string `json:"bmc_username"`
	BMCPassword string `json:"bmc_password"`
}

func (s *server) putCredentials(rq *request) (int, any, error) {
	var in credentialsRequest
	if err := decodeBody(rq, &in); err != nil {
		return 0, nil, err
	}
	id := rq.r.PathValue("id")
	cur, err := s.store.GetSite(rq.ctx(), id)
	if err != nil {
		return 0, nil, err
	}
	// A connector site may keep its MAAS key with its connector.
	if in.MAASAPIKey != "" || !cur.ThroughConnector() {
		if err := checkAPIKey("maas_api_key", in.MAASAPIKey); err != nil {
			return 0, nil, err
		}
	}
	if err := checkText("bmc_username", in.BMCUsername, true, 64); err != nil {
		return 0, nil, err
	}
	if in.BMCPassword == "" {
		return 0, nil, fieldError("bmc_password", "is required")
	}
	if len(in.BMCPassword) > 256 {
		return 0, nil, fieldError("bmc_password", "must be at most 256 bytes")
	}
	now := s.clock.Now().UTC()
	// A new key is unproven until the next probe. Drop the old probe before
	// the secret changes, so a failure between the two writes cannot leave
	// the site looking proven with the new key (this also answers 404 for
	// an unknown site before anything is written).
	if _, err := s.store.UpdateSite(rq.ctx(), id, func(site *domain.Site) error {
		site.Probe = nil
		site.UpdatedAt = now
		return nil
	}); err != nil {
		return 0, nil, err
	}
	creds := domain.SiteCredentials{
		MAASAPIKey:  domain.Secret(in.MAASAPIKey),
		BMCUsername: in.BMCUsername,
		BMCPassword: domain.Secret(in.BMCPassword),
	}
	if err := secrets.PutSiteCredentials(rq.ctx(), s.secrets, id, creds); err != nil {
		return 0, nil, err
	}
	site, err := s.store.UpdateSite(rq.ctx(), id, func(site *domain.Site) error {
		site.CredentialsSet = true
		// A probe that ran between the two writes may have used the old key.
		site.Probe = nil
		site.UpdatedAt = now
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, viewSite(site), nil
}

// checkAPIKey accepts MAAS's consumer_key:token_key:token_secret form. The
// message never repeats the value.
func checkAPIKey(field, key string) error {
	if key == "" {
		return fieldError(field, "is required")
	}
	parts := strings.Split(key, ":")
	if len(parts) != 3 || len(key) > 512 || strings.ContainsAny(key, " \t\r\n") {
		return fieldError(field, "must be a MAAS API key of the form consumer_key:token_key:token_secret")
	}
	for _, p := range parts {
		if p == "" {
			return fieldError(field, "must be a MAAS API key of the form consumer_key:token_key:token_secret")
		}
	}
	return nil
}

// probeView is the answer of POST …/probe.
type probeView struct {
	SiteID string `json:"site_id"`
	domain.ProbeResult
}

func (s *server) probeSite(rq *request) (int, any, error) {
	id := rq.r.PathValue("id")
	site, err := s.store.GetSite(rq.ctx(), id)
	if err != nil {
		return 0, nil, err
	}
	credentialsMissing := &StatusError{Status: http.StatusUnprocessableEntity, Code: CodeCredentialsUnset, Field: "maas_api_key",
		Message: "maas_api_key: the site has no credentials; POST them to /api/v1/admin/maas-sites/" + id + "/credentials first"}
	// A connector site's connector may hold the key itself.
	keyAtSite := site.ThroughConnector() && s.paths != nil
	if !site.CredentialsSet && !keyAtSite {
		return 0, nil, credentialsMissing
	}
	var creds domain.SiteCredentials
	if site.CredentialsSet {
		creds, err = secrets.GetSiteCredentials(rq.ctx(), s.secrets, id)
		var nf *secrets.SecretNotFoundError
		if errors.As(err, &nf) && !keyAtSite {
			return 0, nil, credentialsMissing
		}
		if err != nil && !errors.As(err, &nf) {
			return 0, nil, err
		}
	}

	scripts, err := s.profileScripts(rq.ctx(), id)
	if err != nil {
		return 0, nil, err
	}
	pctx, cancel := context.WithTimeout(rq.ctx(), s.cfg.ProbeTimeout)
	var res maas.ProbeResult
	var perr error
	var conn *domain.ConnectorStatus
	if s.paths != nil {
		res, conn, perr = s.paths.ProbeSite(pctx, site, creds.MAASAPIKey, scripts)
	} else {
		res, perr = s.prober.ProbeScripts(pctx, site.MAASURL, creds.MAASAPIKey, scripts)
	}
	cancel()
	now := s.clock.Now().UTC()
	result := domain.ProbeResult{Healthy: perr == nil && res.Problem() == "", CheckedAt: now, Connector: conn}
	if perr == nil {
		result.Version, result.Capabilities = res.Version, res.Capabilities
		result.User, result.IsAdmin = res.Username, res.IsAdmin
		result.MissingScripts = res.MissingScripts
		result.Error = res.Problem()
	} else {
		result.Error = scrub(perr.Error(), creds)
		rq.log.InfoContext(rq.ctx(), "site probe failed", logfield.SiteID, id, "error", result.Error)
	}
	if _, err := s.store.UpdateSite(rq.ctx(), id, func(site *domain.Site) error {
		site.Probe = &result
		site.UpdatedAt = now
		return nil
	}); err != nil {
		return 0, nil, err
	}
	return http.StatusOK, probeView{SiteID: id, ProbeResult: result}, nil
}

// profileScripts is every script the site's active profiles name, which
// the probe checks the region has: a region without one cannot
// commission the machines of that profile.
func (s *server) profileScripts(ctx context.Context, siteID string) ([]string, error) {
	profiles, err := s.store.ListProfiles(ctx, siteID)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, p := range profiles {
		if p.Status != domain.StatusActive {
			continue
		}
		for _, n := range p.Names() {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	return names, nil
}

// scrub removes the site's secrets from a text that will be stored and
// shown. Probe errors come from our MAAS client, whose messages never hold
// them; this is the second line of defence for transport errors.
func scrub(text string, c domain.SiteCredentials) string {
	olds := []string{c.MAASAPIKey.Reveal(), c.BMCPassword.Reveal()}
	olds = append(olds, strings.Split(c.MAASAPIKey.Reveal(), ":")...)
	for _, o := range olds {
		if len(o) >= 4 {
			text = strings.ReplaceAll(text, o, "[redacted]")
		}
	}
	return text
}

func checkStatus(status *string) error {
	if status != nil && *status != domain.StatusActive && *status != domain.StatusDisabled {
		return fieldError("status", "must be %q or %q", domain.StatusActive, domain.StatusDisabled)
	}
	return nil
}

func isConflict(err error) bool {
	var c *store.ItemConflictError
	return errors.As(err, &c)
}

func conflictError(field, format string, args ...any) *StatusError {
	e := fieldError(field, format, args...)
	e.Status, e.Code = http.StatusConflict, CodeConflict
	return e
}
