package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/logfield"
	"github.com/maasflow/maasflow/shared/store"
)

// onboardingRequest is exactly the operator input of requirements readiness §3.1: policy
// comes from the site and profile, never from the request.
type onboardingRequest struct {
	SiteID    string `json:"site_id"`
	ProfileID string `json:"profile_id"`
	SKUID     string `json:"sku_id"`
	Hostname  string `json:"hostname"`
	IPMIIP    string `json:"ipmi_ip"`
}

// startFailure is the Failure recorded on an onboarding whose workflow could
// not be started.
const startFailure = "WorkflowStartError"

func (s *server) createOnboarding(rq *request) (int, any, error) {
	var in onboardingRequest
	if err := decodeBody(rq, &in); err != nil {
		return 0, nil, err
	}
	for _, f := range []struct{ name, value string }{{"site_id", in.SiteID}, {"profile_id", in.ProfileID}, {"sku_id", in.SKUID}} {
		if err := checkText(f.name, f.value, true, 128); err != nil {
			return 0, nil, err
		}
	}
	host, err := normalizeHostname("hostname", in.Hostname)
	if err != nil {
		return 0, nil, err
	}
	if err := checkIPv4("ipmi_ip", in.IPMIIP); err != nil {
		return 0, nil, err
	}
	rq.setTarget("onboarding:(new) site:" + in.SiteID + " host:" + host)
	ctx := rq.ctx()

	site, profile, sku, err := s.onboardingRefs(ctx, in.SiteID, in.ProfileID, in.SKUID)
	if err != nil {
		return 0, nil, err
	}
	o, err := s.startOnboarding(rq, site, profile, sku, host, in.IPMIIP, "")
	if err != nil {
		return 0, nil, err
	}
	rq.w.Header().Set("Location", "/api/v1/admin/onboardings/"+o.ID)
	return http.StatusAccepted, o, nil
}

// onboardingRefs reads the site, profile and SKU an onboarding names and
// checks they are active and the site is ready; errors name the field.
func (s *server) onboardingRefs(ctx context.Context, siteID, profileID, skuID string) (domain.Site, domain.Profile, domain.SKU, error) {
	var (
		profile domain.Profile
		sku     domain.SKU
	)
	site, err := s.store.GetSite(ctx, siteID)
	switch {
	case isNotFound(err):
		return site, profile, sku, referenceError("site_id", "site %q does not exist", siteID)
	case err != nil:
		return site, profile, sku, err
	case site.Status != domain.StatusActive:
		return site, profile, sku, referenceError("site_id", "site %q is %s", siteID, site.Status)
	}
	profile, err = s.store.GetProfile(ctx, siteID, profileID)
	switch {
	case isNotFound(err):
		return site, profile, sku, referenceError("profile_id", "profile %q does not exist on site %q", profileID, siteID)
	case err != nil:
		return site, profile, sku, err
	case profile.Status != domain.StatusActive:
		return site, profile, sku, referenceError("profile_id", "profile %q is %s", profileID, profile.Status)
	}
	sku, err = s.store.GetSKU(ctx, skuID)
	switch {
	case isNotFound(err):
		return site, profile, sku, referenceError("sku_id", "SKU %q is not in the catalog", skuID)
	case err != nil:
		return site, profile, sku, err
	case !sku.Active:
		return site, profile, sku, referenceError("sku_id", "SKU %q is not active", skuID)
	case sku.Region != "" && sku.Region != site.Region:
		return site, profile, sku, referenceError("sku_id", "SKU %q is for region %q; site %q is in region %q", skuID, sku.Region, siteID, site.Region)
	}
	if err := siteReady(site); err != nil {
		return site, profile, sku, err
	}
	return site, profile, sku, s.checkBootstrapPolicy(site, profile)
}

// startOnboarding creates the onboarding record for host (taking the host
// lock and linking its node) and starts its workflow. A failed start closes
// the record, so nothing is left half-started.
func (s *server) startOnboarding(rq *request, site domain.Site, profile domain.Profile, sku domain.SKU, host, ipmiIP, batchID string) (domain.Onboarding, error) {
	o, log, err := s.openOnboarding(rq, site, profile, sku, host, ipmiIP, batchID)
	if err != nil {
		return domain.Onboarding{}, err
	}
	execID, err := s.starter.StartOnboarding(rq.ctx(), o)
	return s.linkExecution(rq, log, o, execID, err)
}

