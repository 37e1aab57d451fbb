package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

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
	Time        time.Time           `json:"time"`
	Attempt     int                 `json:"attempt"`
	Kind        domain.TimelineKind `json:"kind"`
	Stage       string              `json:"stage"`
	Outcome     string              `json:"outcome"`
	Detail      string              `json:"detail"`
	Source      string              `json:"source"`
	MAASEventID int64               `json:"maas_event_id"`
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
	SiteName    string `json:"site_name,omitempty"`
	ProfileName string `json:"profile_name,omitempty"`
	// AllowedOperations are the recovery operations the record accepts now.
	AllowedOperations []string             `json:"allowed_operations"`
	Timeline          []adminTimelineEntry `json:"timeline"`
	Diagnostics       struct {
		MAASEvents         []adminTimelineEntry `json:"maas_events"`
		InstallationOutput string               `json:"installation_output"`
		ScriptResults      []adminScriptResult  `json:"script_results"`
	} `json:"diagnostics"`
}

func (c *cli) onboardCommand() *cobra.Command {
	cmd := c.leaf(adminSpec{
		use:   "onboard --site SITE --profile PROFILE --sku SKU (--hostname HOST --ipmi-ip IP | --csv FILE)",
		short: "start onboarding one server, or a batch from a CSV file",
		long: `Start onboarding one server (--hostname, --ipmi-ip), or every row of a CSV file as one
batch (--csv FILE, - for stdin: a header row naming hostname and ipmi_ip in any order,
# comments and blank lines skipped, errors named by CSV line).

SITE and PROFILE are ids or names. --wait follows the onboarding (or the batch) to the
end: every stage entered and left, each MAAS event, the classified deploy retry and
the enrollment, with times. It exits 0 when completed, 3 at manual intervention and 4
when failed or cancelled (a batch: 3 when any node needs an operator, else 4 when any
failed, else 0).`,
		example: `  maasflow onboard --site demo --profile gpu-jammy --sku h100-8x --hostname gpu-node-01 --ipmi-ip 10.20.0.101 --wait
  maasflow onboard --site demo --profile gpu-jammy --sku h100-8x --csv rack07.csv --wait`,
		flags: func(fs *pflag.FlagSet) {
			fs.String("site", "", "site id or name")
			fs.String("profile", "", "profile id or name (of the site)")
			fs.String("sku", "", "SKU id")
			fs.String("hostname", "", "the server's host name")
			fs.String("ipmi-ip", "", "the server's BMC (IPMI) IPv4 address")
			fs.String("csv", "", "onboard every row of this CSV file (- for stdin) as one batch")
			fs.Bool("wait", false, "follow it to the end; the exit code tells the outcome")
			fs.Duration("interval", adminDefaultInterval, "how often --wait polls")
			timeoutFlag(fs)
		},
		run: runOnboard,
	})
	_ = cmd.RegisterFlagCompletionFunc("site", c.flagCompletion(completeSites))
	_ = cmd.RegisterFlagCompletionFunc("profile", c.flagCompletion(func(r *adminRun, _ []string) []string {
		site := r.str("site")
		if site == "" {
			return nil
		}
		return completeSiteProfiles(r, []string{site})
	}))
	_ = cmd.RegisterFlagCompletionFunc("sku", c.flagCompletion(completeSKUs))
	return cmd
}

// flagCompletion adapts an argument completion to a flag.
func (c *cli) flagCompletion(f func(r *adminRun, args []string) []string) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return f(&adminRun{cli: c, cmd: cmd}, args), cobra.ShellCompDirectiveNoFileComp
	}
}

