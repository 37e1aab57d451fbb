package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/maasflow/maasflow/shared/domain"
)

const (
	// adminDefaultInterval is how often --wait and watch poll: stages last
	// minutes (commissioning, deploy), so seconds of lag are harmless.
	adminDefaultInterval = 5 * time.Second
	// adminWatchMaxFailures is how many polls in a row may fail on a
	// transient error (unreachable API, 5xx) before watch gives up; a
	// deploy outlives short API hiccups and the watch should too.
	adminWatchMaxFailures = 5
)

// adminTimelineEntry is one row of an onboarding's timeline.
type adminTimelineEntry struct {
	Time        time.Time `json:"time"`
	Attempt     int       `json:"attempt"`
	Kind        string    `json:"kind"`
	Stage       string    `json:"stage"`
	Outcome     string    `json:"outcome"`
	Detail      string    `json:"detail"`
	Source      string    `json:"source"`
	MAASEventID int64     `json:"maas_event_id"`
}

type adminScriptResult struct {
	Name    string    `json:"name"`
	Stage   string    `json:"stage"`
	Attempt int       `json:"attempt"`
	Time    time.Time `json:"time"`
	Output  string    `json:"output"`
}

// adminOnboardingDetail is GET …/onboardings/{id}.
type adminOnboardingDetail struct {
	domain.Onboarding
	Timeline    []adminTimelineEntry `json:"timeline"`
	Diagnostics struct {
		MAASEvents         []adminTimelineEntry `json:"maas_events"`
		InstallationOutput string               `json:"installation_output"`
		ScriptResults      []adminScriptResult  `json:"script_results"`
	} `json:"diagnostics"`
}

func runOnboard(ctx context.Context, r *adminRun, args []string) int {
	fs := r.flags()
	site := fs.String("site", "", "")
	profile := fs.String("profile", "", "")
	sku := fs.String("sku", "", "")
	host := fs.String("hostname", "", "")
	ipmi := fs.String("ipmi-ip", "", "")
	wait := fs.Bool("wait", false, "")
	interval := fs.Duration("interval", adminDefaultInterval, "")
	if _, err := r.parse(fs, args, 0); err != nil {
		return r.fail(err)
	}
	if err := requireFlags(fs, "site", "profile", "sku", "hostname", "ipmi-ip"); err != nil {
		return r.fail(err)
	}
	if *interval <= 0 {
		return r.fail(usagef("--interval must be positive"))
	}
	c, err := r.client()
	if err != nil {
		return r.fail(err)
	}
	// Exactly the operator input of seed 000 §3.1: policy comes from the
	// site and profile, never from the request.
	body := map[string]string{"site_id": *site, "profile_id": *profile, "sku_id": *sku, "hostname": *host, "ipmi_ip": *ipmi}
	resp, err := c.do(ctx, http.MethodPost, adminOnboardingsPath, nil, body)
	if err != nil {
		return r.fail(err)
	}
	var o domain.Onboarding
	if err := resp.decode(&o); err != nil {
		return r.fail(err)
	}
	if r.json() {
		r.emit(resp.Body)
	} else {
		fmt.Fprintf(r.env.stdout, "onboarding %s accepted (status %s)\n", adminCell(o.ID), adminCell(string(o.Status)))
		if !*wait {
			fmt.Fprintf(r.env.stdout, "follow it with: maasflow onboardings watch %s\n", adminCell(o.ID))
		}
	}
	if !*wait {
		return adminExitOK
	}
	return r.watch(ctx, c, o.ID, *interval)
}

func runOnboardingsWatch(ctx context.Context, r *adminRun, args []string) int {
	fs := r.flags()
	interval := fs.Duration("interval", adminDefaultInterval, "")
	pos, err := r.parse(fs, args, 1)
	if err != nil {
		return r.fail(err)
	}
	if *interval <= 0 {
		return r.fail(usagef("--interval must be positive"))
	}
	c, err := r.client()
	if err != nil {
		return r.fail(err)
	}
	return r.watch(ctx, c, pos[0], *interval)
}

