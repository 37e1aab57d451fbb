package api

import (
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/maasflow/maasflow/shared/domain"
)

// profileView is a profile with the policy an onboarding under it runs with:
// defaults, then the site's policy, then the profile's (requirements design notes profile
// inheritance).
type profileView struct {
	domain.Profile
	EffectivePolicy domain.EffectivePolicy `json:"effective_policy"`
	// Warnings (PATCH only) say when the effective policy could not
	// onboard anything.
	Warnings []string `json:"warnings,omitempty"`
}

func viewProfile(site domain.Site, p domain.Profile) profileView {
	return profileView{Profile: p, EffectivePolicy: domain.ResolvePolicy(site.Policy, p.Policy)}
}

type profileCreateRequest struct {
	Name                 string          `json:"name"`
	Architecture         string          `json:"architecture"`
	DistroSeries         string          `json:"distro_series"`
	HWEKernel            string          `json:"hwe_kernel"`
	Policy               json.RawMessage `json:"policy"`
	CommissioningScripts []string        `json:"commissioning_scripts"`
	TestingScripts       []string        `json:"testing_scripts"`
}

// maxProfileScripts bounds each script list of a profile.
const maxProfileScripts = 32

// scriptNamePattern is a MAAS script name or tag as the commission form
// takes it: MAAS refuses a name shlex would quote (MAAS's ScriptForm),
// and the form splits its list on commas, so neither spaces, quotes nor
// commas; at most 255 characters, the Script model's limit.
var scriptNamePattern = regexp.MustCompile(`^[A-Za-z0-9_@%+=:./-]{1,255}$`)

// checkScriptNames validates a profile's script list: names only (a
// script's content is never accepted), no duplicates, not all digits
// (MAAS selects a script by id then), and "none" only alone in
// testing_scripts, where it means "run no tests".
func checkScriptNames(field string, names []string, noneAllowed bool) error {
	if len(names) > maxProfileScripts {
		return fieldError(field, "must list at most %d scripts", maxProfileScripts)
	}
	for i, n := range names {
		switch {
		case n == "none" && noneAllowed && len(names) == 1:
		case n == "none":
			return fieldError(field, "entry %d: none is reserved (testing_scripts [\"none\"] alone runs no tests)", i)
		case !scriptNamePattern.MatchString(n):
			return fieldError(field, "entry %d must be a MAAS script name or tag: 1-255 letters, digits and _@%%+=:./- (names only, never script content)", i)
		case isAllDigits(n):
			return fieldError(field, "entry %d must not be a number: MAAS reads a number as a script id", i)
		case slices.Contains(names[:i], n):
			return fieldError(field, "lists %s twice", n)
		}
	}
	return nil
}

func isAllDigits(s string) bool {
	return strings.Trim(s, "0123456789") == ""
}

// checkProfileScripts validates both lists of a profile; nil lists are
// left as they are.
func checkProfileScripts(commissioning, testing *[]string) error {
	if commissioning != nil {
		if err := checkScriptNames("commissioning_scripts", *commissioning, false); err != nil {
			return err
		}
	}
	if testing != nil {
		return checkScriptNames("testing_scripts", *testing, true)
	}
	return nil
}

func checkRuntimeTarget(arch, series, kernel *string) error {
	if arch != nil && !architecturePattern.MatchString(*arch) {
		return fieldError("architecture", "is required: a MAAS architecture such as amd64/generic")
	}
	if series != nil && !seriesPattern.MatchString(*series) {
		return fieldError("distro_series", "is required: a MAAS distro series such as jammy")
	}
	if kernel != nil && *kernel != "" && !seriesPattern.MatchString(*kernel) {
		return fieldError("hwe_kernel", "must be a MAAS kernel name such as ga-22.04 or hwe-22.04")
	}
	return nil
}

func (s *server) createProfile(rq *request) (int, any, error) {
	var in profileCreateRequest
	if err := decodeBody(rq, &in); err != nil {
		return 0, nil, err
	}
	if err := checkName("name", in.Name); err != nil {
		return 0, nil, err
	}
	if err := checkRuntimeTarget(&in.Architecture, &in.DistroSeries, &in.HWEKernel); err != nil {
		return 0, nil, err
	}
	if err := checkProfileScripts(&in.CommissioningScripts, &in.TestingScripts); err != nil {
		return 0, nil, err
	}
	policy, err := decodePolicy(in.Policy, "policy.")
	if err != nil {
		return 0, nil, err
	}
	if err := refuseProfileThrottle(in.Policy); err != nil {
		return 0, nil, err
	}
	siteID := rq.r.PathValue("id")
	site, err := s.store.GetSite(rq.ctx(), siteID)
	if err != nil {
		return 0, nil, err
	}
	now := s.clock.Now().UTC()
	p := domain.Profile{
		ID:           s.newID(),
		SiteID:       siteID,
		Name:         in.Name,
		Architecture: in.Architecture,
		DistroSeries: in.DistroSeries,
		HWEKernel:    in.HWEKernel,
		Status:       domain.StatusActive,
		Policy:       policy,
		ProfileScripts: domain.ProfileScripts{
			CommissioningScripts: in.CommissioningScripts, TestingScripts: in.TestingScripts,
		},
		CreatedAt: now,
		UpdatedAt: now,
	}
	rq.setTarget("site:" + siteID + "/profile:" + p.ID)
	if err := s.store.CreateProfile(rq.ctx(), p); err != nil {
		if isConflict(err) {
			return 0, nil, conflictError("name", "site %s already has a profile named %q", siteID, in.Name)
		}
		return 0, nil, err
	}
	rq.w.Header().Set("Location", "/api/v1/admin/maas-sites/"+siteID+"/profiles/"+p.ID)
	return http.StatusCreated, viewProfile(site, p), nil
}

