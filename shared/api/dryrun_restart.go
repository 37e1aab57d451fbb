package api

import (
	"context"
	"fmt"
	"net/http"

	"github.com/maasflow/maasflow/shared/domain"
)

// restartCleanRefusal is restart-clean's own refusal beyond the record's
// state: an active node is undone by a decommission, not a reset. The
// operation and its dry run share it, so both refuse alike.
// The node is returned when the onboarding has one (ok).
func (s *server) restartCleanRefusal(ctx context.Context, o domain.Onboarding) (node domain.Node, ok bool, err error) {
	if o.NodeID == "" {
		return node, false, nil
	}
	if node, err = s.store.GetNode(ctx, o.NodeID); err != nil {
		return node, false, err
	}
	if node.Status == domain.NodeActive {
		return node, true, &StatusError{Status: http.StatusConflict, Code: CodeConflict,
			Message: fmt.Sprintf("onboarding %s: node %s is active; restart-clean is not allowed for an active node, that is a decommission (POST /api/v1/admin/nodes/%s/decommission)", o.ID, node.ID, node.ID)}
	}
	return node, true, nil
}

// planRestartClean answers POST …/onboardings/{id}/restart-clean?dry_run=true
// (or err): every check of the operation, then what it would do, writing
// nothing.
func (s *server) planRestartClean(rq *request, err error) (int, any, error) {
	if err != nil {
		return 0, nil, err
	}
	if _, err := decodeCancel(rq); err != nil {
		return 0, nil, err
	}
	o, err := s.store.GetOnboarding(rq.ctx(), rq.r.PathValue("id"))
	if err != nil {
		return 0, nil, err
	}
	if !domain.Allows(o.Status, o.Stage, domain.OpRestartClean) {
		return 0, nil, notAllowed(o, domain.OpRestartClean)
	}
	node, hasNode, err := s.restartCleanRefusal(rq.ctx(), o)
	if err != nil {
		return 0, nil, err
	}
	plan := dryRunPlan{DryRun: true, Action: "onboarding." + string(domain.OpRestartClean),
		Allocations: []domain.Allocation{}, RevokesTokens: true}
	if hasNode {
		plan.Node = &dryRunNode{ID: node.ID, Hostname: node.Hostname, Status: node.Status, StatusAfter: domain.NodeOnboarding}
		if plan.Allocations, err = s.allocationsOf(rq.ctx(), node.ID); err != nil {
			return 0, nil, err
		}
		plan.Allocations = nonNilAllocations(plan.Allocations)
	}
	site, err := s.store.GetSite(rq.ctx(), o.SiteID)
	if err != nil {
		return 0, nil, err
	}
	var profile domain.Policy
	if p, err := s.store.GetProfile(rq.ctx(), o.SiteID, o.ProfileID); err == nil {
		profile = p.Policy
	} else if !isNotFound(err) {
		return 0, nil, err
	}
	plan.EraseMode = domain.ResolvePolicy(site.Policy, profile).EraseMode
	next := o.Attempt + 1
	if o.MAASSystemID == "" {
		plan.Summary = fmt.Sprintf("start attempt %d of %s from the reset: no MAAS machine is known, so discovery finds or creates it; every enrollment token of the node is revoked", next, o.Hostname)
	} else {
		plan.Machine = &dryRunMachine{SystemID: o.MAASSystemID, Release: true}
		plan.Summary = fmt.Sprintf("start attempt %d of %s from the reset: release MAAS machine %s with erase %q unless MAAS shows it Ready, wait for Ready, commission it afresh; every enrollment token of the node is revoked",
			next, o.Hostname, o.MAASSystemID, plan.EraseMode)
	}
	return http.StatusOK, plan, nil
}