// adminSnapshot is what a watch compares between polls.
type adminSnapshot struct {
	status  domain.OnboardingStatus
	stage   domain.Stage
	attempt int
}

// watch polls one onboarding until it ends, printing every change of
// status, stage or attempt (-o json: the record, verbatim, one per line),
// and returns 0 for completed, 3 for manual_intervention and 4 for failed
// or cancelled.
func (r *adminRun) watch(ctx context.Context, c *adminClient, id string, interval time.Duration) int {
	path := adminPath(adminOnboardingsPath, id)
	var (
		prev     *adminSnapshot
		failures int
	)
	for {
		resp, err := c.do(ctx, http.MethodGet, path, nil, nil)
		switch {
		case err != nil && isTransient(err) && failures < adminWatchMaxFailures:
			failures++
			fmt.Fprintf(r.env.stderr, "warning: poll %d/%d failed, retrying in %s: %s\n", failures, adminWatchMaxFailures, interval, adminCell(err.Error()))
		case err != nil:
			return r.fail(err)
		default:
			failures = 0
			var o domain.Onboarding
			if err := resp.decode(&o); err != nil {
				return r.fail(err)
			}
			snap := adminSnapshot{status: o.Status, stage: o.Stage, attempt: o.Attempt}
			if prev == nil || snap != *prev {
				prev = &snap
				r.printChange(resp, o)
			}
			if code, done := adminOutcome(o.Status); done {
				r.printOutcome(o)
				return code
			}
		}
		select {
		case <-ctx.Done():
			return r.fail(ctx.Err())
		case <-r.env.clock.After(interval):
		}
	}
}

// isTransient tells errors worth another poll: the API unreachable or
// answering 5xx or 429. A 4xx (unknown id, bad token) will not improve.
func isTransient(err error) bool {
	if errors.Is(err, context.Canceled) {
		return false
	}
	var apiE *adminAPIError
	if errors.As(err, &apiE) {
		return apiE.Status >= 500 || apiE.Status == http.StatusTooManyRequests
	}
	return true
}

// adminOutcome maps a terminal status to its exit code.
func adminOutcome(status domain.OnboardingStatus) (int, bool) {
	switch status {
	case domain.OnboardingCompleted:
		return adminExitOK, true
	case domain.OnboardingManualIntervention:
		return adminExitManual, true
	case domain.OnboardingFailed, domain.OnboardingCancelled:
		return adminExitFailed, true
	}
	return 0, false
}

func (r *adminRun) printChange(resp *adminResponse, o domain.Onboarding) {
	if r.json() {
		r.emit(resp.Body)
		return
	}
	// Widths of the longest status and stage keep the columns aligned.
	line := fmt.Sprintf("%s  %-19s  %-16s", adminTime(o.UpdatedAt), o.Status, o.Stage)
	if o.Attempt > 1 {
		line += "  attempt=" + strconv.Itoa(o.Attempt)
	}
	if o.MAASSystemID != "" {
		line += "  maas_system_id=" + o.MAASSystemID
	}
	fmt.Fprintln(r.env.stdout, adminCell(strings.TrimRight(line, " ")))
}

func (r *adminRun) printOutcome(o domain.Onboarding) {
	if r.json() {
		return
	}
	w := r.env.stdout
	why := ""
	if o.Error != nil {
		why = ": " + adminCell(o.Error.Code+": "+o.Error.Message)
	}
	switch o.Status {
	case domain.OnboardingCompleted:
		fmt.Fprintf(w, "onboarding %s completed: node %s, MAAS system %s\n", adminCell(o.ID), adminCell(orDash(o.NodeID)), adminCell(orDash(o.MAASSystemID)))
	case domain.OnboardingManualIntervention:
		fmt.Fprintf(w, "onboarding %s needs manual intervention at stage %s%s\ninspect it with: maasflow onboardings get %s\n",
			adminCell(o.ID), adminCell(string(o.Stage)), why, adminCell(o.ID))
	default:
		fmt.Fprintf(w, "onboarding %s %s at stage %s%s\n", adminCell(o.ID), adminCell(string(o.Status)), adminCell(string(o.Stage)), why)
	}
}

