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

	"github.com/maasflow/maasflow/shared/domain"
)

const (
	adminNodesPath         = "/api/v1/admin/nodes"
	adminDecommissionsPath = "/api/v1/admin/decommissions"
)

// nodeCommands and decommissionCommands are the node lifecycle's verbs.
func nodeCommands() []adminCommand {
	return []adminCommand{
		{"nodes list", "[--status S] [--site SITE_ID] [--sku SKU_ID] [--hostname HOST] [--limit N] [--cursor C]", "list nodes, newest first", runNodesList},
		{"nodes get", "NODE_ID", "show a node: status, SKU, site, MAAS system id, allocations, last onboarding and decommission", runNodesGet},
		{"nodes retire", "NODE_ID", "make an active node unschedulable (refused while an allocation is in use)", lifecycleVerb("retire")},
		{"nodes reactivate", "NODE_ID", "return a retired node to service", lifecycleVerb("reactivate")},
		{"nodes remove", "NODE_ID", "end a retired node's identity for good (revokes every token)", lifecycleVerb("remove")},
		{"nodes reissue-bundle", "NODE_ID --out FILE|-", "reissue the node's bootstrap bundle: a new single-use token, every earlier one revoked; the bundle (with its token) is written to FILE with mode 0600, or to stdout with -", runNodesReissue},

		{"decommission start", "NODE_ID --mode reimage|full|storage_cleanup [--reason TEXT] [--wait] [--interval 5s]", "drain, release with erase, then reimage, remove or retire the node; --wait follows it (exit 0 completed, 3 manual intervention, 4 failed)", runDecommissionStart},
		{"decommission list", "[--status S] [--site SITE_ID] [--node NODE_ID] [--limit N] [--cursor C]", "list decommissions, newest first", runDecommissionList},
		{"decommission get", "DECOMMISSION_ID", "show a decommission: status, stage, erase evidence and timeline", runDecommissionGet},
		{"decommission watch", "DECOMMISSION_ID [--interval 5s]", "follow a decommission until it ends (exit codes as start --wait)", runDecommissionWatch},
	}
}