// openOnboarding creates the onboarding record for host, taking the host
// lock, with its node's link to it and the id its workflow's execution
// will have, in one write; the caller starts the workflow and hands the
// result to linkExecution.
func (s *server) openOnboarding(rq *request, site domain.Site, profile domain.Profile, sku domain.SKU, host, ipmiIP, batchID string) (domain.Onboarding, *slog.Logger, error) {
	ctx := rq.ctx()
	// The create below takes the server's locks in its transaction; this
	// read only names the holder of the BMC address when it is another
	// host's open onboarding. (Under its own host name the create reports
	// the host name.)
	if holder, found, err := s.store.FindServerLock(ctx, site.ID, store.LockBMC, ipmiIP); err != nil {
		return domain.Onboarding{}, nil, err
	} else if holderHost := s.holderHost(ctx, holder); found && holderHost != host {
		return domain.Onboarding{}, nil, &store.OpenOnboardingExistsError{SiteID: site.ID, OnboardingID: holder, Identity: store.LockBMC, Value: ipmiIP, Hostname: holderHost}
	}
	now := s.clock.Now().UTC()
	o := domain.Onboarding{
		ID:            s.newID(),
		SiteID:        site.ID,
		ProfileID:     profile.ID,
		SKUID:         sku.ID,
		Hostname:      host,
		IPMIIP:        ipmiIP,
		BatchID:       batchID,
		Status:        domain.OnboardingPending,
		Stage:         domain.StageValidate,
		Attempt:       1,
		CorrelationID: rq.correlationID,
		CreatedBy:     rq.actor,
		CreatedAt:     now,
		UpdatedAt:     now,
	}
	// Execution names are deterministic (one per attempt and run), so the
	// record carries its execution's id from the start: a running workflow
	// is never without its link.
	o.ExecutionID = s.starter.OnboardingExecutionID(o)
	if batchID == "" {
		// The audit names the onboarding, even when its start fails.
		rq.setTarget("onboarding:" + o.ID)
	}
	o, _, err := s.store.CreateOnboardingOnNode(ctx, o, func(n domain.Node, found bool) (domain.Node, error) {
		// A removed node is terminal: its host comes back as a new node
		// identity (new id, new tokens), and the old id stays removed.
		if !found || n.Status == domain.NodeRemoved {
			return domain.Node{ID: s.newID(), SiteID: site.ID, Hostname: host, SKUID: sku.ID, Status: domain.NodeOnboarding,
				OnboardingID: o.ID, CreatedAt: now, UpdatedAt: now}, nil
		}
		// An active or retired node is not onboarded again through here:
		// reimaging an active node is a decommission, and a retired node
		// is reactivated or removed first.
		if n.Status != domain.NodeOnboarding {
			return domain.Node{}, &StatusError{Status: http.StatusConflict, Code: CodeConflict, Field: "hostname",
				Message: fmt.Sprintf("hostname: node %s for %s is %s and cannot be onboarded again", n.ID, host, n.Status)}
		}
		n.OnboardingID = o.ID
		n.SKUID = sku.ID
		return n, nil
	})
	if err != nil {
		return domain.Onboarding{}, nil, err
	}
	log := rq.log.With(logfield.OnboardingID, o.ID, logfield.SiteID, o.SiteID, logfield.NodeID, o.NodeID, logfield.Hostname, o.Hostname)
	return o, log, nil
}

// linkExecution checks the execution an onboarding's workflow started as
// against the one its record names, or closes the onboarding when its
// workflow could not be started.
func (s *server) linkExecution(rq *request, log *slog.Logger, o domain.Onboarding, execID string, err error) (domain.Onboarding, error) {
	ctx := rq.ctx()
	if err != nil {
		log.ErrorContext(ctx, "start onboarding workflow", "error", err.Error())
		s.closeUnstarted(rq, log, o.ID, "the onboarding workflow could not be started")
		return domain.Onboarding{}, &StatusError{Status: http.StatusServiceUnavailable, Code: CodeUnavailable,
			Message: fmt.Sprintf("the workflow service is unavailable; onboarding %s was closed as failed, retry later", o.ID)}
	}
	if execID != o.ExecutionID {
		// The starter named the execution otherwise than predicted: record
		// what it says. The workflow finds the record by id, so a failed
		// write does not fail the request.
		if updated, err := s.store.UpdateOnboarding(ctx, o.ID, func(cur *domain.Onboarding) error {
			cur.ExecutionID = execID
			return nil
		}); err != nil {
			log.WarnContext(ctx, "record execution id", "error", err.Error())
			o.ExecutionID = execID
		} else {
			o = updated
		}
	}
	log.InfoContext(ctx, "onboarding started")
	return o, nil
}

