package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/logfield"
	"github.com/maasflow/maasflow/shared/store"
)

// Error codes of the node lifecycle.
const (
	// CodeWorkflowOpen: the node already has an open onboarding or
	// decommission (one open workflow per node).
	CodeWorkflowOpen = "workflow_open"
	// CodeNodeInUse: an allocation still holds the node (requirements runbook
	// node_in_use class).
	CodeNodeInUse = "node_in_use"
)

// decommissionRequest is the body of POST …/nodes/{id}/decommission.
type decommissionRequest struct {
	Mode   string `json:"mode"`
	Reason string `json:"reason"`
}

const maxReason = 500

func (s *server) decommissionNode(rq *request) (int, any, error) {
	if _, err := dryRun(rq); err != nil {
		return 0, nil, err
	}
	var in decommissionRequest
	if err := decodeBody(rq, &in); err != nil {
		return 0, nil, err
	}
	if in.Mode != domain.DecommissionReimage && in.Mode != domain.DecommissionFull {
		return 0, nil, fieldError("mode", "must be reimage or full (storage cleanup has its own endpoint, POST …/storage-cleanup)")
	}
	in.Reason = strings.TrimSpace(in.Reason)
	if err := checkText("reason", in.Reason, false, maxReason); err != nil {
		return 0, nil, err
	}
	return s.startDecommission(rq, rq.r.PathValue("id"), in.Mode, in.Reason)
}

// cleanupRequest is the optional body of POST …/nodes/{id}/storage-cleanup.
type cleanupRequest struct {
	Reason string `json:"reason"`
}

func (s *server) storageCleanup(rq *request) (int, any, error) {
	var in cleanupRequest
	b, err := readOptionalBody(rq)
	if err != nil {
		return 0, nil, err
	}
	if len(b) > 0 {
		if err := decodeStrict(b, &in, ""); err != nil {
			return 0, nil, err
		}
	}
	in.Reason = strings.TrimSpace(in.Reason)
	if err := checkText("reason", in.Reason, false, maxReason); err != nil {
		return 0, nil, err
	}
	return s.startDecommission(rq, rq.r.PathValue("id"), domain.DecommissionStorageCleanup, in.Reason)
}

