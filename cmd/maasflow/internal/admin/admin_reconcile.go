package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/maasflow/maasflow/shared/domain"
)

// Reconciliation commands (docs/reconciliation.md): start a run and follow
// it, read the schedule, list drift items and decide about them.
const (
	adminReconcilePath = "/api/v1/admin/reconciliation"
	adminDriftPath     = adminReconcilePath + "/drift"
	// adminReconcileInterval is how often `reconcile run --wait` polls: a
	// run over a few sites takes seconds, not the minutes of a deploy.
	adminReconcileInterval = 2 * time.Second
	// adminDriftPageLimit is the largest page the drift listing answers.
	adminDriftPageLimit = 200
	// adminDriftLookupPages bounds the pages a host-name lookup reads.
	adminDriftLookupPages = 10
)

var (
	driftStates  = []string{domain.DriftOpen, domain.DriftClosed}
	driftActions = []string{domain.DriftAcknowledge, domain.DriftAdopt, domain.DriftStart}
)

// adminRunAnswer is POST …/reconciliation/run.
type adminRunAnswer struct {
	domain.ReconcileRun
	Joined bool `json:"joined"`
}

// adminReconcileStatus is GET …/reconciliation/status.
type adminReconcileStatus struct {
	Current       *domain.ReconcileRun `json:"current"`
	Last          *domain.ReconcileRun `json:"last"`
	NextScheduled *time.Time           `json:"next_scheduled"`
	Interval      string               `json:"interval"`
}

func (c *cli) reconcileCommand() *cobra.Command {
	run := c.leaf(adminSpec{
		use:   "run",
		short: "compare MAAS with maasflow's records now (a run under way is joined)",
		long: `Start a reconcile run over every active site, or one site with --site (an id or a
name). When a run is already under way it is joined instead: one run at a time.

--wait polls until the run ended and prints it with its per-site counts. It exits 0
when every site was checked and 1 when a site could not be (status partial).
With -o json|yaml, --wait prints the ended run as one document.`,
		example: `  maasflow reconcile run --wait
  maasflow reconcile run --site lab-a --wait -o json | jq .drift_by_kind`,
		flags: func(fs *pflag.FlagSet) {
			fs.String("site", "", "only this site (id or name)")
			fs.Bool("wait", false, "wait for the run to end and print it")
			fs.Duration("interval", adminReconcileInterval, "how often --wait polls")
			timeoutFlag(fs)
		},
		run: runReconcileRun,
	})
	_ = run.RegisterFlagCompletionFunc("site", c.flagCompletion(completeSites))
	return c.group("reconcile", "compare MAAS with maasflow's records (drift: maasflow drift)",
		run,
		c.leaf(adminSpec{
			use: "status", short: "show the current and the last reconcile run and the next scheduled one",
			run: runReconcileStatus,
		}),
	)
}

func (c *cli) driftCommand() *cobra.Command {
	list := c.leaf(adminSpec{
		use:   "list",
		short: "list drift items, newest first (a node's history with --node)",
		long: `List drift items, newest first: open ones unless --state closed. One page of --limit
items (the API's default page size otherwise); --all follows every page.
docs/reconciliation.md says what each kind means and what to do about it.`,
		example: `  maasflow drift list --site lab-a --kind status_mismatch
  maasflow drift list --node NODE_ID --state closed`,
		flags: func(fs *pflag.FlagSet) {
			fs.String("site", "", "only this site (id or name)")
			fs.String("kind", "", "only this kind ("+strings.Join(domain.DriftKinds(), ", ")+")")
			fs.String("node", "", "only this node id")
			fs.String("state", "", "open (the default) or closed")
			pageFlags(fs, "page size, 1 to 200 (default: the API's)")
		},
		run: runDriftList,
	})
	_ = list.RegisterFlagCompletionFunc("site", c.flagCompletion(completeSites))
	_ = list.RegisterFlagCompletionFunc("kind", cobra.FixedCompletions(domain.DriftKinds(), cobra.ShellCompDirectiveNoFileComp))
	_ = list.RegisterFlagCompletionFunc("state", cobra.FixedCompletions(driftStates, cobra.ShellCompDirectiveNoFileComp))

	resolve := c.leaf(adminSpec{
		use:   "resolve NODE --kind KIND --action acknowledge|adopt|start --reason TEXT",
		short: "acknowledge a node's drift, adopt what MAAS shows, or start the fitting recovery",
		long: `Decide about a node's open drift item of one kind. NODE is the node id as drift list
shows it (also maas:<system id> and onboarding:<id>), or the node's host name.

  acknowledge  the item stays open and quiet until what MAAS shows changes
  adopt        make maasflow's records match MAAS (per kind) and close the item
  start        open the operation that fits: a full decommission for status_mismatch
               (kinds whose operation does not exist yet answer conflict)

The reason is recorded with the decision and in the audit trail.`,
		example: `  maasflow drift resolve gpu-01 --kind status_mismatch --action adopt --reason "released for RMA, CHG-1302"`,
		args:    []string{"NODE"},
		flags: func(fs *pflag.FlagSet) {
			fs.String("kind", "", "the drift kind to act on")
			fs.String("action", "", "acknowledge, adopt or start")
			fs.String("reason", "", "why (required, at most 500 characters)")
		},
		complete: completeDriftNodes,
		run:      runDriftResolve,
	})
	_ = resolve.RegisterFlagCompletionFunc("kind", cobra.FixedCompletions(domain.DriftKinds(), cobra.ShellCompDirectiveNoFileComp))
	_ = resolve.RegisterFlagCompletionFunc("action", cobra.FixedCompletions(driftActions, cobra.ShellCompDirectiveNoFileComp))
	return c.group("drift", "list drift between MAAS and maasflow's records, and resolve it", list, resolve)
}