func runOnboard(ctx context.Context, r *adminRun, _ []string) error {
	if err := r.requireFlags("site", "profile", "sku"); err != nil {
		return err
	}
	batch := r.changed("csv")
	switch {
	case batch && (r.changed("hostname") || r.changed("ipmi-ip")):
		return usagef("give either --csv or --hostname and --ipmi-ip, not both")
	case !batch:
		if err := r.requireFlags("hostname", "ipmi-ip"); err != nil {
			return err
		}
	}
	interval, err := r.positiveInterval()
	if err != nil {
		return err
	}
	var rows []adminBatchRow
	if batch {
		if rows, err = r.batchRows(r.str("csv")); err != nil {
			return err
		}
	}
	c, err := r.client()
	if err != nil {
		return err
	}
	site, err := r.siteID(ctx, c, r.str("site"))
	if err != nil {
		return err
	}
	profile, err := r.profileID(ctx, c, site, r.str("profile"))
	if err != nil {
		return err
	}
	if batch {
		return r.startBatch(ctx, c, site, profile, rows, interval)
	}
	// Exactly the operator input of requirements readiness §3.1: policy comes from the
	// site and profile, never from the request.
	body := map[string]string{"site_id": site, "profile_id": profile, "sku_id": r.str("sku"), "hostname": r.str("hostname"), "ipmi_ip": r.str("ipmi-ip")}
	resp, err := c.do(ctx, http.MethodPost, adminOnboardingsPath, nil, body)
	if err != nil {
		return err
	}
	var o domain.Onboarding
	if err := resp.decode(&o); err != nil {
		return err
	}
	wait := r.boolean("wait")
	if r.machine() {
		if !wait {
			r.emit(resp.Body)
		}
	} else {
		fmt.Fprintf(r.env.stdout, "onboarding %s accepted (status %s)\n", adminCell(o.ID), adminCell(string(o.Status)))
		if !wait {
			fmt.Fprintf(r.env.stdout, "follow it with: maasflow onboardings watch %s\n", adminCell(o.ID))
		}
	}
	if !wait {
		return nil
	}
	return r.watch(ctx, c, o.ID, interval)
}

func runOnboardingsWatch(ctx context.Context, r *adminRun, args []string) error {
	return r.watchRef(ctx, args[0], (*adminRun).onboardingID, (*adminRun).watch)
}

