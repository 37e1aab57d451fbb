package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/maasflow/maasflow/shared/domain"
)

const (
	adminNodesPath         = "/api/v1/admin/nodes"
	adminDecommissionsPath = "/api/v1/admin/decommissions"
)

// nodesCommand is the node lifecycle (seed 004).
func (c *cli) nodesCommand() *cobra.Command {
	node := []string{"NODE"}
	return c.group("nodes", "the node inventory and its lifecycle",
		c.leaf(adminSpec{use: "list", short: "list nodes, newest first", run: runNodesList,
			flags: func(fs *pflag.FlagSet) {
				stringFlags(fs, "status", "onboarding, active, decommissioning, retired or removed", "site", "site id",
					"sku", "SKU id", "hostname", "host name", "cursor", "next_cursor of the previous page")
				fs.Int("limit", 0, "page size (1-200)")
			}}),
		c.leaf(adminSpec{use: "get NODE", short: "show a node: status, SKU, site, MAAS system id, allocations, last onboarding and decommission",
			args: node, run: runNodesGet}),
		c.leaf(adminSpec{use: "retire NODE", short: "make an active node unschedulable (refused while an allocation is in use)", args: node, run: lifecycleVerb("retire")}),
		c.leaf(adminSpec{use: "reactivate NODE", short: "return a retired node to service", args: node, run: lifecycleVerb("reactivate")}),
		c.leaf(adminSpec{use: "remove NODE", short: "end a retired node's identity for good (revokes every token)", args: node, run: lifecycleVerb("remove")}),
		c.leaf(adminSpec{use: "reissue-bundle NODE --out FILE|-", args: node, run: runNodesReissue,
			short: "reissue the node's bootstrap bundle: a new single-use token, every earlier one revoked",
			long: "The bundle holds the node's new enrollment token: it is written to FILE, created with mode 0600 " +
				"and never overwritten, or to stdout with --out -.",
			flags: func(fs *pflag.FlagSet) { fs.String("out", "", "file to create (mode 0600), or - for stdout") }}),
	)
}

// decommissionCommand starts and follows decommissions.
func (c *cli) decommissionCommand() *cobra.Command {
	watchFlags := func(fs *pflag.FlagSet) { fs.Duration("interval", adminDefaultInterval, "poll interval") }
	return c.group("decommission", "reimage, fully decommission or clean up a node",
		c.leaf(adminSpec{use: "start NODE --mode reimage|full|storage_cleanup", args: []string{"NODE"}, run: runDecommissionStart,
			short: "drain, release with erase, then reimage, remove or retire the node",
			long:  "--wait follows it to the end: exit 0 completed, 3 manual intervention, 4 failed.",
			flags: func(fs *pflag.FlagSet) {
				fs.String("mode", "", "reimage, full or storage_cleanup")
				fs.String("reason", "", "why, for the record")
				fs.Bool("wait", false, "follow it until it ends")
				watchFlags(fs)
			}}),
		c.leaf(adminSpec{use: "list", short: "list decommissions, newest first", run: runDecommissionList,
			flags: func(fs *pflag.FlagSet) {
				stringFlags(fs, "status", "status", "site", "site id", "node", "node id", "cursor", "next_cursor of the previous page")
				fs.Int("limit", 0, "page size (1-200)")
			}}),
		c.leaf(adminSpec{use: "get DECOMMISSION", short: "show a decommission: status, stage, erase evidence and timeline",
			args: []string{"DECOMMISSION"}, run: runDecommissionGet}),
		c.leaf(adminSpec{use: "watch DECOMMISSION", short: "follow a decommission until it ends (exit codes as start --wait)",
			args: []string{"DECOMMISSION"}, run: runDecommissionWatch, flags: watchFlags}),
	)
}

func listQuery(r *adminRun, flagToParam map[string]string) (url.Values, error) {
	q := url.Values{}
	for flag, param := range flagToParam {
		if v := r.str(flag); v != "" {
			q.Set(param, v)
		}
	}
	return q, r.limitQuery(q)
}