func runReconcileRun(ctx context.Context, r *adminRun, _ []string) error {
	interval, err := r.positiveInterval()
	if err != nil {
		return err
	}
	c, err := r.client()
	if err != nil {
		return err
	}
	// Without --site no body is sent: the run covers every active site.
	var body any
	if site := r.str("site"); site != "" {
		id, err := r.siteID(ctx, c, site)
		if err != nil {
			return err
		}
		body = map[string]string{"site_id": id}
	}
	resp, err := c.do(ctx, http.MethodPost, adminReconcilePath+"/run", nil, body)
	if err != nil {
		return err
	}
	var started adminRunAnswer
	if err := resp.decode(&started); err != nil {
		return err
	}
	wait := r.boolean("wait")
	if r.machine() {
		if !wait {
			r.emit(resp.Body)
		}
	} else {
		verb := "started"
		if started.Joined {
			verb = "joined (a run was under way)"
		}
		fmt.Fprintf(r.env.stdout, "reconcile run %s %s\n", adminCell(started.ID), verb)
		if !wait {
			fmt.Fprintln(r.env.stdout, "see its outcome with: maasflow reconcile status")
		}
	}
	if !wait {
		return nil
	}
	return r.waitReconcile(ctx, c, started.ReconcileRun, interval)
}

// waitReconcile polls the status until run is the last ended run, prints
// it, and fails (exit 1) when a site could not be checked.
func (r *adminRun) waitReconcile(ctx context.Context, c *adminClient, run domain.ReconcileRun, interval time.Duration) error {
	return r.pollLoop(ctx, interval, func() (bool, error) {
		st, raw, err := reconcileStatus(ctx, c)
		switch {
		case err != nil:
			return false, err
		case st.Last != nil && st.Last.ID == run.ID:
			return true, r.reconcileEnded(*st.Last, raw.Last)
		case startedAfter(st.Last, run) || startedAfter(st.Current, run):
			// One run at a time: a later run means this one ended, and a
			// later run has ended since, so the status no longer shows it.
			return true, fmt.Errorf("reconcile run %s ended and a later run has started since; its outcome is no longer in maasflow reconcile status", adminCell(run.ID))
		}
		return false, nil
	})
}

func startedAfter(other *domain.ReconcileRun, run domain.ReconcileRun) bool {
	return other != nil && other.ID != run.ID && other.StartedAt.After(run.StartedAt)
}

func (r *adminRun) reconcileEnded(run domain.ReconcileRun, raw json.RawMessage) error {
	if r.machine() {
		r.emit(raw)
	} else {
		r.printRun(run)
	}
	if run.Status == domain.RunSucceeded {
		return nil
	}
	var failed []string
	for _, s := range run.Sites {
		if s.Error != "" {
			failed = append(failed, s.SiteID)
		}
	}
	fmt.Fprintf(r.env.stderr, "reconcile run %s ended %s: site(s) not checked: %s\n",
		adminCell(run.ID), adminCell(run.Status), adminCell(orDash(strings.Join(failed, ", "))))
	return &ExitCodeError{Code: adminExitError}
}

