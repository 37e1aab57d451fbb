package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/reconcile"
	"github.com/maasflow/maasflow/shared/store"
)

// Reconciler runs reconcile runs, reads their drift and resolves it
// (*reconcile.Runner locally; on AWS the run is a state machine).
type Reconciler interface {
	// Trigger starts a run over siteID (empty: all sites) and returns it
	// once recorded; joined is true when a run under way is returned.
	Trigger(ctx context.Context, siteID string) (run domain.ReconcileRun, joined bool, err error)
	Status(ctx context.Context) (reconcile.Status, error)
	ListDrift(ctx context.Context, f store.DriftFilter) (store.DriftPage, error)
	Resolve(ctx context.Context, res reconcile.Resolution) (domain.DriftItem, error)
	OpenDrift(ctx context.Context, nodeID, kind string) (domain.DriftItem, error)
}

// reconcileRunRequest is the optional body of POST …/reconciliation/run.
// An absent site_id means every site; a present one must name a site.
type reconcileRunRequest struct {
	SiteID string `json:"site_id"`
}

// reconcileRunAnswer is the 202 of POST …/reconciliation/run.
type reconcileRunAnswer struct {
	domain.ReconcileRun
	// Joined is true when the request joined a run already under way.
	Joined bool `json:"joined"`
}

// resolveRequest is the body of POST …/drift/{node_id}/resolve.
type resolveRequest struct {
	Kind   string `json:"kind"`
	Action string `json:"action"`
	Reason string `json:"reason"`
}

const maxResolveReason = 500

var driftActions = []string{domain.DriftAcknowledge, domain.DriftAdopt, domain.DriftStart}

func (s *server) reconciler() (Reconciler, error) {
	if s.reconcile == nil {
		return nil, &StatusError{Status: http.StatusServiceUnavailable, Code: CodeUnavailable,
			Message: "reconciliation is not configured on this deployment"}
	}
	return s.reconcile, nil
}

// runReconcile starts a reconcile run, or joins the one under way (requirements API boundary
// §4.4 "trigger immediate reconcile").
func (s *server) runReconcile(rq *request) (int, any, error) {
	rc, err := s.reconciler()
	if err != nil {
		return 0, nil, err
	}
	var in reconcileRunRequest
	b, err := readOptionalBody(rq)
	if err != nil {
		return 0, nil, err
	}
	if len(b) > 0 {
		if err := decodeStrict(b, &in, ""); err != nil {
			return 0, nil, err
		}
	}
	if in.SiteID == "" && len(b) > 0 {
		// "" or null would read as "every site": a client that meant one
		// site and lost its id must not reconcile them all.
		if members, err := rawObject(b, "request body"); err == nil {
			if _, given := members["site_id"]; given {
				return 0, nil, fieldError("site_id", "must name a site; omit it to reconcile every site")
			}
		}
	}
	if in.SiteID != "" {
		site, err := s.store.GetSite(rq.ctx(), in.SiteID)
		var nf *store.ItemNotFoundError
		switch {
		case errors.As(err, &nf):
			return 0, nil, referenceError("site_id", "site %s does not exist", in.SiteID)
		case err != nil:
			return 0, nil, err
		case site.Status == domain.StatusDisabled:
			return 0, nil, referenceError("site_id", "site %s is disabled", in.SiteID)
		}
		rq.setTarget("reconciliation:site:" + in.SiteID)
	}
	run, joined, err := rc.Trigger(rq.ctx(), in.SiteID)
	if err != nil {
		return 0, nil, err
	}
	rq.log.InfoContext(rq.ctx(), "reconcile run requested", "run_id", run.ID, "joined", joined)
	return http.StatusAccepted, reconcileRunAnswer{ReconcileRun: run, Joined: joined}, nil
}

func (s *server) reconcileStatus(rq *request) (int, any, error) {
	rc, err := s.reconciler()
	if err != nil {
		return 0, nil, err
	}
	st, err := rc.Status(rq.ctx())
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, st, nil
}

