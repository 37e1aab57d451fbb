package api

import (
	"encoding/json"
	"net/http"

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
	Name         string          `json:"name"`
	Architecture string          `json:"architecture"`
	DistroSeries string          `json:"distro_series"`
	HWEKernel    string          `json:"hwe_kernel"`
	Policy       json.RawMessage `json:"policy"`
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
		CreatedAt:    now,
		UpdatedAt:    now,
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
