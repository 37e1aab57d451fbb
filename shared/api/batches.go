package api

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/logfield"
	"github.com/maasflow/maasflow/shared/store"
)

// batchRequest is POST /onboardings/batch: one site, profile and SKU for
// every row, and per row only the node's identity (requirements API boundary §4.3).
type batchRequest struct {
	SiteID    string            `json:"site_id"`
	ProfileID string            `json:"profile_id"`
	SKUID     string            `json:"sku_id"`
	Nodes     []json.RawMessage `json:"nodes"`
}

type batchNode struct {
	Hostname string `json:"hostname"`
	IPMIIP   string `json:"ipmi_ip"`
}

// batchItemView is one row of a batch as the API shows it: the request's
// node, the onboarding started for it and how that onboarding stands.
type batchItemView struct {
	Hostname     string          `json:"hostname"`
	IPMIIP       string          `json:"ipmi_ip"`
	OnboardingID string          `json:"onboarding_id"`
	Status       string          `json:"status"`
	Stage        string          `json:"stage,omitempty"`
	Attempt      int             `json:"attempt,omitempty"`
	Error        *domain.Failure `json:"error,omitempty"`
}

// batchView is a batch with its rows' current state and counts by status.
type batchView struct {
	ID          string          `json:"id"`
	SiteID      string          `json:"site_id"`
	SiteName    string          `json:"site_name,omitempty"`
	ProfileID   string          `json:"profile_id"`
	ProfileName string          `json:"profile_name,omitempty"`
	SKUID       string          `json:"sku_id"`
	Status      string          `json:"status"`
	Counts      map[string]int  `json:"counts"`
	Items       []batchItemView `json:"items"`
	CreatedBy   string          `json:"created_by"`
	CreatedAt   time.Time       `json:"created_at"`
	UpdatedAt   time.Time       `json:"updated_at"`
}

// BatchStarter starts a whole batch as one workflow execution whose
// children are the rows' onboardings; it returns the batch's execution id
// and, per onboarding id, its child's execution id. A starter without a
// batch workflow configured reports BatchStarterEnabled false and the rows
// start one by one.
type BatchStarter interface {
	BatchStarterEnabled() bool
	StartBatch(ctx context.Context, batchID string, onboardings []domain.Onboarding) (executionID string, children map[string]string, err error)
}

// createBatch validates every row before starting any: a malformed row or a
// host (or BMC address) listed twice is a 400 naming nodes[i].field and
// nothing starts. Then each row starts as its own onboarding; a row whose
// host cannot start (an open onboarding, an active node) is reported on its
// item and the others start.
func (s *server) createBatch(rq *request) (int, any, error) {
	var in batchRequest
	if err := decodeBody(rq, &in); err != nil {
		return 0, nil, err
	}
	for _, f := range []struct{ name, value string }{{"site_id", in.SiteID}, {"profile_id", in.ProfileID}, {"sku_id", in.SKUID}} {
		if err := checkText(f.name, f.value, true, 128); err != nil {
			return 0, nil, err
		}
	}
	nodes, err := batchNodes(in.Nodes)
	if err != nil {
		return 0, nil, err
	}
	ctx := rq.ctx()
	site, profile, sku, err := s.onboardingRefs(ctx, in.SiteID, in.ProfileID, in.SKUID)
	if err != nil {
		return 0, nil, err
	}
	view, err := s.startBatch(rq, site, profile, sku, nodes)
	if err != nil {
		return 0, nil, err
	}
	rq.w.Header().Set("Location", "/api/v1/admin/onboarding-batches/"+view.ID)
	return http.StatusAccepted, view, nil
}