// reconcileStatus reads the status, typed and with each run as the API
// sent it.
func reconcileStatus(ctx context.Context, c *adminClient) (adminReconcileStatus, struct{ Last json.RawMessage }, error) {
	var (
		st  adminReconcileStatus
		raw struct{ Last json.RawMessage }
	)
	resp, err := c.do(ctx, http.MethodGet, adminReconcilePath+"/status", nil, nil)
	if err != nil {
		return st, raw, err
	}
	if err := resp.decode(&st); err != nil {
		return st, raw, err
	}
	if err := resp.decode(&raw); err != nil {
		return st, raw, err
	}
	return st, raw, nil
}

func runReconcileStatus(ctx context.Context, r *adminRun, _ []string) error {
	c, err := r.client()
	if err != nil {
		return err
	}
	return r.call(ctx, c, http.MethodGet, adminReconcilePath+"/status", nil, func(resp *adminResponse) error {
		var st adminReconcileStatus
		if err := resp.decode(&st); err != nil {
			return err
		}
		w := r.env.stdout
		f := newAdminFields(w)
		schedule := "none (runs only when asked)"
		if st.Interval != "" {
			schedule = "every " + st.Interval
		}
		f.add("Schedule", schedule)
		f.add("Next scheduled", adminTimePtr(st.NextScheduled))
		f.flush()
		for _, x := range []struct {
			title string
			run   *domain.ReconcileRun
		}{{"Current run", st.Current}, {"Last run", st.Last}} {
			fmt.Fprintf(w, "\n%s:\n", x.title)
			if x.run == nil {
				fmt.Fprintln(w, "  none")
				continue
			}
			r.printRun(*x.run)
		}
		return nil
	})
}

// printRun shows a run and a table of its sites.
func (r *adminRun) printRun(run domain.ReconcileRun) {
	f := newAdminFields(r.env.stdout)
	f.add("ID", run.ID)
	f.add("Status", run.Status)
	f.add("Trigger", run.Trigger)
	site := run.SiteID
	if site == "" {
		site = "all active sites"
	}
	f.add("Sites", site)
	f.add("Started", adminTime(run.StartedAt))
	f.add("Ended", adminTimePtr(run.EndedAt))
	f.add("Nodes checked", strconv.Itoa(run.NodesChecked))
	f.add("Open drift", driftCounts(run.DriftByKind))
	f.flush()
	if len(run.Sites) == 0 {
		return
	}
	t := r.table("SITE", "NODES", "OPEN_DRIFT", "NEW", "CLOSED", "MAAS_CALLS", "POWER_QUERIES", "ERROR")
	for _, s := range run.Sites {
		powerQueries := strconv.Itoa(s.PowerQueries)
		if s.PowerSkipped > 0 {
			powerQueries += fmt.Sprintf(" (+%d skipped)", s.PowerSkipped)
		}
		t.row(s.SiteID, strconv.Itoa(s.NodesChecked), driftCounts(s.DriftByKind), strconv.Itoa(s.New), strconv.Itoa(s.Closed),
			strconv.Itoa(s.MAASCalls), powerQueries, s.Error)
	}
	t.flush()
}

// driftCounts renders {"power_off":2,…} as "power_off=2 …", by kind.
func driftCounts(m map[string]int) string {
	kinds := make([]string, 0, len(m))
	for k, n := range m {
		if n > 0 {
			kinds = append(kinds, k)
		}
	}
	if len(kinds) == 0 {
		return "none"
	}
	sort.Strings(kinds)
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s=%d", k, m[k])
	}
	return strings.Join(parts, " ")
}

func runDriftList(ctx context.Context, r *adminRun, _ []string) error {
	c, q, err := r.listQuery(ctx, map[string]string{"kind": "kind", "node_id": "node", "state": "state", "cursor": "cursor"})
	if err != nil {
		return err
	}
	drift, next, printed, err := listItems[domain.DriftItem](ctx, r, c, adminDriftPath, q)
	if err != nil || printed {
		return err
	}
	t := r.table("NODE", "HOSTNAME", "KIND", "EXPECTED", "OBSERVED", "STATE", "FIRST_SEEN", "LAST_SEEN", "RESOLUTION")
	for _, d := range drift {
		res := ""
		if d.Resolution != nil {
			res = d.Resolution.Action + " by " + d.Resolution.By
		}
		t.row(d.NodeID, d.Hostname, d.Kind, d.Expected, d.Observed, d.State, adminTime(d.FirstSeen), adminTime(d.LastSeen), res)
	}
	t.flush()
	if next != "" {
		fmt.Fprintf(r.env.stderr, "more drift items: add --all, or --cursor %s\n", adminCell(next))
	}
	return nil
}