// startDecommission creates the decommission (taking the node in the same
// write, on condition that no onboarding of the host is open) and starts
// its workflow; a workflow that does not start closes it as failed.
func (s *server) startDecommission(rq *request, nodeID, mode, reason string) (int, any, error) {
	ctx := rq.ctx()
	node, err := s.store.GetNode(ctx, nodeID)
	if err != nil {
		return 0, nil, err
	}
	rq.setTarget("node:" + node.ID + " decommission:(new " + mode + ")")
	switch node.Status {
	case domain.NodeRemoved:
		return 0, nil, &StatusError{Status: http.StatusConflict, Code: CodeInvalidRequest,
			Message: fmt.Sprintf("node %s is removed: a returning host is a new node identity", node.ID)}
	case domain.NodeDecommissioning, domain.NodeOnboarding:
		if err := s.refuseOpenWorkflow(ctx, node); err != nil {
			return 0, nil, err
		}
	}
	if node.MAASSystemID == "" {
		return 0, nil, &StatusError{Status: http.StatusConflict, Code: CodeInvalidRequest,
			Message: fmt.Sprintf("node %s has no MAAS machine to decommission", node.ID)}
	}
	if mode == domain.DecommissionReimage && node.OnboardingID == "" {
		return 0, nil, &StatusError{Status: http.StatusConflict, Code: CodeInvalidRequest, Field: "mode",
			Message: fmt.Sprintf("mode: node %s has no onboarding to take its profile from; decommission it fully and onboard it again", node.ID)}
	}
	site, err := s.store.GetSite(ctx, node.SiteID)
	if err != nil {
		return 0, nil, err
	}
	if err := siteReady(site); err != nil {
		return 0, nil, err
	}
	if s.lifecycle.decoms == nil {
		return 0, nil, &StatusError{Status: http.StatusServiceUnavailable, Code: CodeUnavailable, Message: errNoDecommissionStarter.Error()}
	}
	if rq.dryRun {
		return s.planDecommission(ctx, node, mode)
	}
	now := s.clock.Now().UTC()
	d := domain.Decommission{
		ID: s.newID(), NodeID: node.ID, SiteID: node.SiteID, Hostname: node.Hostname, Mode: mode, Reason: reason,
		Status: domain.DecommissionPending, Stage: domain.DecomStageStart, Attempt: 1, MAASSystemID: node.MAASSystemID,
		Erase:         domain.EraseEvidence{MAASEvents: []string{}, ScriptResults: []domain.EraseScriptResult{}},
		CorrelationID: rq.correlationID, CreatedBy: rq.actor, CreatedAt: now, UpdatedAt: now,
	}
	// The create carries the request's audit entry: name the decommission
	// before it.
	target := "node:" + node.ID + " decommission:" + d.ID
	if rq.decommissionTarget != nil {
		target = rq.decommissionTarget(d.ID)
	}
	rq.setTarget(target)
	if err := s.store.CreateDecommission(ctx, d); err != nil {
		return 0, nil, err
	}
	log := rq.log.With("decommission_id", d.ID, logfield.NodeID, node.ID, logfield.SiteID, node.SiteID, logfield.Hostname, node.Hostname)
	execID, err := s.lifecycle.decoms.StartDecommission(ctx, d)
	if err != nil {
		log.ErrorContext(ctx, "start decommission workflow", "error", err.Error())
		s.closeUnstartedDecommission(rq, d.ID)
		return 0, nil, &StatusError{Status: http.StatusServiceUnavailable, Code: CodeUnavailable,
			Message: fmt.Sprintf("the workflow service is unavailable; decommission %s was closed as failed, retry later", d.ID)}
	}
	if updated, err := s.store.UpdateDecommission(ctx, d.ID, func(cur *domain.Decommission) error {
		cur.ExecutionID = execID
		return nil
	}); err == nil {
		d = updated
	} else {
		log.WarnContext(ctx, "record execution id", "error", err.Error())
	}
	log.InfoContext(ctx, "decommission started", "mode", mode)
	rq.w.Header().Set("Location", "/api/v1/admin/decommissions/"+d.ID)
	return http.StatusAccepted, decommissionDetail{Decommission: normalizeErase(d), Timeline: []timelineEntry{},
		AllowedOperations: domain.DecommissionAllowedOperations(d.Status, d.Stage)}, nil
}

// refuseOpenWorkflow answers 409 workflow_open naming the node's open
// onboarding or decommission, if it has one.
func (s *server) refuseOpenWorkflow(ctx context.Context, node domain.Node) error {
	if id, ok, err := s.store.FindOpenDecommission(ctx, node.ID); err != nil {
		return err
	} else if ok {
		return openWorkflow(node.ID, "decommission", id)
	}
	if id, ok, err := s.store.FindOpenOnboarding(ctx, node.SiteID, node.Hostname); err != nil {
		return err
	} else if ok {
		return openWorkflow(node.ID, "onboarding", id)
	}
	return nil
}

func openWorkflow(nodeID, kind, id string) *StatusError {
	return &StatusError{Status: http.StatusConflict, Code: CodeWorkflowOpen,
		Message: fmt.Sprintf("node %s has open %s %s; one workflow per node at a time", nodeID, kind, id)}
}

// closeUnstartedDecommission closes a decommission whose workflow never
// started as failed, freeing the node.
func (s *server) closeUnstartedDecommission(rq *request, id string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(rq.ctx()), s.cfg.DetachedWriteTimeout)
	defer cancel()
	now := s.clock.Now().UTC()
	if _, err := s.store.UpdateDecommission(ctx, id, func(d *domain.Decommission) error {
		d.Status = domain.DecommissionFailed
		d.Error = &domain.Failure{Code: startFailure, Message: "the decommission workflow could not be started", Stage: domain.Stage(d.Stage)}
		d.CompletedAt = &now
		return nil
	}); err != nil {
		rq.log.ErrorContext(ctx, "close unstarted decommission", "error", err.Error())
	}
}