// holderHost is the host name of onboarding id, for a conflict message;
// empty when it cannot be read.
func (s *server) holderHost(ctx context.Context, id string) string {
	if id == "" {
		return ""
	}
	o, err := s.store.GetOnboarding(ctx, id)
	if err != nil {
		return ""
	}
	return o.Hostname
}

// siteReady is the site guardrail: credentials set and the last probe
// healthy (requirements readiness first-run guardrails).
func siteReady(site domain.Site) error {
	notReady := func(why string) error {
		return &StatusError{Status: http.StatusUnprocessableEntity, Code: CodeSiteNotReady, Field: "site_id",
			Message: fmt.Sprintf("site_id: site %q is not ready: %s", site.ID, why)}
	}
	switch {
	case !site.CredentialsSet:
		return notReady("its credentials are not set")
	case site.Probe == nil:
		return notReady("it has not been probed since its URL or credentials changed; POST …/probe")
	case !site.Probe.Healthy:
		return notReady("its last probe failed: " + site.Probe.Error)
	}
	return nil
}

// closeUnstarted closes an onboarding whose workflow never started as
// failed, releasing the host lock. It must not depend on the caller still
// waiting.
func (s *server) closeUnstarted(rq *request, log *slog.Logger, id, why string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(rq.ctx()), s.cfg.DetachedWriteTimeout)
	defer cancel()
	now := s.clock.Now().UTC()
	closed, err := s.store.UpdateOnboarding(ctx, id, func(o *domain.Onboarding) error {
		o.Status = domain.OnboardingFailed
		o.Error = &domain.Failure{Code: startFailure, Message: why, Stage: o.Stage}
		o.ExecutionID = "" // it never ran
		o.UpdatedAt = now
		o.CompletedAt = &now
		return nil
	})
	if err != nil {
		log.ErrorContext(ctx, "close unstarted onboarding", "error", err.Error())
		return
	}
	if err := s.store.AppendOnboardingEvents(ctx, domain.TimelineEntry{
		OnboardingID: id, Time: now, Attempt: closed.Attempt, Kind: domain.TimelineNote, Stage: domain.StageValidate,
		Outcome: "failed", Detail: why,
	}); err != nil {
		log.ErrorContext(ctx, "record start failure on the timeline", "error", err.Error())
	}
}

var onboardingStatuses = []string{
	string(domain.OnboardingPending), string(domain.OnboardingRunning), string(domain.OnboardingCompleted),
	string(domain.OnboardingFailed), string(domain.OnboardingManualIntervention), string(domain.OnboardingCancelled),
}

// Page sizes of GET /onboardings.
const (
	defaultPageLimit = 50
	maxPageLimit     = 200
)

// onboardingPage is the answer of GET /onboardings; next_cursor is empty on
// the last page.
type onboardingPage struct {
	Items      []namedOnboarding `json:"items"`
	NextCursor string            `json:"next_cursor"`
}

func (s *server) listOnboardings(rq *request) (int, any, error) {
	q, err := queryParams(rq, "status", "site_id", "hostname", "limit", "cursor", "batch_id")
	if err != nil {
		return 0, nil, err
	}
	if id, ok := q["batch_id"]; ok {
		return s.listBatchOnboardings(rq, id, q)
	}
	f := store.OnboardingFilter{Status: domain.OnboardingStatus(q["status"]), SiteID: q["site_id"], Cursor: q["cursor"], Limit: defaultPageLimit}
	if f.Status != "" && !slices.Contains(onboardingStatuses, string(f.Status)) {
		return 0, nil, fieldError("status", "must be one of %s", strings.Join(onboardingStatuses, ", "))
	}
	if h := q["hostname"]; h != "" {
		if f.Hostname, err = normalizeHostname("hostname", h); err != nil {
			return 0, nil, err
		}
	}
	if l, ok := q["limit"]; ok {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > maxPageLimit {
			return 0, nil, fieldError("limit", "must be an integer between 1 and %d", maxPageLimit)
		}
		f.Limit = n
	}
	page, err := s.store.ListOnboardings(rq.ctx(), f)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, onboardingPage{Items: s.namer(rq.ctx()).onboardings(page.Items), NextCursor: page.NextCursor}, nil
}