func runDriftResolve(ctx context.Context, r *adminRun, args []string) error {
	if err := r.requireFlags("kind", "action", "reason"); err != nil {
		return err
	}
	kind, action := r.str("kind"), r.str("action")
	c, err := r.client()
	if err != nil {
		return err
	}
	node, err := driftNodeID(ctx, c, args[0], kind)
	if err != nil {
		return err
	}
	body := map[string]string{"kind": kind, "action": action, "reason": r.str("reason")}
	return r.call(ctx, c, http.MethodPost, adminPath(adminDriftPath, node, "resolve"), body, func(resp *adminResponse) error {
		var d domain.DriftItem
		if err := resp.decode(&d); err != nil {
			return err
		}
		w := r.env.stdout
		fmt.Fprintf(w, "%s drift of node %s (%s) is %s (%s)\n",
			adminCell(d.Kind), adminCell(d.NodeID), adminCell(orDash(d.Hostname)), adminCell(d.State), adminCell(action))
		if d.Resolution == nil || d.Resolution.Detail == "" {
			return nil
		}
		if action != domain.DriftStart {
			fmt.Fprintf(w, "changed: %s\n", adminCell(d.Resolution.Detail))
			return nil
		}
		fmt.Fprintf(w, "started: %s\nfollow it with: maasflow decommission watch %s\n", adminCell(d.Resolution.Detail), adminCell(d.NodeID))
		return nil
	})
}

// driftNodeID resolves the subject of a drift item: a node id (also the
// maas: and onboarding: subjects) is used as it is; a host name is looked up
// among the open items of kind. A ref no open item carries is passed on as
// an id, and the API answers not_found when it has no such drift.
func driftNodeID(ctx context.Context, c *adminClient, ref, kind string) (string, error) {
	if isUUID(ref) || strings.Contains(ref, ":") {
		return ref, nil
	}
	q := url.Values{"kind": {kind}, "state": {domain.DriftOpen}, "limit": {strconv.Itoa(adminDriftPageLimit)}}
	var byHost []string
	for range adminDriftLookupPages {
		resp, err := c.do(ctx, http.MethodGet, adminDriftPath, q, nil)
		if err != nil {
			return "", err
		}
		var page struct {
			Items      []domain.DriftItem `json:"items"`
			NextCursor string             `json:"next_cursor"`
		}
		if err := resp.decode(&page); err != nil {
			return "", err
		}
		for _, d := range page.Items {
			if d.NodeID == ref {
				return ref, nil
			}
			if d.Hostname == ref {
				byHost = append(byHost, d.NodeID)
			}
		}
		if page.NextCursor == "" {
			break
		}
		q.Set("cursor", page.NextCursor)
	}
	switch len(byHost) {
	case 0:
		return ref, nil
	case 1:
		return byHost[0], nil
	default:
		sort.Strings(byHost)
		return "", &adminAmbiguousRefError{Kind: "node", Ref: ref, IDs: byHost}
	}
}

// completeDriftNodes proposes the nodes with open drift (of --kind, when
// given), each described by its host name and kind.
func completeDriftNodes(r *adminRun, _ []string) []string {
	c, err := r.client()
	if err != nil {
		return nil
	}
	q := url.Values{"state": {domain.DriftOpen}, "limit": {strconv.Itoa(adminDriftPageLimit)}}
	if k := r.str("kind"); k != "" {
		q.Set("kind", k)
	}
	resp, err := c.do(completionContext(r), http.MethodGet, adminDriftPath, q, nil)
	if err != nil {
		return nil
	}
	var page struct {
		Items []domain.DriftItem `json:"items"`
	}
	if resp.decode(&page) != nil {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, d := range page.Items {
		if seen[d.NodeID] {
			continue
		}
		seen[d.NodeID] = true
		out = append(out, d.NodeID+"\t"+d.Hostname+" "+d.Kind)
	}
	return out
}