// startBatch records a batch of nodes and starts their onboardings (the
// path every batch takes, a design's apply included).
func (s *server) startBatch(rq *request, site domain.Site, profile domain.Profile, sku domain.SKU, nodes []batchNode) (batchView, error) {
	ctx := rq.ctx()
	b := domain.Batch{ID: s.newID(), SiteID: site.ID, ProfileID: profile.ID, SKUID: sku.ID, CreatedBy: rq.actor,
		CreatedAt: s.clock.Now().UTC(), Items: make([]domain.BatchItem, len(nodes))}
	b.UpdatedAt = b.CreatedAt
	for i, n := range nodes {
		b.Items[i] = domain.BatchItem{Hostname: n.Hostname, IPMIIP: n.IPMIIP}
	}
	rq.setTarget("batch:" + b.ID)
	log := rq.log.With(logfield.SiteID, site.ID, "batch_id", b.ID)
	// The batch exists before its first onboarding, so every onboarding's
	// batch_id names a batch.
	if err := s.store.CreateBatch(ctx, b); err != nil {
		return batchView{}, err
	}
	statuses := make([]string, len(nodes))
	reject := func(i int, err error) {
		se := classify(err)
		if se.Status >= http.StatusInternalServerError {
			log.ErrorContext(ctx, "start batch row", "row", i, logfield.Hostname, nodes[i].Hostname, "error", err.Error())
		}
		b.Items[i].Error = &domain.Failure{Code: se.Code, Message: se.Message, Field: se.Field}
		statuses[i] = domain.BatchItemRejected
	}
	bs, whole := s.starter.(BatchStarter)
	whole = whole && bs.BatchStarterEnabled()
	var opened []domain.Onboarding
	var rows []int
	logs := map[string]*slog.Logger{}
	for i, n := range nodes {
		if !whole {
			o, err := s.startOnboarding(rq, site, profile, sku, n.Hostname, n.IPMIIP, b.ID)
			if err != nil {
				reject(i, err)
				continue
			}
			b.Items[i].OnboardingID = o.ID
			statuses[i] = string(o.Status)
			continue
		}
		o, olog, err := s.openOnboarding(rq, site, profile, sku, n.Hostname, n.IPMIIP, b.ID)
		if err != nil {
			reject(i, err)
			continue
		}
		opened, rows = append(opened, o), append(rows, i)
		logs[o.ID] = olog
	}
	if len(opened) > 0 {
		// One execution runs the batch: each row's onboarding is its child,
		// under the name and ARN a single start would give it.
		execID, children, err := bs.StartBatch(ctx, b.ID, opened)
		if err == nil {
			log.InfoContext(ctx, "batch execution started", "execution_arn", execID)
		}
		for k, o := range opened {
			i := rows[k]
			started, lerr := s.linkExecution(rq, logs[o.ID], o, children[o.ID], err)
			if lerr != nil {
				reject(i, lerr)
				continue
			}
			b.Items[i].OnboardingID = started.ID
			statuses[i] = string(started.Status)
		}
	}
	// What each row became is kept even if this write fails: the
	// onboardings carry the batch id.
	if _, err := s.store.UpdateBatch(context.WithoutCancel(ctx), b.ID, func(cur *domain.Batch) error {
		cur.Items = b.Items
		return nil
	}); err != nil {
		log.ErrorContext(ctx, "record batch rows", "error", err.Error())
	}
	view := batchView{ID: b.ID, SiteID: b.SiteID, ProfileID: b.ProfileID, SKUID: b.SKUID, Counts: map[string]int{},
		CreatedBy: b.CreatedBy, CreatedAt: b.CreatedAt, UpdatedAt: b.UpdatedAt}
	for i, it := range b.Items {
		view.Items = append(view.Items, batchItemView{Hostname: it.Hostname, IPMIIP: it.IPMIIP, OnboardingID: it.OnboardingID,
			Status: statuses[i], Error: it.Error})
		view.Counts[statuses[i]]++
	}
	view.Status = domain.BatchStatus(statuses)
	log.InfoContext(ctx, "batch started", "rows", len(nodes), "started", len(nodes)-view.Counts[domain.BatchItemRejected])
	return view, nil
}

// batchNodes decodes and checks the rows; errors name nodes[i].field.
func batchNodes(raw []json.RawMessage) ([]batchNode, error) {
	if len(raw) == 0 || len(raw) > domain.MaxBatchNodes {
		return nil, fieldError("nodes", "must hold 1 to %d nodes, not %d", domain.MaxBatchNodes, len(raw))
	}
	nodes := make([]batchNode, len(raw))
	hosts, bmcs := map[string]int{}, map[string]int{}
	for i, r := range raw {
		prefix := "nodes[" + strconv.Itoa(i) + "]"
		if err := decodeStrict(r, &nodes[i], prefix+"."); err != nil {
			return nil, err
		}
		host, err := normalizeHostname(prefix+".hostname", nodes[i].Hostname)
		if err != nil {
			return nil, err
		}
		if err := checkIPv4(prefix+".ipmi_ip", nodes[i].IPMIIP); err != nil {
			return nil, err
		}
		if j, dup := hosts[host]; dup {
			return nil, fieldError(prefix+".hostname", "%s is also nodes[%d]", host, j)
		}
		if j, dup := bmcs[nodes[i].IPMIIP]; dup {
			return nil, fieldError(prefix+".ipmi_ip", "%s is also the BMC of nodes[%d]", nodes[i].IPMIIP, j)
		}
		hosts[host], bmcs[nodes[i].IPMIIP] = i, i
		nodes[i].Hostname = host
	}
	return nodes, nil
}

func (s *server) getBatch(rq *request) (int, any, error) {
	b, err := s.store.GetBatch(rq.ctx(), rq.r.PathValue("id"))
	if err != nil {
		return 0, nil, err
	}
	v, err := s.batchView(rq.ctx(), b)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, v, nil
}

// Page sizes of GET /onboarding-batches.
const (
	defaultBatchLimit = 20
	maxBatchLimit     = 200
)