func runNodesList(ctx context.Context, r *adminRun, _ []string) error {
	q, err := listQuery(r, map[string]string{"status": "status", "site": "site_id", "sku": "sku_id", "hostname": "hostname", "cursor": "cursor"})
	if err != nil {
		return err
	}
	c, err := r.client()
	if err != nil {
		return err
	}
	return r.callQuery(ctx, c, http.MethodGet, adminNodesPath, q, nil, func(resp *adminResponse) error {
		var page struct {
			Items      []domain.Node `json:"items"`
			NextCursor string        `json:"next_cursor"`
		}
		if err := resp.decode(&page); err != nil {
			return err
		}
		t := r.table("ID", "STATUS", "HOSTNAME", "SITE", "SKU", "MAAS_SYSTEM_ID", "UPDATED")
		for _, n := range page.Items {
			t.row(n.ID, n.Status, n.Hostname, n.SiteID, n.SKUID, n.MAASSystemID, adminTime(n.UpdatedAt))
		}
		t.flush()
		if page.NextCursor != "" {
			fmt.Fprintf(r.env.stderr, "more nodes: --cursor %s\n", adminCell(page.NextCursor))
		}
		return nil
	})
}

// adminNodeDetail is GET …/nodes/{id}.
type adminNodeDetail struct {
	domain.Node
	LastOnboarding   *adminWorkflowRef   `json:"last_onboarding"`
	LastDecommission *adminWorkflowRef   `json:"last_decommission"`
	Allocations      []domain.Allocation `json:"allocations"`
}

type adminWorkflowRef struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Stage  string `json:"stage"`
	Mode   string `json:"mode"`
}

func (w *adminWorkflowRef) String() string {
	if w == nil {
		return "-"
	}
	s := fmt.Sprintf("%s (%s at %s)", w.ID, w.Status, w.Stage)
	if w.Mode != "" {
		s = w.Mode + " " + s
	}
	return s
}

func runNodesGet(ctx context.Context, r *adminRun, args []string) error {
	c, err := r.client()
	if err != nil {
		return err
	}
	return r.call(ctx, c, http.MethodGet, adminPath(adminNodesPath, args[0]), nil, func(resp *adminResponse) error {
		var d adminNodeDetail
		if err := resp.decode(&d); err != nil {
			return err
		}
		w := r.env.stdout
		f := newAdminFields(w)
		f.add("ID", d.ID)
		f.add("Status", d.Status)
		f.add("Hostname", d.Hostname)
		f.add("Site", d.SiteID)
		f.add("SKU", d.SKUID)
		f.add("MAAS system ID", d.MAASSystemID)
		f.add("Enrolled", adminTimePtr(d.EnrolledAt))
		f.add("Last onboarding", d.LastOnboarding.String())
		f.add("Last decommission", d.LastDecommission.String())
		f.flush()
		fmt.Fprintln(w, "\nAllocations:")
		if len(d.Allocations) == 0 {
			fmt.Fprintln(w, "  (none)")
			return nil
		}
		t := r.table("ID", "STATE", "UPDATED")
		for _, a := range d.Allocations {
			t.row(a.ID, a.State, adminTime(a.UpdatedAt))
		}
		t.flush()
		return nil
	})
}

// lifecycleVerb is retire, reactivate or remove: POST …/nodes/{id}/<verb>.
func lifecycleVerb(verb string) func(context.Context, *adminRun, []string) error {
	return func(ctx context.Context, r *adminRun, args []string) error {
		c, err := r.client()
		if err != nil {
			return err
		}
		return r.call(ctx, c, http.MethodPost, adminPath(adminNodesPath, args[0], verb), nil, func(resp *adminResponse) error {
			var n domain.Node
			if err := resp.decode(&n); err != nil {
				return err
			}
			fmt.Fprintf(r.env.stdout, "node %s is %s\n", adminCell(n.ID), adminCell(n.Status))
			return nil
		})
	}
}

