package api

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/store"
)

// maxAffectedScan bounds the node pages a deactivation proposal reads to
// count the SKU's nodes in service.
const maxAffectedScan = 100

// affectedNodes lists the SKU's nodes in service: the ids (at most
// domain.MaxAffectedListed) and how many there are.
func (s *server) affectedNodes(ctx context.Context, skuID string) ([]string, int, error) {
	var ids []string
	count := 0
	f := store.NodeFilter{SKUID: skuID, Limit: defaultPageLimit}
	for range maxAffectedScan {
		page, err := s.store.ListNodes(ctx, f)
		if err != nil {
			return nil, 0, err
		}
		for _, n := range page.Items {
			if !domain.InService(n.Status) {
				continue
			}
			count++
			if len(ids) < domain.MaxAffectedListed {
				ids = append(ids, n.ID)
			}
		}
		if page.NextCursor == "" {
			break
		}
		f.Cursor = page.NextCursor
	}
	return ids, count, nil
}

// proposeActive makes the proposal a PATCH of active becomes, checked
// against the SKU as it is now; false when active does not change.
func (s *server) proposeActive(rq *request, id string, in skuPatchRequest) (*domain.SKUProposal, bool, error) {
	cur, err := s.store.GetSKU(rq.ctx(), id)
	if err != nil {
		return nil, false, err
	}
	if in.Active == nil || *in.Active == cur.Active {
		return nil, false, nil
	}
	p := &domain.SKUProposal{ID: s.newID(), Active: *in.Active, ProposedBy: rq.actor, ProposedAt: s.clock.Now().UTC()}
	if in.Reason != nil {
		p.Reason = *in.Reason
	}
	if in.RollbackNote != nil {
		p.RollbackNote = *in.RollbackNote
	}
	if !p.Active {
		if p.AffectedNodes, p.AffectedCount, err = s.affectedNodes(rq.ctx(), id); err != nil {
			return nil, false, err
		}
		if p.AffectedCount > 0 && strings.TrimSpace(p.RollbackNote) == "" {
			e := fieldError("rollback_note", "is required to deactivate SKU %q: %d node(s) in service use it (%s)",
				id, p.AffectedCount, strings.Join(p.AffectedNodes, ", "))
			e.Status = http.StatusUnprocessableEntity
			return nil, false, e
		}
	}
	return p, true, nil
}

// skuDecisionRequest names the proposal an admin approves or rejects, so
// that the decision is about the proposal the admin reviewed.
type skuDecisionRequest struct {
	ProposalID string `json:"proposal_id"`
	Reason     string `json:"reason"`
}

func (s *server) approveSKU(rq *request) (int, any, error) {
	return s.decideSKU(rq, domain.ProposalApproved)
}
func (s *server) rejectSKU(rq *request) (int, any, error) {
	return s.decideSKU(rq, domain.ProposalRejected)
}

// decideSKU approves or rejects the SKU's pending proposal. Only a
// different admin than the proposer approves; anyone may reject (the
// proposer withdrawing theirs).
func (s *server) decideSKU(rq *request, outcome string) (int, any, error) {
	var in skuDecisionRequest
	if err := decodeBody(rq, &in); err != nil {
		return 0, nil, err
	}
	if strings.TrimSpace(in.ProposalID) == "" {
		return 0, nil, fieldError("proposal_id", "is required: the id of the proposal being decided (GET the SKU)")
	}
	if err := checkText("reason", in.Reason, false, 1024); err != nil {
		return 0, nil, err
	}
	id := rq.r.PathValue("id")
	now := s.clock.Now().UTC()
	sku, err := s.store.UpdateSKU(rq.ctx(), id, func(sku *domain.SKU) error {
		p := sku.Proposal
		switch {
		case p == nil:
			return &StatusError{Status: http.StatusConflict, Code: CodeConflict, Field: "proposal_id",
				Message: fmt.Sprintf("proposal_id: SKU %q has no pending proposal", id)}
		case p.ID != in.ProposalID:
			return &StatusError{Status: http.StatusConflict, Code: CodeConflict, Field: "proposal_id",
				Message: fmt.Sprintf("proposal_id: the pending proposal of SKU %q is %s", id, p.ID)}
		case outcome == domain.ProposalApproved && p.ProposedBy == rq.actor:
			return &StatusError{Status: http.StatusForbidden, Code: CodeForbidden,
				Message: "a proposal needs a second admin: its proposer cannot approve it"}
		}
		if outcome == domain.ProposalApproved {
			sku.Active = p.Active
		}
		sku.LastDecision = &domain.SKUDecision{SKUProposal: *p, Outcome: outcome, DecidedBy: rq.actor, DecidedAt: now}
		sku.Proposal = nil
		sku.UpdatedAt = now
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, sku, nil
}

// listSKUNodes is GET /skus/{id}/nodes: the SKU's nodes, paged like
// GET /nodes (status filter, limit, cursor).
func (s *server) listSKUNodes(rq *request) (int, any, error) {
	q, err := queryParams(rq, "status", "limit", "cursor")
	if err != nil {
		return 0, nil, err
	}
	id := rq.r.PathValue("id")
	if _, err := s.store.GetSKU(rq.ctx(), id); err != nil {
		return 0, nil, err
	}
	f := store.NodeFilter{SKUID: id, Status: q["status"], Cursor: q["cursor"]}
	if f.Status != "" && !slices.Contains(nodeStatuses, f.Status) {
		return 0, nil, fieldError("status", "must be one of %s", strings.Join(nodeStatuses, ", "))
	}
	if f.Limit, err = pageLimit(q); err != nil {
		return 0, nil, err
	}
	page, err := s.store.ListNodes(rq.ctx(), f)
	if err != nil {
		return 0, nil, err
	}
	names := s.namer(rq.ctx())
	items := make([]namedNode, 0, len(page.Items))
	for _, n := range page.Items {
		items = append(items, namedNode{Node: n, SiteName: names.site(n.SiteID)})
	}
	return http.StatusOK, nodePage{Items: items, NextCursor: page.NextCursor}, nil
}
