package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/enroll"
	"github.com/maasflow/maasflow/shared/store"
)

var nodeStatuses = []string{domain.NodeOnboarding, domain.NodeActive, domain.NodeDecommissioning, domain.NodeRetired, domain.NodeRemoved}

type nodePage struct {
	Items      []namedNode `json:"items"`
	NextCursor string      `json:"next_cursor"`
}

func (s *server) listNodes(rq *request) (int, any, error) {
	q, err := queryParams(rq, "status", "site_id", "sku_id", "hostname", "limit", "cursor")
	if err != nil {
		return 0, nil, err
	}
	f := store.NodeFilter{Status: q["status"], SiteID: q["site_id"], SKUID: q["sku_id"], Cursor: q["cursor"]}
	if f.Status != "" && !slices.Contains(nodeStatuses, f.Status) {
		return 0, nil, fieldError("status", "must be one of %s", strings.Join(nodeStatuses, ", "))
	}
	if h := q["hostname"]; h != "" {
		if f.Hostname, err = normalizeHostname("hostname", h); err != nil {
			return 0, nil, err
		}
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

// workflowRef summarises the node's last onboarding or decommission.
type workflowRef struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Stage  string `json:"stage"`
	Mode   string `json:"mode,omitempty"`
}

// nodeDetail is GET /nodes/{id}: the record, its allocations and its last
// workflows.
type nodeDetail struct {
	domain.Node
	SiteName         string              `json:"site_name,omitempty"`
	LastOnboarding   *workflowRef        `json:"last_onboarding,omitempty"`
	LastDecommission *workflowRef        `json:"last_decommission,omitempty"`
	Allocations      []domain.Allocation `json:"allocations"`
}

func (s *server) getNode(rq *request) (int, any, error) {
	ctx := rq.ctx()
	n, err := s.store.GetNode(ctx, rq.r.PathValue("id"))
	if err != nil {
		return 0, nil, err
	}
	d := nodeDetail{Node: n, SiteName: s.namer(rq.ctx()).site(n.SiteID)}
	if n.OnboardingID != "" {
		if o, err := s.store.GetOnboarding(ctx, n.OnboardingID); err == nil {
			d.LastOnboarding = &workflowRef{ID: o.ID, Status: string(o.Status), Stage: string(o.Stage)}
		} else if !isNotFound(err) {
			return 0, nil, err
		}
	}
	page, err := s.store.ListDecommissions(ctx, store.DecommissionFilter{NodeID: n.ID, Limit: 1})
	if err != nil {
		return 0, nil, err
	}
	if len(page.Items) > 0 {
		x := page.Items[0]
		d.LastDecommission = &workflowRef{ID: x.ID, Status: string(x.Status), Stage: string(x.Stage), Mode: x.Mode}
	}
	if d.Allocations, err = s.allocationsOf(ctx, n.ID); err != nil {
		return 0, nil, err
	}
	return http.StatusOK, d, nil
}

// allocationsOf lists the node's allocations; none without a service.
func (s *server) allocationsOf(ctx context.Context, nodeID string) ([]domain.Allocation, error) {
	if s.lifecycle.allocations == nil {
		return []domain.Allocation{}, nil
	}
	items, err := s.lifecycle.allocations.List(ctx, nodeID)
	if err != nil {
		return nil, &StatusError{Status: http.StatusServiceUnavailable, Code: CodeUnavailable,
			Message: "the allocation service is unavailable; retry later"}
	}
	if items == nil {
		items = []domain.Allocation{}
	}
	return items, nil
}

// lifecycleConflict is the 409 of a lifecycle precondition (requirements runbook:
// the invalid_request class).
func lifecycleConflict(format string, args ...any) *StatusError {
	return &StatusError{Status: http.StatusConflict, Code: CodeInvalidRequest, Message: fmt.Sprintf(format, args...)}
}

// moveNode changes the node's status when it is still from; another status
// by then is a 409.
func (s *server) moveNode(ctx context.Context, id, from, to string) (domain.Node, error) {
	now := s.clock.Now().UTC()
	return s.store.UpdateNode(ctx, id, func(n *domain.Node) error {
		if n.Status != from {
			return lifecycleConflict("node %s is %s; only a %s node can become %s", n.ID, n.Status, from, to)
		}
		n.Status = to
		n.UpdatedAt = now
		return nil
	})
}

// retireNode makes an active node unschedulable (requirements runbook §3 Retire): refused
// with node_in_use while an allocation is active, releasing or
// release_failed.
func (s *server) retireNode(rq *request) (int, any, error) {
	ctx := rq.ctx()
	n, err := s.store.GetNode(ctx, rq.r.PathValue("id"))
	if err != nil {
		return 0, nil, err
	}
	if n.Status != domain.NodeActive {
		return 0, nil, lifecycleConflict("node %s is %s; only an active node can be retired", n.ID, n.Status)
	}
	allocs, err := s.allocationsOf(ctx, n.ID)
	if err != nil {
		return 0, nil, err
	}
	for _, a := range allocs {
		if domain.BlocksRetire(a.State) {
			return 0, nil, &StatusError{Status: http.StatusConflict, Code: CodeNodeInUse,
				Message: fmt.Sprintf("node %s is in use: allocation %s is %s", n.ID, a.ID, a.State)}
		}
	}
	n, err = s.moveNode(ctx, n.ID, domain.NodeActive, domain.NodeRetired)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, n, nil
}

// reactivateNode returns a retired node to service (requirements runbook §3 Reactivate).
func (s *server) reactivateNode(rq *request) (int, any, error) {
	n, err := s.moveNode(rq.ctx(), rq.r.PathValue("id"), domain.NodeRetired, domain.NodeActive)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, n, nil
}

// removeNode ends a retired node's identity (requirements runbook §3 Remove, terminal):
// refused unless it is retired with no allocation bound to it; every token
// of the node is revoked, so its agent can never enroll again.
func (s *server) removeNode(rq *request) (int, any, error) {
	if _, err := dryRun(rq); err != nil {
		return 0, nil, err
	}
	ctx := rq.ctx()
	n, err := s.store.GetNode(ctx, rq.r.PathValue("id"))
	if err != nil {
		return 0, nil, err
	}
	if n.Status != domain.NodeRetired {
		return 0, nil, lifecycleConflict("node %s is %s; only a retired node can be removed (retire it first)", n.ID, n.Status)
	}
	allocs, err := s.allocationsOf(ctx, n.ID)
	if err != nil {
		return 0, nil, err
	}
	for _, a := range allocs {
		if domain.HoldsNode(a.State) {
			return 0, nil, lifecycleConflict("node %s still has allocation %s (%s); a removed node may have none", n.ID, a.ID, a.State)
		}
	}
	if rq.dryRun {
		return http.StatusOK, dryRunPlan{DryRun: true, Action: "node.remove", Summary: "end the node's identity for good",
			Node:        &dryRunNode{ID: n.ID, Hostname: n.Hostname, Status: n.Status, StatusAfter: domain.NodeRemoved},
			Allocations: nonNilAllocations(allocs), RevokesTokens: true}, nil
	}
	if err := s.revokeAllTokens(ctx, n, ""); err != nil {
		return 0, nil, err
	}
	n, err = s.moveNode(ctx, n.ID, domain.NodeRetired, domain.NodeRemoved)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, n, nil
}

// revokeAllTokens revokes every token of the node but keep.
func (s *server) revokeAllTokens(ctx context.Context, n domain.Node, keep string) error {
	hashes, err := s.store.NodeTokenHashes(ctx, n)
	if err != nil {
		return err
	}
	if err := s.revokeRecoveryToken(ctx, n); err != nil {
		return err
	}
	now := s.clock.Now().UTC()
	for _, h := range hashes {
		if h == keep {
			continue
		}
		if err := s.store.RevokeEnrollmentToken(ctx, h, now); err != nil {
			return err
		}
	}
	return nil
}

// reissueResponse is the one answer that carries an enrollment token: the
// bundle of requirements runbook, returned once and never stored or logged.
type reissueResponse struct {
	NodeID    string          `json:"node_id"`
	ExpiresAt time.Time       `json:"expires_at"`
	Bundle    json.RawMessage `json:"bootstrap_bundle"`
}

// reissueBundle is requirements runbook §4: a new node-bound,
// single-use token and bundle for the same node; every earlier token of
// the node is revoked once the new one is stored, and the action is
// audited as a reissue. Refused for a removed node and while a workflow of
// the node is pending or running (its execution owns the node's token).
// While the node's onboarding is stopped (manual_intervention, or failed
// with the node never active) no execution owns it: the token is then also
// bound to that onboarding's current attempt and becomes the attempt's
// token, so an operator can deploy the server by hand with the bundle and
// adopt it (docs/recovery.md); its enrollment is recorded on the
// onboarding's timeline and does not make the node active by itself.
func (s *server) reissueBundle(rq *request) (int, any, error) {
	ctx := rq.ctx()
	n, err := s.store.GetNode(ctx, rq.r.PathValue("id"))
	if err != nil {
		return 0, nil, err
	}
	if n.Status == domain.NodeRemoved {
		return 0, nil, lifecycleConflict("node %s is removed: a returning host is a new node identity", n.ID)
	}
	run, err := s.stoppedOnboarding(ctx, n)
	if err != nil {
		return 0, nil, err
	}
	pol, err := s.nodePolicy(ctx, n)
	if err != nil {
		return 0, nil, err
	}
	token, err := enroll.NewToken()
	if err != nil {
		return 0, nil, fmt.Errorf("make token: %w", err)
	}
	apiURL := strings.TrimRight(s.lifecycle.bundles.APIURL, "/")
	if pol.EnrollmentURL != "" {
		apiURL = strings.TrimRight(pol.EnrollmentURL, "/")
	}
	keys := s.lifecycle.bundles.TaskSigningPubKeys
	if keys == nil {
		keys = []string{}
	}
	bundle, err := enroll.NewBundle(enroll.BundleInput{NodeID: n.ID, APIURL: apiURL, Token: token, TaskSigningPubKeys: keys,
		CABundlePEM: pol.CABundleOr(s.lifecycle.bundles.CABundle), Package: s.lifecycle.bundles.Package})
	if err != nil {
		// BundleError never quotes values.
		return 0, nil, lifecycleConflict("the node's policy cannot make a bundle: %s", err.Error())
	}
	now := s.clock.Now().UTC()
	hash := enroll.HashToken(token.Reveal())
	expires := now.Add(tokenTTL(pol))
	tok := domain.EnrollmentToken{Hash: hash, NodeID: n.ID, ExpiresAt: expires, CreatedAt: now}
	if run.ID != "" {
		tok.OnboardingID, tok.Attempt, tok.ForStoppedRun = run.ID, run.Attempt, true
	}
	if err := s.store.PutEnrollmentToken(ctx, tok); err != nil {
		return 0, nil, err
	}
	if err := s.store.AddNodeTokenRef(ctx, n.ID, hash); err != nil {
		return 0, nil, err
	}
	if run.ID != "" {
		if err := s.handTokenToStoppedRun(rq, run, hash, expires); err != nil {
			// The token never reached anyone: make sure it cannot be used.
			if rerr := s.store.RevokeEnrollmentToken(context.WithoutCancel(ctx), hash, now); rerr != nil {
				rq.log.ErrorContext(ctx, "revoke the token of a refused reissue", "error", rerr.Error())
			}
			return 0, nil, err
		}
	}
	if err := s.revokeAllTokens(ctx, n, hash); err != nil {
		return 0, nil, err
	}
	raw, err := revealedBundle(bundle)
	if err != nil {
		return 0, nil, err
	}
	rq.log.InfoContext(ctx, "bootstrap bundle reissued", "node_id", n.ID, "expires_at", expires)
	return http.StatusCreated, reissueResponse{NodeID: n.ID, ExpiresAt: expires, Bundle: raw}, nil
}

// stoppedOnboarding is the onboarding of n that a reissued token is bound
// to: the open one when it is stopped in manual_intervention, or the
// node's last one when it failed and the node never became active; the
// zero value when there is none. A pending or running workflow of the node
// refuses the reissue with 409 (its execution owns the token).
func (s *server) stoppedOnboarding(ctx context.Context, n domain.Node) (domain.Onboarding, error) {
	if id, ok, err := s.store.FindOpenDecommission(ctx, n.ID); err != nil {
		return domain.Onboarding{}, err
	} else if ok {
		return domain.Onboarding{}, openWorkflow(n.ID, "decommission", id)
	}
	if id, ok, err := s.store.FindOpenOnboarding(ctx, n.SiteID, n.Hostname); err != nil {
		return domain.Onboarding{}, err
	} else if ok {
		o, err := s.store.GetOnboarding(ctx, id)
		if err != nil {
			return domain.Onboarding{}, err
		}
		if o.Status != domain.OnboardingManualIntervention || o.NodeID != n.ID {
			return domain.Onboarding{}, openWorkflow(n.ID, "onboarding", id)
		}
		return o, nil
	}
	if n.OnboardingID == "" || n.Status != domain.NodeOnboarding {
		return domain.Onboarding{}, nil
	}
	o, err := s.store.GetOnboarding(ctx, n.OnboardingID)
	if isNotFound(err) {
		return domain.Onboarding{}, nil
	}
	if err != nil {
		return domain.Onboarding{}, err
	}
	if o.Status != domain.OnboardingFailed || o.NodeID != n.ID {
		return domain.Onboarding{}, nil
	}
	return o, nil
}

// handTokenToStoppedRun makes hash the enrollment token of the stopped
// onboarding's attempt, with the reissue on its timeline. 409 when the
// onboarding moved since it was read (an operation reopened it).
func (s *server) handTokenToStoppedRun(rq *request, run domain.Onboarding, hash string, expires time.Time) error {
	now := s.clock.Now().UTC()
	next, err := s.store.UpdateOnboarding(rq.ctx(), run.ID, func(o *domain.Onboarding) error {
		if o.Status != run.Status || o.Attempt != run.Attempt {
			return lifecycleConflict("onboarding %s moved to %s attempt %d while the bundle was reissued; ask again", o.ID, o.Status, o.Attempt)
		}
		o.EnrollmentTokenHash = hash
		o.UpdatedAt = now
		return nil
	})
	if err != nil {
		return err
	}
	return s.store.AppendOnboardingEvents(rq.ctx(), domain.TimelineEntry{OnboardingID: next.ID, Time: now, Attempt: next.Attempt,
		Kind: domain.TimelineNote, Stage: domain.StageWaitEnrollment, Outcome: "reissued", Source: "bootstrap-bundle",
		Detail: fmt.Sprintf("bootstrap bundle reissued by %s for node %s while the onboarding is %s: attempt %d's token now, expires %s; enrolling does not make the node active, adopt takes it over",
			rq.actor, next.NodeID, next.Status, next.Attempt, expires.Format(time.RFC3339))})
}

// revealedBundle is the bundle's JSON with the token in clear: the Bundle
// type redacts it everywhere else.
func revealedBundle(b enroll.Bundle) (json.RawMessage, error) {
	raw, err := json.Marshal(b)
	if err != nil {
		return nil, fmt.Errorf("encode bundle: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("encode bundle: %w", err)
	}
	m["GPUAAS_ENROLLMENT_TOKEN"] = b.EnrollmentToken.Reveal()
	return json.Marshal(m)
}

// nodePolicy is the node's effective policy: its site's, then the profile
// of its last onboarding.
func (s *server) nodePolicy(ctx context.Context, n domain.Node) (domain.EffectivePolicy, error) {
	site, err := s.store.GetSite(ctx, n.SiteID)
	if err != nil {
		return domain.EffectivePolicy{}, err
	}
	var profile domain.Policy
	if n.OnboardingID != "" {
		o, err := s.store.GetOnboarding(ctx, n.OnboardingID)
		if err != nil && !isNotFound(err) {
			return domain.EffectivePolicy{}, err
		}
		if err == nil {
			p, err := s.store.GetProfile(ctx, o.SiteID, o.ProfileID)
			if err != nil && !isNotFound(err) {
				return domain.EffectivePolicy{}, err
			}
			profile = p.Policy
		}
	}
	return domain.ResolvePolicy(site.Policy, profile), nil
}