func (s *server) listDrift(rq *request) (int, any, error) {
	rc, err := s.reconciler()
	if err != nil {
		return 0, nil, err
	}
	q, err := queryParams(rq, "site_id", "kind", "node_id", "state", "limit", "cursor")
	if err != nil {
		return 0, nil, err
	}
	f := store.DriftFilter{SiteID: q["site_id"], Kind: q["kind"], NodeID: q["node_id"], State: q["state"], Cursor: q["cursor"], Limit: defaultPageLimit}
	if f.Kind != "" && !domain.IsDriftKind(f.Kind) {
		return 0, nil, fieldError("kind", "must be one of %s", strings.Join(domain.DriftKinds(), ", "))
	}
	if f.State != "" && f.State != domain.DriftOpen && f.State != domain.DriftClosed {
		return 0, nil, fieldError("state", "must be open or closed")
	}
	if l, ok := q["limit"]; ok {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > maxPageLimit {
			return 0, nil, fieldError("limit", "must be an integer between 1 and %d", maxPageLimit)
		}
		f.Limit = n
	}
	page, err := rc.ListDrift(rq.ctx(), f)
	if err != nil {
		return 0, nil, err
	}
	if page.Items == nil {
		page.Items = []domain.DriftItem{}
	}
	return http.StatusOK, page, nil
}

// resolveDrift applies an operator's decision to a node's open drift of one
// kind. The audit target names the node, the kind and the action.
func (s *server) resolveDrift(rq *request) (int, any, error) {
	rc, err := s.reconciler()
	if err != nil {
		return 0, nil, err
	}
	var in resolveRequest
	if err := decodeBody(rq, &in); err != nil {
		return 0, nil, err
	}
	in.Reason = strings.TrimSpace(in.Reason)
	switch {
	case in.Kind == "":
		return 0, nil, fieldError("kind", "is required")
	case !domain.IsDriftKind(in.Kind):
		return 0, nil, fieldError("kind", "must be one of %s", strings.Join(domain.DriftKinds(), ", "))
	case !slices.Contains(driftActions, in.Action):
		return 0, nil, fieldError("action", "must be one of %s", strings.Join(driftActions, ", "))
	}
	if err := checkText("reason", in.Reason, true, maxResolveReason); err != nil {
		return 0, nil, err
	}
	nodeID := rq.r.PathValue("node_id")
	rq.setTarget(fmt.Sprintf("node:%s/drift:%s/%s", nodeID, in.Kind, in.Action))
	res := reconcile.Resolution{NodeID: nodeID, Kind: in.Kind, Action: in.Action, Reason: in.Reason, Actor: rq.actor}
	if in.Action == domain.DriftStart && reconcile.StartsDecommission(in.Kind) {
		started, err := s.startDriftDecommission(rq, rc, res)
		if err != nil {
			return 0, nil, err
		}
		res.Started = started
	}
	item, err := rc.Resolve(rq.ctx(), res)
	var none *reconcile.NoOpenDriftError
	var refused *reconcile.ResolveRefusedError
	switch {
	case errors.As(err, &none):
		return 0, nil, &StatusError{Status: http.StatusNotFound, Code: CodeNotFound, Message: none.Error()}
	case errors.As(err, &refused):
		return 0, nil, &StatusError{Status: http.StatusConflict, Code: CodeConflict, Field: "action", Message: refused.Error()}
	case err != nil:
		return 0, nil, err
	}
	rq.log.InfoContext(rq.ctx(), "drift resolved", "drift_id", item.ID, "kind", item.Kind, "action", in.Action, "state", item.State)
	return http.StatusOK, item, nil
}

// startDriftDecommission starts the full decommission of the node of an
// open drift item (the same path as POST …/nodes/{id}/decommission) and
// says what it started.
func (s *server) startDriftDecommission(rq *request, rc Reconciler, res reconcile.Resolution) (string, error) {
	var none *reconcile.NoOpenDriftError
	if _, err := rc.OpenDrift(rq.ctx(), res.NodeID, res.Kind); errors.As(err, &none) {
		return "", &StatusError{Status: http.StatusNotFound, Code: CodeNotFound, Message: none.Error()}
	} else if err != nil {
		return "", err
	}
	reason := "drift " + res.Kind + ": " + res.Reason
	if r := []rune(reason); len(r) > maxReason {
		reason = string(r[:maxReason])
	}
	rq.decommissionTarget = func(id string) string {
		return fmt.Sprintf("node:%s/drift:%s/start decommission:%s", res.NodeID, res.Kind, id)
	}
	_, body, err := s.startDecommission(rq, res.NodeID, domain.DecommissionFull, reason)
	if err != nil {
		return "", err
	}
	d, ok := body.(decommissionDetail)
	if !ok {
		return "", fmt.Errorf("unexpected decommission answer %T", body)
	}
	return "decommission " + d.ID + " (full)", nil
}
