package main

import (
	"context"
	"fmt"
	"io"
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

// Reconciliation commands (docs/reconciliation.md).
const (
	adminReconcilePath = "/api/v1/admin/reconciliation"
	adminDriftPath     = adminReconcilePath + "/drift"
)

// reconcileCommand is `maasflow reconcile run|status`.
func (c *cli) reconcileCommand() *cobra.Command {
	return c.group("reconcile", "compare MAAS with maasflow's records",
		c.leaf(adminSpec{
			use: "run [--site SITE] [--wait]", short: "compare MAAS with maasflow's records now (a run under way is joined)",
			long: "Starts a reconcile run over every active site, or one. --wait polls until the run ended and\n" +
				"prints it; the exit code is 1 when a site could not be checked (status partial).",
			flags: func(fs *pflag.FlagSet) {
				fs.String("site", "", "only this site (id or name)")
				fs.Bool("wait", false, "wait for the run's outcome")
				fs.Duration("interval", 2*time.Second, "how often --wait polls")
			},
			run: runReconcileRun,
		}),
		c.leaf(adminSpec{use: "status", short: "show the last and the current reconcile run and the next scheduled one", run: runReconcileStatus}),
	)
}

// driftCommand is `maasflow drift list|resolve`.
func (c *cli) driftCommand() *cobra.Command {
	return c.group("drift", "what reconcile runs found, and the operator's decisions",
		c.leaf(adminSpec{
			use: "list [--site SITE] [--kind KIND] [--node NODE_ID] [--state open|closed]", short: "list drift items, newest first (a node's history with --node)",
			flags: func(fs *pflag.FlagSet) {
				fs.String("site", "", "site id or name")
				fs.String("kind", "", "drift kind, e.g. status_mismatch (docs/reconciliation.md)")
				fs.String("node", "", "node id, or maas:<system id>")
				fs.String("state", "", "open (default) or closed")
				fs.Int("limit", 0, "page size")
				fs.String("cursor", "", "next_cursor of the previous page")
			},
			run: runDriftList,
		}),
		c.leaf(adminSpec{
			use: "resolve NODE_ID --kind KIND --action acknowledge|adopt|start --reason TEXT", args: []string{"NODE_ID"},
			short: "acknowledge a node's drift, adopt what MAAS shows, or start the fitting recovery",
			flags: func(fs *pflag.FlagSet) {
				fs.String("kind", "", "the drift kind to resolve")
				fs.String("action", "", "acknowledge, adopt or start")
				fs.String("reason", "", "why (audited)")
			},
			run: runDriftResolve,
		}),
	)
}

type adminRunAnswer struct {
	domain.ReconcileRun
	Joined bool `json:"joined"`
}

type adminReconcileStatus struct {
	Current       *domain.ReconcileRun `json:"current"`
	Last          *domain.ReconcileRun `json:"last"`
	NextScheduled *time.Time           `json:"next_scheduled"`
	Interval      string               `json:"interval"`
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
	var body any
	if site := r.str("site"); site != "" {
		id, err := r.siteID(ctx, c, site)
		if err != nil {
			return err
		}
		body = map[string]string{"site_id": id}
	}
	var started adminRunAnswer
	if err := r.call(ctx, c, http.MethodPost, adminReconcilePath+"/run", body, func(resp *adminResponse) error {
		if err := resp.decode(&started); err != nil {
			return err
		}
		verb := "started"
		if started.Joined {
			verb = "joined (a run was under way)"
		}
		fmt.Fprintf(r.env.stdout, "reconcile run %s %s\n", adminCell(started.ID), verb)
		return nil
	}); err != nil {
		return err
	}
	if !r.boolean("wait") || r.machine() {
		return nil
	}
	for {
		resp, err := c.do(ctx, http.MethodGet, adminReconcilePath+"/status", nil, nil)
		if err != nil {
			return err
		}
		var st adminReconcileStatus
		if err := resp.decode(&st); err != nil {
			return err
		}
		if st.Last != nil && st.Last.ID == started.ID {
			printRun(r.env.stdout, *st.Last)
			if st.Last.Status != domain.RunSucceeded {
				return &adminExitCodeError{Code: adminExitError}
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-r.env.clock.After(interval):
		}
	}
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
		f.add("Schedule", orDash(st.Interval))
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
			printRun(w, *x.run)
		}
		return nil
	})
}

