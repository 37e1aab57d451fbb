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

	"github.com/maasflow/maasflow/shared/domain"
)

// Reconciliation commands (docs/reconciliation.md).
const (
	adminReconcilePath = "/api/v1/admin/reconciliation"
	adminDriftPath     = adminReconcilePath + "/drift"
)

// reconcileCommands are the reconcile and drift commands, in usage order.
func reconcileCommands() []adminCommand {
	return []adminCommand{
		{"reconcile run", "[--site SITE_ID] [--wait] [--interval 2s]", "compare MAAS with maasflow's records now (a run under way is joined); --wait waits for its outcome", runReconcileRun},
		{"reconcile status", "", "show the last and the current reconcile run and the next scheduled one", runReconcileStatus},
		{"drift list", "[--site SITE_ID] [--kind KIND] [--node NODE_ID] [--state open|closed] [--limit N] [--cursor C]", "list drift items, newest first (a node's history with --node)", runDriftList},
		{"drift resolve", "NODE_ID --kind KIND --action acknowledge|adopt|start --reason TEXT", "acknowledge a node's drift, adopt what MAAS shows, or start the fitting recovery", runDriftResolve},
	}
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

func runReconcileRun(ctx context.Context, r *adminRun, args []string) int {
	fs := r.flags()
	site := fs.String("site", "", "")
	wait := fs.Bool("wait", false, "")
	interval := fs.Duration("interval", 2*time.Second, "")
	if _, err := r.parse(fs, args, 0); err != nil {
		return r.fail(err)
	}
	if *interval <= 0 {
		return r.fail(usagef("--interval must be positive"))
	}
	var body any
	if *site != "" {
		body = map[string]string{"site_id": *site}
	}
	var started adminRunAnswer
	code := r.call(ctx, http.MethodPost, adminReconcilePath+"/run", body, func(resp *adminResponse) error {
		if err := resp.decode(&started); err != nil {
			return err
		}
		verb := "started"
		if started.Joined {
			verb = "joined (a run was under way)"
		}
		fmt.Fprintf(r.env.stdout, "reconcile run %s %s\n", adminCell(started.ID), verb)
		return nil
	})
	if code != adminExitOK || !*wait || r.json() {
		return code
	}
	c, err := r.client()
	if err != nil {
		return r.fail(err)
	}
	for {
		resp, err := c.do(ctx, http.MethodGet, adminReconcilePath+"/status", nil, nil)
		if err != nil {
			return r.fail(err)
		}
		var st adminReconcileStatus
		if err := resp.decode(&st); err != nil {
			return r.fail(err)
		}
		if st.Last != nil && st.Last.ID == started.ID {
			printRun(r.env.stdout, *st.Last)
			if st.Last.Status != domain.RunSucceeded {
				return adminExitError
			}
			return adminExitOK
		}
		select {
		case <-ctx.Done():
			return r.fail(ctx.Err())
		case <-r.env.clock.After(*interval):
		}
	}
}

func runReconcileStatus(ctx context.Context, r *adminRun, args []string) int {
	if _, err := r.parse(r.flags(), args, 0); err != nil {
		return r.fail(err)
	}
	return r.call(ctx, http.MethodGet, adminReconcilePath+"/status", nil, func(resp *adminResponse) error {
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

func runDriftList(ctx context.Context, r *adminRun, args []string) int {
	fs := r.flags()
	site := fs.String("site", "", "")
	kind := fs.String("kind", "", "")
	node := fs.String("node", "", "")
	state := fs.String("state", "", "")
	limit := fs.Int("limit", 0, "")
	cursor := fs.String("cursor", "", "")
	if _, err := r.parse(fs, args, 0); err != nil {
		return r.fail(err)
	}
	q := url.Values{}
	for k, v := range map[string]string{"site_id": *site, "kind": *kind, "node_id": *node, "state": *state, "cursor": *cursor} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if err := setLimit(fs, *limit, q); err != nil {
		return r.fail(err)
	}
	return r.callQuery(ctx, http.MethodGet, adminDriftPath, q, nil, func(resp *adminResponse) error {
		var page struct {
			Items      []domain.DriftItem `json:"items"`
			NextCursor string             `json:"next_cursor"`
		}
		if err := resp.decode(&page); err != nil {
			return err
		}
		t := newAdminTable(r.env.stdout, "NODE", "HOSTNAME", "KIND", "EXPECTED", "OBSERVED", "STATE", "FIRST_SEEN", "LAST_SEEN", "RESOLUTION")
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

func runDriftResolve(ctx context.Context, r *adminRun, args []string) int {
	fs := r.flags()
	kind := fs.String("kind", "", "")
	action := fs.String("action", "", "")
	reason := fs.String("reason", "", "")
	pos, err := r.parse(fs, args, 1)
	if err != nil {
		return r.fail(err)
	}
	for name, v := range map[string]string{"kind": *kind, "action": *action, "reason": *reason} {
		if v == "" {
			return r.fail(usagef("--%s is required", name))
		}
	}
	body := map[string]string{"kind": *kind, "action": *action, "reason": *reason}
	return r.call(ctx, http.MethodPost, adminPath(adminDriftPath, pos[0], "resolve"), body, func(resp *adminResponse) error {
		var d domain.DriftItem
		if err := resp.decode(&d); err != nil {
			return err
		}
		w := r.env.stdout
		fmt.Fprintf(w, "%s drift of node %s is %s (%s)\n", adminCell(d.Kind), adminCell(d.NodeID), adminCell(d.State), adminCell(*action))
		if d.Resolution != nil && d.Resolution.Detail != "" {
			fmt.Fprintf(w, "changed: %s\n", adminCell(d.Resolution.Detail))
		}
		return nil
	})
}