// adminOnboardingPage is GET …/onboardings.
type adminOnboardingPage struct {
	Items      []json.RawMessage `json:"items"`
	NextCursor string            `json:"next_cursor"`
}

func runOnboardingsList(ctx context.Context, r *adminRun, args []string) int {
	fs := r.flags()
	status := fs.String("status", "", "")
	site := fs.String("site", "", "")
	host := fs.String("hostname", "", "")
	limit := fs.Int("limit", 0, "")
	cursor := fs.String("cursor", "", "")
	all := fs.Bool("all", false, "")
	if _, err := r.parse(fs, args, 0); err != nil {
		return r.fail(err)
	}
	q := url.Values{}
	for k, v := range map[string]string{"status": *status, "site_id": *site, "hostname": *host, "cursor": *cursor} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if err := setLimit(fs, *limit, q); err != nil {
		return r.fail(err)
	}
	c, err := r.client()
	if err != nil {
		return r.fail(err)
	}

	var (
		items []json.RawMessage
		page  adminOnboardingPage
		seen  = map[string]bool{}
	)
	for {
		resp, err := c.do(ctx, http.MethodGet, adminOnboardingsPath, q, nil)
		if err != nil {
			return r.fail(err)
		}
		page = adminOnboardingPage{}
		if err := resp.decode(&page); err != nil {
			return r.fail(err)
		}
		if !*all {
			if r.json() {
				r.emit(resp.Body)
				return adminExitOK
			}
			items = page.Items
			break
		}
		items = append(items, page.Items...)
		if page.NextCursor == "" {
			break
		}
		if seen[page.NextCursor] {
			return r.fail(fmt.Errorf("the admin API returned cursor %q twice; stopping", page.NextCursor))
		}
		seen[page.NextCursor] = true
		q.Set("cursor", page.NextCursor)
	}

	if r.json() {
		if items == nil {
			items = []json.RawMessage{}
		}
		b, err := json.Marshal(adminOnboardingPage{Items: items})
		if err != nil {
			return r.fail(fmt.Errorf("encode output: %w", err))
		}
		r.emit(b)
		return adminExitOK
	}
	t := newAdminTable(r.env.stdout, "ID", "STATUS", "STAGE", "HOSTNAME", "SITE", "ATTEMPT", "MAAS_SYSTEM_ID", "UPDATED")
	for _, raw := range items {
		var o domain.Onboarding
		if err := json.Unmarshal(raw, &o); err != nil {
			return r.fail(fmt.Errorf("unexpected answer from the admin API: %w", err))
		}
		t.row(o.ID, string(o.Status), string(o.Stage), o.Hostname, o.SiteID, strconv.Itoa(o.Attempt), o.MAASSystemID, adminTime(o.UpdatedAt))
	}
	t.flush()
	if !*all && page.NextCursor != "" {
		fmt.Fprintf(r.env.stderr, "more onboardings: add --all, or --cursor %s\n", adminCell(page.NextCursor))
	}
	return adminExitOK
}

func runOnboardingsGet(ctx context.Context, r *adminRun, args []string) int {
	pos, err := r.parse(r.flags(), args, 1)
	if err != nil {
		return r.fail(err)
	}
	return r.call(ctx, http.MethodGet, adminPath(adminOnboardingsPath, pos[0]), nil, func(resp *adminResponse) error {
		var d adminOnboardingDetail
		if err := resp.decode(&d); err != nil {
			return err
		}
		printOnboardingDetail(r.env.stdout, d)
		return nil
	})
}