func (s *server) listBatches(rq *request) (int, any, error) {
	q, err := queryParams(rq, "limit")
	if err != nil {
		return 0, nil, err
	}
	limit := defaultBatchLimit
	if l, ok := q["limit"]; ok {
		if limit, err = strconv.Atoi(l); err != nil || limit < 1 || limit > maxBatchLimit {
			return 0, nil, fieldError("limit", "must be an integer between 1 and %d", maxBatchLimit)
		}
	}
	batches, err := s.store.ListBatches(rq.ctx(), limit)
	if err != nil {
		return 0, nil, err
	}
	views := make([]batchView, 0, len(batches))
	for _, b := range batches {
		v, err := s.batchView(rq.ctx(), b)
		if err != nil {
			return 0, nil, err
		}
		views = append(views, v)
	}
	return http.StatusOK, newList(views), nil
}

// batchOnboardings reads the onboardings a batch started, by row.
func (s *server) batchOnboardings(ctx context.Context, b domain.Batch) (map[string]domain.Onboarding, error) {
	out := make(map[string]domain.Onboarding, len(b.Items))
	for _, it := range b.Items {
		if it.OnboardingID == "" {
			continue
		}
		o, err := s.store.GetOnboarding(ctx, it.OnboardingID)
		if err != nil {
			return nil, fmt.Errorf("batch %s row %s: %w", b.ID, it.Hostname, err)
		}
		out[it.OnboardingID] = o
	}
	return out, nil
}

// batchView joins a batch with its onboardings' current state.
func (s *server) batchView(ctx context.Context, b domain.Batch) (batchView, error) {
	obs, err := s.batchOnboardings(ctx, b)
	if err != nil {
		return batchView{}, err
	}
	names := s.namer(ctx)
	v := batchView{ID: b.ID, SiteID: b.SiteID, SiteName: names.site(b.SiteID), ProfileID: b.ProfileID,
		ProfileName: names.profile(b.SiteID, b.ProfileID), SKUID: b.SKUID, Counts: map[string]int{},
		Items: make([]batchItemView, 0, len(b.Items)), CreatedBy: b.CreatedBy,
		CreatedAt: b.CreatedAt, UpdatedAt: b.UpdatedAt}
	statuses := make([]string, 0, len(b.Items))
	for _, it := range b.Items {
		item := batchItemView{Hostname: it.Hostname, IPMIIP: it.IPMIIP, OnboardingID: it.OnboardingID, Error: it.Error, Status: domain.BatchItemRejected}
		if o, ok := obs[it.OnboardingID]; ok {
			item.Status, item.Stage, item.Attempt, item.Error = string(o.Status), string(o.Stage), o.Attempt, o.Error
		}
		v.Items = append(v.Items, item)
		v.Counts[item.Status]++
		statuses = append(statuses, item.Status)
	}
	v.Status = domain.BatchStatus(statuses)
	return v, nil
}

// listBatchOnboardings is GET /onboardings?batch_id=: the batch's
// onboardings in row order, filtered by status, site_id and hostname when
// given, on one page (a batch holds at most MaxBatchNodes rows).
func (s *server) listBatchOnboardings(rq *request, batchID string, q map[string]string) (int, any, error) {
	for _, k := range []string{"limit", "cursor"} {
		if _, ok := q[k]; ok {
			return 0, nil, fieldError(k, "is not taken with batch_id: a batch is listed on one page")
		}
	}
	if err := checkText("batch_id", batchID, true, 128); err != nil {
		return 0, nil, err
	}
	host := ""
	if h := q["hostname"]; h != "" {
		var err error
		if host, err = normalizeHostname("hostname", h); err != nil {
			return 0, nil, err
		}
	}
	b, err := s.store.GetBatch(rq.ctx(), batchID)
	if isNotFound(err) {
		return 0, nil, referenceError("batch_id", "batch %q does not exist", batchID)
	}
	if err != nil {
		return 0, nil, err
	}
	obs, err := s.batchOnboardings(rq.ctx(), b)
	if err != nil {
		return 0, nil, err
	}
	var items []domain.Onboarding
	for _, it := range b.Items {
		o, ok := obs[it.OnboardingID]
		if !ok || (q["status"] != "" && string(o.Status) != q["status"]) || (q["site_id"] != "" && o.SiteID != q["site_id"]) || (host != "" && o.Hostname != host) {
			continue
		}
		items = append(items, o)
	}
	return http.StatusOK, onboardingPage{Items: s.namer(rq.ctx()).onboardings(items)}, nil
}

// BatchRepository keeps batch records.
type BatchRepository interface {
	CreateBatch(ctx context.Context, b domain.Batch) error
	GetBatch(ctx context.Context, id string) (domain.Batch, error)
	UpdateBatch(ctx context.Context, id string, mutate store.Mutator[domain.Batch]) (domain.Batch, error)
	ListBatches(ctx context.Context, limit int) ([]domain.Batch, error)
}