// printRun shows a run and its sites.
func printRun(w io.Writer, run domain.ReconcileRun) {
	f := newAdminFields(w)
	f.add("ID", run.ID)
	f.add("Status", run.Status)
	f.add("Trigger", run.Trigger)
	f.add("Site", orDash(run.SiteID))
	f.add("Started", adminTime(run.StartedAt))
	f.add("Ended", adminTimePtr(run.EndedAt))
	f.add("Nodes checked", strconv.Itoa(run.NodesChecked))
	f.add("Open drift", driftCounts(run.DriftByKind))
	f.flush()
	if len(run.Sites) == 0 {
		return
	}
	t := newAdminTable(w, "SITE", "NODES", "OPEN_DRIFT", "NEW", "CLOSED", "MAAS_CALLS", "POWER_QUERIES", "ERROR")
	for _, s := range run.Sites {
		t.row(s.SiteID, strconv.Itoa(s.NodesChecked), driftCounts(s.DriftByKind), strconv.Itoa(s.New), strconv.Itoa(s.Closed),
			strconv.Itoa(s.MAASCalls), strconv.Itoa(s.PowerQueries), orDash(s.Error))
	}
	t.flush()
}

// driftCounts renders {"power_off":2,…} as "power_off=2 …", by kind.
func driftCounts(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	kinds := make([]string, 0, len(m))
	for k := range m {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s=%d", k, m[k])
	}
	return strings.Join(parts, " ")
}

func runDriftList(ctx context.Context, r *adminRun, _ []string) error {
	q := url.Values{}
	for k, flag := range map[string]string{"kind": "kind", "node_id": "node", "state": "state", "cursor": "cursor"} {
		if v := r.str(flag); v != "" {
			q.Set(k, v)
		}
	}
	if err := r.limitQuery(q); err != nil {
		return err
	}
	c, err := r.client()
	if err != nil {
		return err
	}
	if site := r.str("site"); site != "" {
		id, err := r.siteID(ctx, c, site)
		if err != nil {
			return err
		}
		q.Set("site_id", id)
	}
	return r.callQuery(ctx, c, http.MethodGet, adminDriftPath, q, nil, func(resp *adminResponse) error {
		var page struct {
			Items      []domain.DriftItem `json:"items"`
			NextCursor string             `json:"next_cursor"`
		}
		if err := resp.decode(&page); err != nil {
			return err
		}
		t := r.table("NODE", "HOSTNAME", "KIND", "EXPECTED", "OBSERVED", "STATE", "FIRST_SEEN", "LAST_SEEN", "RESOLUTION")
		for _, d := range page.Items {
			res := "-"
			if d.Resolution != nil {
				res = d.Resolution.Action + " by " + d.Resolution.By
			}
			t.row(d.NodeID, d.Hostname, d.Kind, d.Expected, d.Observed, d.State, adminTime(d.FirstSeen), adminTime(d.LastSeen), res)
		}
		t.flush()
		if page.NextCursor != "" {
			fmt.Fprintf(r.env.stdout, "more: --cursor %s\n", page.NextCursor)
		}
		return nil
	})
}

func runDriftResolve(ctx context.Context, r *adminRun, args []string) error {
	if err := r.requireFlags("kind", "action", "reason"); err != nil {
		return err
	}
	action := r.str("action")
	body := map[string]string{"kind": r.str("kind"), "action": action, "reason": r.str("reason")}
	c, err := r.client()
	if err != nil {
		return err
	}
	return r.call(ctx, c, http.MethodPost, adminPath(adminDriftPath, args[0], "resolve"), body, func(resp *adminResponse) error {
		var d domain.DriftItem
		if err := resp.decode(&d); err != nil {
			return err
		}
		w := r.env.stdout
		fmt.Fprintf(w, "%s drift of node %s is %s (%s)\n", adminCell(d.Kind), adminCell(d.NodeID), adminCell(d.State), adminCell(action))
		if d.Resolution != nil && d.Resolution.Detail != "" {
			fmt.Fprintf(w, "changed: %s\n", adminCell(d.Resolution.Detail))
		}
		return nil
	})
}