// watchRef resolves ref (an id, or what resolve accepts) and follows the
// record it names every --interval until it ends.
func (r *adminRun) watchRef(ctx context.Context, ref string,
	resolve func(*adminRun, context.Context, *adminClient, string) (string, error),
	follow func(*adminRun, context.Context, *adminClient, string, time.Duration) error,
) error {
	interval, err := r.positiveInterval()
	if err != nil {
		return err
	}
	c, err := r.client()
	if err != nil {
		return err
	}
	id, err := resolve(r, ctx, c, ref)
	if err != nil {
		return err
	}
	return follow(r, ctx, c, id, interval)
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
func adminOutcome(status string) (int, bool) {
	switch domain.OnboardingStatus(status) {
	case domain.OnboardingCompleted:
		return adminExitOK, true
	case domain.OnboardingManualIntervention:
		return adminExitManual, true
	case domain.OnboardingFailed, domain.OnboardingCancelled:
		return adminExitFailed, true
	}
	return 0, false
}

func (r *adminRun) printOutcome(o domain.Onboarding) {
	if r.machine() {
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
		fmt.Fprintf(w, "onboarding %s needs manual intervention at stage %s%s\n", adminCell(o.ID), adminCell(string(o.Stage)), why)
		r.printHardwareDiff(w, o.HardwareDiff)
		fmt.Fprintf(w, "inspect it with: maasflow onboardings get %s\n", adminCell(o.ID))
	default:
		fmt.Fprintf(w, "onboarding %s %s at stage %s%s\n", adminCell(o.ID), adminCell(string(o.Status)), adminCell(string(o.Stage)), why)
	}
}

// adminOnboardingPage is GET …/onboardings.
type adminOnboardingPage struct {
	Items      []json.RawMessage `json:"items"`
	NextCursor string            `json:"next_cursor"`
}

func (c *cli) onboardingsCommand() *cobra.Command {
	id := []string{"ONBOARDING"}
	list := c.leaf(adminSpec{
		use: "list", short: "list onboardings, newest first; --all follows every page",
		flags: func(fs *pflag.FlagSet) {
			fs.String("status", "", "only this status (pending, running, completed, failed, manual_intervention, cancelled)")
			fs.String("site", "", "only this site (id or name)")
			fs.String("hostname", "", "only this host")
			fs.String("batch", "", "only the onboardings of this batch")
			pageFlags(fs, "page size (default: the API's)")
		},
		run: runOnboardingsList,
	})
	_ = list.RegisterFlagCompletionFunc("site", c.flagCompletion(completeSites))
	_ = list.RegisterFlagCompletionFunc("status", cobra.FixedCompletions(onboardingStatuses, cobra.ShellCompDirectiveNoFileComp))
	cmds := []*cobra.Command{
		list,
		c.leaf(adminSpec{use: "get ONBOARDING", short: "show an onboarding: status, stage, timeline and diagnostics (an id, or a host name for its newest onboarding)", args: id, run: runOnboardingsGet}),
		c.leaf(adminSpec{
			use: "watch ONBOARDING", short: "follow an onboarding's timeline until it ends (exit codes as onboard --wait)", args: id,
			flags: func(fs *pflag.FlagSet) {
				fs.Duration("interval", adminDefaultInterval, "how often to poll")
				timeoutFlag(fs)
			},
			run: runOnboardingsWatch,
		}),
		c.leaf(adminSpec{
			use: "cancel ONBOARDING", short: "cancel an open onboarding (also manual_intervention): stop its workflow and free the host; MAAS is not touched", args: id,
			flags: func(fs *pflag.FlagSet) { fs.String("reason", "", "why, recorded on the onboarding") },
			run:   runOnboardingsCancel,
		}),
	}
	return c.group("onboardings", "list, show, watch, cancel and recover onboardings", append(cmds, c.recoveryLeaves()...)...)
}

var onboardingStatuses = []string{
	string(domain.OnboardingPending), string(domain.OnboardingRunning), string(domain.OnboardingCompleted),
	string(domain.OnboardingFailed), string(domain.OnboardingManualIntervention), string(domain.OnboardingCancelled),
}

func runOnboardingsList(ctx context.Context, r *adminRun, _ []string) error {
	c, q, err := r.listQuery(ctx, map[string]string{"status": "status", "hostname": "hostname", "cursor": "cursor", "batch_id": "batch"})
	if err != nil {
		return err
	}
	all := r.boolean("all")
	var (
		items []json.RawMessage
		page  adminOnboardingPage
		seen  = map[string]bool{}
	)
	for {
		resp, err := c.do(ctx, http.MethodGet, adminOnboardingsPath, q, nil)
		if err != nil {
			return err
		}
		page = adminOnboardingPage{}
		if err := resp.decode(&page); err != nil {
			return err
		}
		if !all {
			if r.machine() {
				r.emit(resp.Body)
				return nil
			}
			items = page.Items
			break
		}
		items = append(items, page.Items...)
		if page.NextCursor == "" {
			break
		}
		if seen[page.NextCursor] {
			return fmt.Errorf("the admin API returned cursor %q twice; stopping", page.NextCursor)
		}
		seen[page.NextCursor] = true
		q.Set("cursor", page.NextCursor)
	}

	if r.machine() {
		if items == nil {
			items = []json.RawMessage{}
		}
		return r.emitValue(adminOnboardingPage{Items: items})
	}
	t := r.table("ID", "STATUS", "STAGE", "HOSTNAME", "SITE", "ATTEMPT", "MAAS_SYSTEM_ID", "UPDATED")
	for _, raw := range items {
		var o struct {
			domain.Onboarding
			SiteName string `json:"site_name"`
		}
		if err := json.Unmarshal(raw, &o); err != nil {
			return fmt.Errorf("unexpected answer from the admin API: %w", err)
		}
		t.row(o.ID, string(o.Status), string(o.Stage), o.Hostname, named(o.SiteName, o.SiteID), strconv.Itoa(o.Attempt), o.MAASSystemID, adminTime(o.UpdatedAt))
	}
	t.flush()
	if !all && page.NextCursor != "" {
		fmt.Fprintf(r.env.stderr, "more onboardings: add --all, or --cursor %s\n", adminCell(page.NextCursor))
	}
	return nil
}

var runOnboardingsGet = getByRef((*adminRun).onboardingID, adminOnboardingsPath, (*adminRun).printOnboardingDetail)

// getByRef is every `get` of a record an operator names by id or by name:
// resolve the reference, GET path/{id}, and show the answer (-o json|yaml
// print it as it came).
func getByRef[T any](resolve func(*adminRun, context.Context, *adminClient, string) (string, error), path string,
	show func(*adminRun, T),
) func(context.Context, *adminRun, []string) error {
	return func(ctx context.Context, r *adminRun, args []string) error {
		c, err := r.client()
		if err != nil {
			return err
		}
		id, err := resolve(r, ctx, c, args[0])
		if err != nil {
			return err
		}
		return r.call(ctx, c, http.MethodGet, adminPath(path, id), nil, func(resp *adminResponse) error {
			var v T
			if err := resp.decode(&v); err != nil {
				return err
			}
			show(r, v)
			return nil
		})
	}
}

// runOnboardingsCancel cancels an open onboarding: the API stops its
// workflow and frees the host; MAAS is left as it is.
func runOnboardingsCancel(ctx context.Context, r *adminRun, args []string) error {
	// Without --reason no body is sent and the API records who cancelled.
	var body any
	if r.changed("reason") {
		body = map[string]string{"reason": r.str("reason")}
	}
	c, err := r.client()
	if err != nil {
		return err
	}
	id, err := r.onboardingID(ctx, c, args[0])
	if err != nil {
		return err
	}
	return r.call(ctx, c, http.MethodPost, adminPath(adminOnboardingsPath, id, "cancel"), body, func(resp *adminResponse) error {
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

func (r *adminRun) printOnboardingDetail(d adminOnboardingDetail) {
	w := r.env.stdout
	f := newAdminFields(w)
	f.add("ID", d.ID)
	f.add("Status", string(d.Status))
	f.add("Stage", string(d.Stage))
	if d.QueuePosition > 0 {
		f.add("Queue position", fmt.Sprintf("%d (waiting for a slot of site %s; 1 is next)", d.QueuePosition, named(d.SiteName, d.SiteID)))
	}
	f.add("Attempt", fmt.Sprintf("%d (deploys in this attempt: %d)", d.Attempt, d.DeployAttempts))
	if d.Run > 0 {
		f.add("Run", fmt.Sprintf("%d (retried or resumed)", d.Run))
	}
	f.add("Checkpoint", string(d.Checkpoint))
	f.add("Allowed operations", strings.Join(d.AllowedOperations, ", "))
	f.add("MAAS system ID", d.MAASSystemID)
	f.add("Hostname", d.Hostname)
	f.add("IPMI IP", d.IPMIIP)
	f.add("Site", namedID(d.SiteName, d.SiteID))
	f.add("Profile", namedID(d.ProfileName, d.ProfileID))
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
	r.printHardwareDiff(w, d.HardwareDiff)

	fmt.Fprintln(w, "\nTimeline:")
	if len(d.Timeline) == 0 {
		fmt.Fprintln(w, "  (empty)")
	} else {
		t := r.table("TIME", "ATTEMPT", "KIND", "STAGE", "OUTCOME", "SOURCE", "DETAIL")
		for _, e := range d.Timeline {
			t.row(adminTime(e.Time), strconv.Itoa(e.Attempt), string(e.Kind), e.Stage, e.Outcome, e.Source, e.Detail)
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