// runOnboardingsCancel cancels an open onboarding: the API stops its
// workflow and frees the host; MAAS is left as it is.
func runOnboardingsCancel(ctx context.Context, r *adminRun, args []string) int {
	fs := r.flags()
	reason := fs.String("reason", "", "")
	pos, err := r.parse(fs, args, 1)
	if err != nil {
		return r.fail(err)
	}
	// Without --reason no body is sent and the API records who cancelled.
	var body any
	if flagsSet(fs)["reason"] {
		body = map[string]string{"reason": *reason}
	}
	return r.call(ctx, http.MethodPost, adminPath(adminOnboardingsPath, pos[0], "cancel"), body, func(resp *adminResponse) error {
		var o domain.Onboarding
		if err := resp.decode(&o); err != nil {
			return err
		}
		w := r.env.stdout
		why := ""
		if o.Error != nil {
			why = ": " + adminCell(o.Error.Message)
		}
		fmt.Fprintf(w, "onboarding %s %s at stage %s%s\n", adminCell(o.ID), adminCell(string(o.Status)), adminCell(string(o.Stage)), why)
		fmt.Fprintf(w, "host %s is free for a new onboarding; the MAAS machine %s was left as it is\n",
			adminCell(o.Hostname), adminCell(orDash(o.MAASSystemID)))
		return nil
	})
}

func printOnboardingDetail(w io.Writer, d adminOnboardingDetail) {
	f := newAdminFields(w)
	f.add("ID", d.ID)
	f.add("Status", string(d.Status))
	f.add("Stage", string(d.Stage))
	f.add("Attempt", fmt.Sprintf("%d (deploys in this attempt: %d)", d.Attempt, d.DeployAttempts))
	f.add("MAAS system ID", d.MAASSystemID)
	f.add("Hostname", d.Hostname)
	f.add("IPMI IP", d.IPMIIP)
	f.add("Site", d.SiteID)
	f.add("Profile", d.ProfileID)
	f.add("SKU", d.SKUID)
	f.add("Node", d.NodeID)
	f.add("PXE MAC", d.PXEMAC)
	f.add("Execution", d.ExecutionID)
	f.add("Correlation ID", d.CorrelationID)
	f.add("Created", adminTime(d.CreatedAt)+" by "+orDash(d.CreatedBy))
	f.add("Updated", adminTime(d.UpdatedAt))
	f.add("Completed", adminTimePtr(d.CompletedAt))
	if d.Error != nil {
		f.add("Error", fmt.Sprintf("%s: %s (stage %s)", d.Error.Code, d.Error.Message, orDash(string(d.Error.Stage))))
	}
	f.flush()

	fmt.Fprintln(w, "\nTimeline:")
	if len(d.Timeline) == 0 {
		fmt.Fprintln(w, "  (empty)")
	} else {
		t := newAdminTable(w, "TIME", "ATTEMPT", "KIND", "STAGE", "OUTCOME", "SOURCE", "DETAIL")
		for _, e := range d.Timeline {
			t.row(adminTime(e.Time), strconv.Itoa(e.Attempt), e.Kind, e.Stage, e.Outcome, e.Source, e.Detail)
		}
		t.flush()
	}

	diag := d.Diagnostics
	fmt.Fprintln(w, "\nDiagnostics:")
	fmt.Fprintf(w, "  MAAS events: %d (in the timeline above)\n", len(diag.MAASEvents))
	if diag.InstallationOutput == "" {
		fmt.Fprintln(w, "  Installation output: none captured")
	} else {
		fmt.Fprintln(w, "  Installation output:")
		adminIndent(w, diag.InstallationOutput, "    ")
	}
	if len(diag.ScriptResults) == 0 {
		fmt.Fprintln(w, "  Script results: none captured")
	}
	for _, s := range diag.ScriptResults {
		fmt.Fprintf(w, "  Script result %s (stage %s, attempt %d, %s):\n", adminCell(s.Name), adminCell(orDash(s.Stage)), s.Attempt, adminTime(s.Time))
		adminIndent(w, s.Output, "    ")
	}
}