// runNodesReissue asks for a new bootstrap bundle. The answer carries the
// node's new enrollment token, so it never goes to a terminal unasked:
// --out names a file (created 0600, not overwritten) or - for stdout.
func runNodesReissue(ctx context.Context, r *adminRun, args []string) error {
	out := r.str("out")
	if out == "" {
		return usagef("--out FILE (or - for stdout) is required: the bundle holds the node's enrollment token")
	}
	c, err := r.client()
	if err != nil {
		return err
	}
	resp, err := c.do(ctx, http.MethodPost, adminPath(adminNodesPath, args[0], "bootstrap-bundle"), nil, nil)
	if err != nil {
		return err
	}
	var body struct {
		NodeID    string          `json:"node_id"`
		ExpiresAt time.Time       `json:"expires_at"`
		Bundle    json.RawMessage `json:"bootstrap_bundle"`
	}
	if err := resp.decode(&body); err != nil {
		return err
	}
	if out == "-" {
		r.emit(body.Bundle)
		return nil
	}
	if err := writeSecretFile(out, body.Bundle); err != nil {
		return err
	}
	fmt.Fprintf(r.env.stderr, "bundle for node %s written to %s (mode 0600); its token expires %s; earlier tokens are revoked\n",
		adminCell(body.NodeID), adminCell(out), adminTime(body.ExpiresAt))
	return nil
}

// writeSecretFile creates path with mode 0600; an existing file is kept.
func writeSecretFile(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("write bundle: %w", err)
	}
	if _, err := f.Write(append(data, '\n')); err != nil {
		_ = f.Close()
		return fmt.Errorf("write bundle: %w", err)
	}
	return f.Close()
}

func runDecommissionStart(ctx context.Context, r *adminRun, args []string) error {
	interval, err := r.positiveInterval()
	if err != nil {
		return err
	}
	mode := r.str("mode")
	path := adminPath(adminNodesPath, args[0], "decommission")
	body := map[string]string{"mode": mode}
	switch mode {
	case domain.DecommissionReimage, domain.DecommissionFull:
	case domain.DecommissionStorageCleanup:
		path, body = adminPath(adminNodesPath, args[0], "storage-cleanup"), map[string]string{}
	default:
		return usagef("--mode must be reimage, full or storage_cleanup")
	}
	if reason := r.str("reason"); reason != "" {
		body["reason"] = reason
	}
	c, err := r.client()
	if err != nil {
		return err
	}
	resp, err := c.do(ctx, http.MethodPost, path, nil, body)
	if err != nil {
		return err
	}
	var d domain.Decommission
	if err := resp.decode(&d); err != nil {
		return err
	}
	wait := r.boolean("wait")
	if r.machine() {
		r.emit(resp.Body)
	} else {
		fmt.Fprintf(r.env.stdout, "decommission %s (%s) accepted for node %s\n", adminCell(d.ID), adminCell(d.Mode), adminCell(d.NodeID))
		if !wait {
			fmt.Fprintf(r.env.stdout, "follow it with: maasflow decommission watch %s\n", adminCell(d.ID))
		}
	}
	if !wait {
		return nil
	}
	return r.watchDecommission(ctx, c, d.ID, interval)
}

func runDecommissionList(ctx context.Context, r *adminRun, _ []string) error {
	q, err := listQuery(r, map[string]string{"status": "status", "site": "site_id", "node": "node_id", "cursor": "cursor"})
	if err != nil {
		return err
	}
	c, err := r.client()
	if err != nil {
		return err
	}
	return r.callQuery(ctx, c, http.MethodGet, adminDecommissionsPath, q, nil, func(resp *adminResponse) error {
		var page struct {
			Items      []domain.Decommission `json:"items"`
			NextCursor string                `json:"next_cursor"`
		}
		if err := resp.decode(&page); err != nil {
			return err
		}
		t := r.table("ID", "MODE", "STATUS", "STAGE", "NODE", "HOSTNAME", "DISKS", "UPDATED")
		for _, d := range page.Items {
			t.row(d.ID, d.Mode, string(d.Status), string(d.Stage), d.NodeID, d.Hostname, orDash(d.Erase.Outcome), adminTime(d.UpdatedAt))
		}
		t.flush()
		if page.NextCursor != "" {
			fmt.Fprintf(r.env.stderr, "more decommissions: --cursor %s\n", adminCell(page.NextCursor))
		}
		return nil
	})
}

// adminDecommissionDetail is GET …/decommissions/{id}.
type adminDecommissionDetail struct {
	domain.Decommission
	Timeline []adminTimelineEntry `json:"timeline"`
}