func (s *server) listProfiles(rq *request) (int, any, error) {
	site, err := s.store.GetSite(rq.ctx(), rq.r.PathValue("id"))
	if err != nil {
		return 0, nil, err
	}
	all, err := s.store.ListProfiles(rq.ctx(), site.ID)
	if err != nil {
		return 0, nil, err
	}
	views := make([]profileView, 0, len(all))
	for _, p := range all {
		views = append(views, viewProfile(site, p))
	}
	return http.StatusOK, newList(views), nil
}

func (s *server) getProfile(rq *request) (int, any, error) {
	site, err := s.store.GetSite(rq.ctx(), rq.r.PathValue("id"))
	if err != nil {
		return 0, nil, err
	}
	p, err := s.store.GetProfile(rq.ctx(), site.ID, rq.r.PathValue("profile_id"))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, viewProfile(site, p), nil
}

type profilePatchRequest struct {
	Name         *string         `json:"name"`
	Architecture *string         `json:"architecture"`
	DistroSeries *string         `json:"distro_series"`
	HWEKernel    *string         `json:"hwe_kernel"`
	Status       *string         `json:"status"`
	Policy       json.RawMessage `json:"policy"`
	// A script list replaces the profile's; [] clears it.
	CommissioningScripts *[]string `json:"commissioning_scripts"`
	TestingScripts       *[]string `json:"testing_scripts"`
}

func (s *server) patchProfile(rq *request) (int, any, error) {
	var in profilePatchRequest
	if err := decodePatch(rq, &in); err != nil {
		return 0, nil, err
	}
	if in.Name != nil {
		if err := checkName("name", *in.Name); err != nil {
			return 0, nil, err
		}
	}
	if err := checkRuntimeTarget(in.Architecture, in.DistroSeries, in.HWEKernel); err != nil {
		return 0, nil, err
	}
	if err := checkStatus(in.Status); err != nil {
		return 0, nil, err
	}
	if err := checkProfileScripts(in.CommissioningScripts, in.TestingScripts); err != nil {
		return 0, nil, err
	}
	siteID, id := rq.r.PathValue("id"), rq.r.PathValue("profile_id")
	site, err := s.store.GetSite(rq.ctx(), siteID)
	if err != nil {
		return 0, nil, err
	}
	cur, err := s.store.GetProfile(rq.ctx(), siteID, id)
	if err != nil {
		return 0, nil, err
	}
	shared := patchFields{Name: in.Name, Status: in.Status, Policy: in.Policy}
	if err := shared.checkPolicy(cur.Policy); err != nil {
		return 0, nil, err
	}
	if err := refuseProfileThrottle(in.Policy); err != nil {
		return 0, nil, err
	}
	now := s.clock.Now().UTC()
	p, err := s.store.UpdateProfile(rq.ctx(), siteID, id, func(p *domain.Profile) error {
		if err := shared.apply(&p.Name, &p.Status, &p.Policy); err != nil {
			return err
		}
		if in.Architecture != nil {
			p.Architecture = *in.Architecture
		}
		if in.DistroSeries != nil {
			p.DistroSeries = *in.DistroSeries
		}
		if in.HWEKernel != nil {
			p.HWEKernel = *in.HWEKernel
		}
		if in.CommissioningScripts != nil {
			p.CommissioningScripts = *in.CommissioningScripts
		}
		if in.TestingScripts != nil {
			p.TestingScripts = *in.TestingScripts
		}
		p.UpdatedAt = now
		return nil
	})
	if err != nil {
		if isConflict(err) && in.Name != nil {
			return 0, nil, conflictError("name", "site %s already has a profile named %q", siteID, *in.Name)
		}
		return 0, nil, err
	}
	view := viewProfile(site, p)
	if p.Status == domain.StatusActive {
		view.Warnings = s.policyWarnings(rq.ctx(), site, &p)
	}
	return http.StatusOK, view, nil
}

func (s *server) disableProfile(rq *request) (int, any, error) {
	siteID := rq.r.PathValue("id")
	site, err := s.store.GetSite(rq.ctx(), siteID)
	if err != nil {
		return 0, nil, err
	}
	now := s.clock.Now().UTC()
	p, err := s.store.UpdateProfile(rq.ctx(), siteID, rq.r.PathValue("profile_id"), func(p *domain.Profile) error {
		p.Status = domain.StatusDisabled
		p.UpdatedAt = now
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, viewProfile(site, p), nil
}