func runNodesList(ctx context.Context, r *adminRun, args []string) int {
	fs := r.flags()
	status := fs.String("status", "", "")
	site := fs.String("site", "", "")
	sku := fs.String("sku", "", "")
	host := fs.String("hostname", "", "")
	limit := fs.Int("limit", 0, "")
	cursor := fs.String("cursor", "", "")
	if _, err := r.parse(fs, args, 0); err != nil {
		return r.fail(err)
	}
	q := url.Values{}
	for k, v := range map[string]string{"status": *status, "site_id": *site, "sku_id": *sku, "hostname": *host, "cursor": *cursor} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if err := setLimit(fs, *limit, q); err != nil {
		return r.fail(err)
	}
	return r.callQuery(ctx, http.MethodGet, adminNodesPath, q, nil, func(resp *adminResponse) error {
		var page struct {
			Items      []domain.Node `json:"items"`
			NextCursor string        `json:"next_cursor"`
		}
		if err := resp.decode(&page); err != nil {
			return err
		}
		t := newAdminTable(r.env.stdout, "ID", "STATUS", "HOSTNAME", "SITE", "SKU", "MAAS_SYSTEM_ID", "UPDATED")
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

func runNodesGet(ctx context.Context, r *adminRun, args []string) int {
	pos, err := r.parse(r.flags(), args, 1)
	if err != nil {
		return r.fail(err)
	}
	return r.call(ctx, http.MethodGet, adminPath(adminNodesPath, pos[0]), nil, func(resp *adminResponse) error {
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
		t := newAdminTable(w, "ID", "STATE", "UPDATED")
		for _, a := range d.Allocations {
			t.row(a.ID, a.State, adminTime(a.UpdatedAt))
		}
		t.flush()
		return nil
	})
}

// lifecycleVerb is retire, reactivate or remove: POST …/nodes/{id}/<verb>.
func lifecycleVerb(verb string) func(context.Context, *adminRun, []string) int {
	return func(ctx context.Context, r *adminRun, args []string) int {
		pos, err := r.parse(r.flags(), args, 1)
		if err != nil {
			return r.fail(err)
		}
		return r.call(ctx, http.MethodPost, adminPath(adminNodesPath, pos[0], verb), nil, func(resp *adminResponse) error {
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
func runNodesReissue(ctx context.Context, r *adminRun, args []string) int {
	fs := r.flags()
	out := fs.String("out", "", "")
	pos, err := r.parse(fs, args, 1)
	if err != nil {
		return r.fail(err)
	}
	if *out == "" {
		return r.fail(usagef("--out FILE (or - for stdout) is required: the bundle holds the node's enrollment token"))
	}
	c, err := r.client()
	if err != nil {
		return r.fail(err)
	}
	resp, err := c.do(ctx, http.MethodPost, adminPath(adminNodesPath, pos[0], "bootstrap-bundle"), nil, nil)
	if err != nil {
		return r.fail(err)
	}
	var body struct {
		NodeID    string          `json:"node_id"`
		ExpiresAt time.Time       `json:"expires_at"`
		Bundle    json.RawMessage `json:"bootstrap_bundle"`
	}
	if err := resp.decode(&body); err != nil {
		return r.fail(err)
	}
	if *out == "-" {
		r.emit(body.Bundle)
		return adminExitOK
	}
	if err := writeSecretFile(*out, body.Bundle); err != nil {
		return r.fail(err)
	}
	fmt.Fprintf(r.env.stderr, "bundle for node %s written to %s (mode 0600); its token expires %s; earlier tokens are revoked\n",
		adminCell(body.NodeID), adminCell(*out), adminTime(body.ExpiresAt))
	return adminExitOK
}

// writeSecretFile creates path with mode 0600; an existing file is kept.
func writeSecretFile(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600) //nolint:gosec // G304: the operator names the file
	if err != nil {
		return fmt.Errorf("write bundle: %w", err)
	}
	if _, err := f.Write(append(data, '\n')); err != nil {
		_ = f.Close()
		return fmt.Errorf("write bundle: %w", err)
	}
	return f.Close()
}

func runDecommissionStart(ctx context.Context, r *adminRun, args []string) int {
	fs := r.flags()
	mode := fs.String("mode", "", "")
	reason := fs.String("reason", "", "")
	wait := fs.Bool("wait", false, "")
	interval := fs.Duration("interval", adminDefaultInterval, "")
	pos, err := r.parse(fs, args, 1)
	if err != nil {
		return r.fail(err)
	}
	if *interval <= 0 {
		return r.fail(usagef("--interval must be positive"))
	}
	path := adminPath(adminNodesPath, pos[0], "decommission")
	body := map[string]string{"mode": *mode}
	switch *mode {
	case domain.DecommissionReimage, domain.DecommissionFull:
	case domain.DecommissionStorageCleanup:
		path, body = adminPath(adminNodesPath, pos[0], "storage-cleanup"), map[string]string{}
	default:
		return r.fail(usagef("--mode must be reimage, full or storage_cleanup"))
	}
	if *reason != "" {
		body["reason"] = *reason
	}
	c, err := r.client()
	if err != nil {
		return r.fail(err)
	}
	resp, err := c.do(ctx, http.MethodPost, path, nil, body)
	if err != nil {
		return r.fail(err)
	}
	var d domain.Decommission
	if err := resp.decode(&d); err != nil {
		return r.fail(err)
	}
	if r.json() {
		r.emit(resp.Body)
	} else {
		fmt.Fprintf(r.env.stdout, "decommission %s (%s) accepted for node %s\n", adminCell(d.ID), adminCell(d.Mode), adminCell(d.NodeID))
		if !*wait {
			fmt.Fprintf(r.env.stdout, "follow it with: maasflow decommission watch %s\n", adminCell(d.ID))
		}
	}
	if !*wait {
		return adminExitOK
	}
	return r.watchDecommission(ctx, c, d.ID, *interval)
}

func runDecommissionList(ctx context.Context, r *adminRun, args []string) int {
	fs := r.flags()
	status := fs.String("status", "", "")
	site := fs.String("site", "", "")
	node := fs.String("node", "", "")
	limit := fs.Int("limit", 0, "")
	cursor := fs.String("cursor", "", "")
	if _, err := r.parse(fs, args, 0); err != nil {
		return r.fail(err)
	}
	q := url.Values{}
	for k, v := range map[string]string{"status": *status, "site_id": *site, "node_id": *node, "cursor": *cursor} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if err := setLimit(fs, *limit, q); err != nil {
		return r.fail(err)
	}
	return r.callQuery(ctx, http.MethodGet, adminDecommissionsPath, q, nil, func(resp *adminResponse) error {
		var page struct {
			Items      []domain.Decommission `json:"items"`
			NextCursor string                `json:"next_cursor"`
		}
		if err := resp.decode(&page); err != nil {
			return err
		}
		t := newAdminTable(r.env.stdout, "ID", "MODE", "STATUS", "STAGE", "NODE", "HOSTNAME", "DISKS", "UPDATED")
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

func runDecommissionGet(ctx context.Context, r *adminRun, args []string) int {
	pos, err := r.parse(r.flags(), args, 1)
	if err != nil {
		return r.fail(err)
	}
	return r.call(ctx, http.MethodGet, adminPath(adminDecommissionsPath, pos[0]), nil, func(resp *adminResponse) error {
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
		t.row(adminTime(e.Time), e.Kind, e.Stage, e.Outcome, e.Source, e.Detail)
	}
	t.flush()
}

func runDecommissionWatch(ctx context.Context, r *adminRun, args []string) int {
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
	return r.watchDecommission(ctx, c, pos[0], *interval)
}

// watchDecommission polls a decommission until it ends, printing every
// change of status or stage, and returns the onboarding watch's exit codes.
func (r *adminRun) watchDecommission(ctx context.Context, c *adminClient, id string, interval time.Duration) int {
	path := adminPath(adminDecommissionsPath, id)
	prev, failures := "", 0
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
			var d domain.Decommission
			if err := resp.decode(&d); err != nil {
				return r.fail(err)
			}
			if snap := string(d.Status) + "/" + string(d.Stage); snap != prev {
				prev = snap
				if r.json() {
					r.emit(resp.Body)
				} else {
					fmt.Fprintln(r.env.stdout, adminCell(fmt.Sprintf("%s  %-19s  %-16s  disks=%s", adminTime(d.UpdatedAt), d.Status, d.Stage, orDash(d.Erase.Outcome))))
				}
			}
			if code, done := adminOutcome(d.Status); done {
				if !r.json() && d.Error != nil {
					fmt.Fprintf(r.env.stdout, "decommission %s %s: %s\n", adminCell(d.ID), adminCell(string(d.Status)), adminCell(d.Error.Code+": "+d.Error.Message))
				}
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