// decommissionDetail is GET /decommissions/{id}: the record with its erase
// evidence and its timeline.
type decommissionDetail struct {
	domain.Decommission
	SiteName string `json:"site_name,omitempty"`
	// AllowedOperations are the recovery operations the record accepts
	// now (domain.DecommissionAllowedOperations).
	AllowedOperations []domain.RecoveryOperation `json:"allowed_operations"`
	Timeline          []timelineEntry            `json:"timeline"`
}

func (s *server) getDecommission(rq *request) (int, any, error) {
	d, err := s.store.GetDecommission(rq.ctx(), rq.r.PathValue("id"))
	if err != nil {
		return 0, nil, err
	}
	rows, err := s.store.ListDecommissionEvents(rq.ctx(), d.ID)
	if err != nil {
		return 0, nil, err
	}
	slices.SortStableFunc(rows, func(a, b domain.DecommissionEvent) int { return a.Time.Compare(b.Time) })
	out := decommissionDetail{Decommission: normalizeErase(d), SiteName: s.namer(rq.ctx()).site(d.SiteID), Timeline: make([]timelineEntry, 0, len(rows)),
		AllowedOperations: domain.DecommissionAllowedOperations(d.Status, d.Stage)}
	stages := stagesAtEventTimes(len(rows), func(i int) stageRow {
		return stageRow{time: rows[i].Time, kind: rows[i].Kind, stage: string(rows[i].Stage)}
	})
	for i, ev := range rows {
		out.Timeline = append(out.Timeline, timelineEntry{Time: ev.Time, Attempt: ev.Attempt, Kind: string(ev.Kind), Stage: stages[i],
			Outcome: ev.Outcome, Detail: ev.Detail, Source: ev.Source, MAASEventID: ev.MAASEventID})
	}
	return http.StatusOK, out, nil
}

// normalizeErase gives the erase evidence's lists their empty form (the
// store drops empty lists).
func normalizeErase(d domain.Decommission) domain.Decommission {
	if d.Erase.MAASEvents == nil {
		d.Erase.MAASEvents = []string{}
	}
	if d.Erase.ScriptResults == nil {
		d.Erase.ScriptResults = []domain.EraseScriptResult{}
	}
	return d
}

type decommissionPage struct {
	Items      []namedDecommission `json:"items"`
	NextCursor string              `json:"next_cursor"`
}

func (s *server) listDecommissions(rq *request) (int, any, error) {
	q, err := queryParams(rq, "status", "site_id", "node_id", "limit", "cursor")
	if err != nil {
		return 0, nil, err
	}
	f := store.DecommissionFilter{Status: q["status"], SiteID: q["site_id"], NodeID: q["node_id"], Cursor: q["cursor"], Limit: defaultPageLimit}
	if f.Status != "" && !slices.Contains(onboardingStatuses, f.Status) {
		return 0, nil, fieldError("status", "must be one of %s", strings.Join(onboardingStatuses, ", "))
	}
	if f.Limit, err = pageLimit(q); err != nil {
		return 0, nil, err
	}
	page, err := s.store.ListDecommissions(rq.ctx(), f)
	if err != nil {
		return 0, nil, err
	}
	names := s.namer(rq.ctx())
	items := make([]namedDecommission, 0, len(page.Items))
	for _, d := range page.Items {
		items = append(items, namedDecommission{Decommission: normalizeErase(d), SiteName: names.site(d.SiteID)})
	}
	return http.StatusOK, decommissionPage{Items: items, NextCursor: page.NextCursor}, nil
}

func pageLimit(q map[string]string) (int, error) {
	l, ok := q["limit"]
	if !ok {
		return defaultPageLimit, nil
	}
	n, err := strconv.Atoi(l)
	if err != nil || n < 1 || n > maxPageLimit {
		return 0, fieldError("limit", "must be an integer between 1 and %d", maxPageLimit)
	}
	return n, nil
}

// classifyLifecycle maps the lifecycle store errors (classify's companion).
func classifyLifecycle(err error) *StatusError {
	var open *store.OpenWorkflowExistsError
	if errors.As(err, &open) {
		return openWorkflow(open.NodeID, open.Workflow, open.ID)
	}
	return nil
}

// tokenTTL is a reissued token's lifetime from the policy.
func tokenTTL(pol domain.EffectivePolicy) time.Duration {
	return time.Duration(pol.TokenTTLSeconds) * time.Second
}