// onboardingDetail is GET /onboardings/{id}: the record, its timeline
// (workflow steps and MAAS events side by side, in time order) and the MAAS
// diagnostics captured on it (requirements readiness §8.3).
type onboardingDetail struct {
	domain.Onboarding
	SiteName    string `json:"site_name,omitempty"`
	ProfileName string `json:"profile_name,omitempty"`
	// AllowedOperations are the recovery operations the record accepts now
	// (recovery.go).
	AllowedOperations []domain.RecoveryOperation `json:"allowed_operations"`
	Timeline          []timelineEntry            `json:"timeline"`
	Diagnostics       diagnostics                `json:"diagnostics"`
}

type timelineEntry struct {
	Time        time.Time `json:"time"`
	Attempt     int       `json:"attempt"`
	Kind        string    `json:"kind"`
	Stage       string    `json:"stage,omitempty"`
	Outcome     string    `json:"outcome,omitempty"`
	Detail      string    `json:"detail,omitempty"`
	Source      string    `json:"source,omitempty"`
	MAASEventID int64     `json:"maas_event_id,omitempty"`
}

type diagnostics struct {
	MAASEvents         []timelineEntry `json:"maas_events"`
	InstallationOutput string          `json:"installation_output"`
	ScriptResults      []scriptResult  `json:"script_results"`
}

type scriptResult struct {
	Name    string    `json:"name"`
	Stage   string    `json:"stage,omitempty"`
	Attempt int       `json:"attempt"`
	Time    time.Time `json:"time"`
	Output  string    `json:"output"`
}

// isInstallationOutput tells the deploy/installation log apart from other
// diagnostic sources (script results).
func isInstallationOutput(source string) bool {
	return strings.HasPrefix(source, "installation") || source == "deploy_output"
}

func (s *server) getOnboarding(rq *request) (int, any, error) {
	o, err := s.store.GetOnboarding(rq.ctx(), rq.r.PathValue("id"))
	if err != nil {
		return 0, nil, err
	}
	if o.Stage == domain.StageQueued {
		if o.QueuePosition, err = s.store.QueuePosition(rq.ctx(), o); err != nil {
			return 0, nil, err
		}
	}
	rows, err := s.store.ListOnboardingEvents(rq.ctx(), o.ID)
	if err != nil {
		return 0, nil, err
	}
	// The store orders rows by write; MAAS events are copied after the
	// fact, so order by when things happened.
	slices.SortStableFunc(rows, func(a, b domain.TimelineEntry) int { return a.Time.Compare(b.Time) })
	stages := stagesAtEventTimes(len(rows), func(i int) stageRow {
		return stageRow{time: rows[i].Time, kind: rows[i].Kind, stage: string(rows[i].Stage)}
	})
	names := s.namer(rq.ctx())
	d := onboardingDetail{
		Onboarding:        o,
		SiteName:          names.site(o.SiteID),
		ProfileName:       names.profile(o.SiteID, o.ProfileID),
		AllowedOperations: servedOperations(o),
		Timeline:          make([]timelineEntry, 0, len(rows)),
		Diagnostics:       diagnostics{MAASEvents: []timelineEntry{}, ScriptResults: []scriptResult{}},
	}
	for i, ev := range rows {
		e := timelineEntry{Time: ev.Time, Attempt: ev.Attempt, Kind: string(ev.Kind), Stage: stages[i], Outcome: ev.Outcome,
			Detail: ev.Detail, Source: ev.Source, MAASEventID: ev.MAASEventID}
		switch ev.Kind {
		case domain.TimelineMAASEvent:
			d.Diagnostics.MAASEvents = append(d.Diagnostics.MAASEvents, e)
		case domain.TimelineDiagnostic:
			if isInstallationOutput(ev.Source) {
				// The latest capture wins: it covers the latest deploy.
				d.Diagnostics.InstallationOutput = ev.Detail
			} else {
				d.Diagnostics.ScriptResults = append(d.Diagnostics.ScriptResults, scriptResult{
					Name: ev.Source, Stage: string(ev.Stage), Attempt: ev.Attempt, Time: ev.Time, Output: ev.Detail})
			}
			// The output itself lives under diagnostics; the timeline
			// only marks when it was captured.
			e.Detail = ""
		}
		d.Timeline = append(d.Timeline, e)
	}
	return http.StatusOK, d, nil
}

func isNotFound(err error) bool {
	var nf *store.ItemNotFoundError
	return errors.As(err, &nf)
}
