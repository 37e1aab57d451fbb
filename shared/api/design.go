package api

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/maasflow/maasflow/shared/design"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/store"
)

// DesignRepository keeps each site's applied design.
type DesignRepository interface {
	GetSiteDesign(ctx context.Context, siteID string) (store.SiteDesign, error)
	PutSiteDesign(ctx context.Context, d store.SiteDesign, prev int64) (store.SiteDesign, error)
	// GetEnrollmentToken identifies a node before it enrolls (introspection).
	GetEnrollmentToken(ctx context.Context, hash string) (domain.EnrollmentToken, error)
}

// CodeInvalidDesign: a design with problems (422); the message lists every
// one, each naming document, object and field.
const CodeInvalidDesign = "invalid_design"

// maxDesignDocuments bounds the documents of one request.
const maxDesignDocuments = 32

// designRequest is the body of a plan or an apply: the documents in
// precedence order (the first is the base, each later one takes
// precedence), and for an apply the hash of the plan it performs and the
// onboarding profile and SKU its new hosts are onboarded with.
type designRequest struct {
	Documents []design.Document `json:"documents"`
	PlanHash  string            `json:"plan_hash"`
	Onboard   *designOnboard    `json:"onboard"`
}

type designOnboard struct {
	ProfileID string `json:"profile_id"`
	SKUID     string `json:"sku_id"`
}

// designPlanView is a plan as the API shows it, with its lines rendered.
type designPlanView struct {
	design.Plan
	Lines       []string `json:"lines"`
	BaseVersion int64    `json:"base_version"`
}

// designApplyView is what an apply did.
type designApplyView struct {
	Plan    designPlanView `json:"plan"`
	Version int64          `json:"version"`
	Batch   *batchView     `json:"batch,omitempty"`
}

// planDesign composes, validates and plans the request's documents
// against the site's stored design.
func (s *server) planDesign(rq *request, in designRequest) (store.SiteDesign, design.Design, designPlanView, error) {
	if len(in.Documents) == 0 || len(in.Documents) > maxDesignDocuments {
		return store.SiteDesign{}, design.Design{}, designPlanView{}, fieldError("documents", "must hold 1 to %d documents", maxDesignDocuments)
	}
	for i := range in.Documents {
		if in.Documents[i].Name == "" {
			in.Documents[i].Name = "documents[" + strconv.Itoa(i) + "]"
		}
	}
	siteID := rq.r.PathValue("id")
	if _, err := s.store.GetSite(rq.ctx(), siteID); err != nil {
		return store.SiteDesign{}, design.Design{}, designPlanView{}, err
	}
	next, err := design.Compose(in.Documents...)
	if err == nil {
		err = design.Validate(next)
	}
	if err != nil {
		return store.SiteDesign{}, design.Design{}, designPlanView{}, designError(err)
	}
	cur, err := s.store.GetSiteDesign(rq.ctx(), siteID)
	if err != nil && !errors.As(err, new(*store.ItemNotFoundError)) {
		return store.SiteDesign{}, design.Design{}, designPlanView{}, err
	}
	cur.SiteID = siteID
	plan, err := design.MakePlan(cur.Design, next)
	if err != nil {
		return store.SiteDesign{}, design.Design{}, designPlanView{}, err
	}
	// The design owns the RoCE rows of the hosts it names: the plan shows
	// the rows the apply changes, and its hash covers them.
	rows, err := s.store.ListRoCEAssignments(rq.ctx(), siteID, "")
	if err != nil {
		return store.SiteDesign{}, design.Design{}, designPlanView{}, err
	}
	plan.AddRoCE(rows, next)
	return cur, next, designPlanView{Plan: plan, Lines: plan.Lines(), BaseVersion: cur.Version}, nil
}

func designError(err error) error {
	var inv *design.InvalidDesignError
	if !errors.As(err, &inv) {
		return err
	}
	lines := make([]string, len(inv.Problems))
	for i, p := range inv.Problems {
		lines[i] = p.String()
	}
	return &StatusError{Status: http.StatusUnprocessableEntity, Code: CodeInvalidDesign, Field: "documents",
		Message: "documents: the design has " + strconv.Itoa(len(lines)) + " problem(s): " + strings.Join(lines, "; ")}
}