func runDecommissionGet(ctx context.Context, r *adminRun, args []string) error {
	c, err := r.client()
	if err != nil {
		return err
	}
	return r.call(ctx, c, http.MethodGet, adminPath(adminDecommissionsPath, args[0]), nil, func(resp *adminResponse) error {
		var d adminDecommissionDetail
		if err := resp.decode(&d); err != nil {
			return err
		}
		printDecommission(r.env.stdout, d)
		return nil
	})
}

func printDecommission(w io.Writer, d adminDecommissionDetail) {
	f := newAdminFields(w)
	f.add("ID", d.ID)
	f.add("Mode", d.Mode)
	f.add("Status", string(d.Status))
	f.add("Stage", string(d.Stage))
	f.add("Attempt", strconv.Itoa(d.Attempt))
	f.add("Node", d.NodeID+" ("+d.Hostname+")")
	f.add("MAAS system ID", d.MAASSystemID)
	f.add("Machine deleted", strconv.FormatBool(d.MachineDeleted))
	f.add("Reimage onboarding", orDash(d.OnboardingID))
	f.add("Erase asked", orDash(d.Erase.Mode))
	f.add("Disks", orDash(d.Erase.Outcome))
	f.add("Erase detail", orDash(d.Erase.Detail))
	if d.Erase.Fallback {
		f.add("Release fallback", "yes: "+d.Erase.FallbackReason)
	}
	if d.Error != nil {
		f.add("Error", d.Error.Code+": "+d.Error.Message)
	}
	f.add("Created", adminTime(d.CreatedAt)+" by "+orDash(d.CreatedBy))
	f.add("Completed", adminTimePtr(d.CompletedAt))
	f.flush()
	for _, e := range d.Erase.ScriptResults {
		fmt.Fprintf(w, "release script %s: %s\n", adminCell(e.Name), adminCell(e.Status))
	}
	fmt.Fprintln(w, "\nTimeline:")
	t := newAdminTable(w, "TIME", "KIND", "STAGE", "OUTCOME", "SOURCE", "DETAIL")
	for _, e := range d.Timeline {
		t.row(adminTime(e.Time), string(e.Kind), e.Stage, e.Outcome, e.Source, e.Detail)
	}
	t.flush()
}

func runDecommissionWatch(ctx context.Context, r *adminRun, args []string) error {
	interval, err := r.positiveInterval()
	if err != nil {
		return err
	}
	c, err := r.client()
	if err != nil {
		return err
	}
	return r.watchDecommission(ctx, c, args[0], interval)
}

// watchDecommission polls a decommission until it ends, printing every
// change of status or stage, and ends with the onboarding watch's exit
// codes.
func (r *adminRun) watchDecommission(ctx context.Context, c *adminClient, id string, interval time.Duration) error {
	path := adminPath(adminDecommissionsPath, id)
	prev, failures := "", 0
	for {
		resp, err := c.do(ctx, http.MethodGet, path, nil, nil)
		switch {
		case err != nil && isTransient(err) && failures < adminWatchMaxFailures:
			failures++
			fmt.Fprintf(r.env.stderr, "warning: poll %d/%d failed, retrying in %s: %s\n", failures, adminWatchMaxFailures, interval, adminCell(err.Error()))
		case err != nil:
			return err
		default:
			failures = 0
			var d domain.Decommission
			if err := resp.decode(&d); err != nil {
				return err
			}
			if snap := string(d.Status) + "/" + string(d.Stage); snap != prev {
				prev = snap
				if r.machine() {
					r.emit(resp.Body)
				} else {
					fmt.Fprintln(r.env.stdout, adminCell(fmt.Sprintf("%s  %-19s  %-16s  disks=%s", adminTime(d.UpdatedAt), d.Status, d.Stage, orDash(d.Erase.Outcome))))
				}
			}
			if code, done := adminOutcome(string(d.Status)); done {
				if !r.machine() && d.Error != nil {
					fmt.Fprintf(r.env.stdout, "decommission %s %s: %s\n", adminCell(d.ID), adminCell(string(d.Status)), adminCell(d.Error.Code+": "+d.Error.Message))
				}
				if code != adminExitOK {
					return &adminExitCodeError{Code: code}
				}
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-r.env.clock.After(interval):
		}
	}
}