// dryRunDesign answers the plan an apply of the same documents would
// perform; nothing is stored.
func (s *server) dryRunDesign(rq *request) (int, any, error) {
	var in designRequest
	if err := decodeBody(rq, &in); err != nil {
		return 0, nil, err
	}
	if in.PlanHash != "" || in.Onboard != nil {
		return 0, nil, fieldError("plan_hash", "belongs to an apply, not a plan")
	}
	_, _, view, err := s.planDesign(rq, in)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, view, nil
}

// applyDesign performs exactly the plan named by plan_hash: when the
// documents or the stored design changed since it was shown, the hash no
// longer matches and nothing is done. New hosts are onboarded through the
// batch path with the request's onboarding profile and SKU.
func (s *server) applyDesign(rq *request) (int, any, error) {
	var in designRequest
	if err := decodeBody(rq, &in); err != nil {
		return 0, nil, err
	}
	if err := checkText("plan_hash", in.PlanHash, true, 64); err != nil {
		return 0, nil, err
	}
	cur, next, view, err := s.planDesign(rq, in)
	if err != nil {
		return 0, nil, err
	}
	if view.Hash != in.PlanHash {
		return 0, nil, &StatusError{Status: http.StatusConflict, Code: CodeConflict, Field: "plan_hash",
			Message: "plan_hash: the plan changed since it was shown (the documents or the stored design differ); plan again"}
	}
	var refs *onboardRefs
	if len(view.Onboard) > 0 {
		if in.Onboard == nil {
			return 0, nil, fieldError("onboard", "is required: the plan onboards %d host(s) (profile_id and sku_id)", len(view.Onboard))
		}
		r, err := s.designOnboardRefs(rq, in.Onboard)
		if err != nil {
			return 0, nil, err
		}
		refs = &r
	}
	out := designApplyView{Plan: view, Version: cur.Version}
	if !view.Empty() {
		put, err := s.store.PutSiteDesign(rq.ctx(), store.SiteDesign{SiteID: cur.SiteID, Hash: design.Hash(next), Design: next, UpdatedBy: rq.actor}, cur.Version)
		if err != nil {
			return 0, nil, err
		}
		out.Version = put.Version
	}
	if refs != nil {
		byHost := map[string]design.NodeAssignment{}
		for _, n := range next.Nodes {
			byHost[n.Hostname] = n
		}
		nodes := make([]batchNode, 0, len(view.Onboard))
		for _, h := range view.Onboard {
			nodes = append(nodes, batchNode{Hostname: h, IPMIIP: byHost[h].BMCAddress})
		}
		b, err := s.startBatch(rq, refs.site, refs.profile, refs.sku, nodes)
		if err != nil {
			return 0, nil, err
		}
		out.Batch = &b
	}
	return http.StatusOK, out, nil
}

type onboardRefs struct {
	site    domain.Site
	profile domain.Profile
	sku     domain.SKU
}

func (s *server) designOnboardRefs(rq *request, o *designOnboard) (onboardRefs, error) {
	for _, f := range []struct{ name, value string }{{"onboard.profile_id", o.ProfileID}, {"onboard.sku_id", o.SKUID}} {
		if err := checkText(f.name, f.value, true, 128); err != nil {
			return onboardRefs{}, err
		}
	}
	site, profile, sku, err := s.onboardingRefs(rq.ctx(), rq.r.PathValue("id"), o.ProfileID, o.SKUID)
	return onboardRefs{site, profile, sku}, err
}

// getDesign answers the site's applied design.
func (s *server) getDesign(rq *request) (int, any, error) {
	d, err := s.store.GetSiteDesign(rq.ctx(), rq.r.PathValue("id"))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, d, nil
}

// getDesignNode answers one node's effective design with the source of
// every value.
func (s *server) getDesignNode(rq *request) (int, any, error) {
	host, err := normalizeHostname("hostname", rq.r.PathValue("hostname"))
	if err != nil {
		return 0, nil, err
	}
	d, err := s.store.GetSiteDesign(rq.ctx(), rq.r.PathValue("id"))
	if err != nil {
		return 0, nil, err
	}
	return effectiveNode(d.Design, host)
}

func effectiveNode(d design.Design, host string) (int, any, error) {
	e, err := design.EffectiveNode(d, host)
	var missing *design.NodeNotInDesignError
	if errors.As(err, &missing) {
		return 0, nil, &StatusError{Status: http.StatusNotFound, Code: CodeNotFound, Field: "hostname", Message: "hostname: " + missing.Error()}
	}
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, e, nil
}
