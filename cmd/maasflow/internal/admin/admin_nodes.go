package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/maasflow/maasflow/client"
	"github.com/maasflow/maasflow/shared/domain"
)

// Node lifecycle and decommission commands (docs/cli.md "Nodes and
// decommissions").
const (
	adminNodesPath         = "/api/v1/admin/nodes"
	adminDecommissionsPath = "/api/v1/admin/decommissions"
)

var nodeStatuses = []string{domain.NodeOnboarding, domain.NodeActive, domain.NodeDecommissioning, domain.NodeRetired, domain.NodeRemoved}

// adminNodeDetail is GET …/nodes/{id}.
// adminNamedNode is a node of GET …/nodes, named.
type adminNamedNode struct {
	domain.Node
	SiteName string `json:"site_name,omitempty"`
}

type adminNodeDetail struct {
	domain.Node
	SiteName         string              `json:"site_name,omitempty"`
	LastOnboarding   *adminWorkflowRef   `json:"last_onboarding"`
	LastDecommission *adminWorkflowRef   `json:"last_decommission"`
	Allocations      []domain.Allocation `json:"allocations"`
}

// adminWorkflowRef summarises a node's last onboarding or decommission.
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

// adminDecommissionDetail is GET …/decommissions/{id}.
type adminDecommissionDetail struct {
	domain.Decommission
	AllowedOperations []string             `json:"allowed_operations"`
	Timeline          []adminTimelineEntry `json:"timeline"`
}

func (c *cli) nodesCommand() *cobra.Command {
	node := []string{"NODE"}
	list := c.leaf(adminSpec{
		use: "list", short: "list nodes, newest first; --all follows every page",
		flags: func(fs *pflag.FlagSet) {
			fs.String("status", "", "only this status (onboarding, active, decommissioning, retired, removed)")
			fs.String("site", "", "only this site (id or name)")
			fs.String("sku", "", "only this SKU")
			fs.String("hostname", "", "only this host")
			pageFlags(fs, "page size (default: the API's)")
		},
		run: runNodesList,
	})
	_ = list.RegisterFlagCompletionFunc("status", cobra.FixedCompletions(nodeStatuses, cobra.ShellCompDirectiveNoFileComp))
	_ = list.RegisterFlagCompletionFunc("site", c.flagCompletion(completeSites))
	_ = list.RegisterFlagCompletionFunc("sku", c.flagCompletion(completeSKUs))
	verb := func(name, short string) *cobra.Command {
		return c.leaf(adminSpec{use: name + " NODE", short: short, args: node, run: lifecycleVerb(name)})
	}
	return c.group("nodes", "list and show nodes, retire, reactivate and remove them, reissue their bootstrap bundle",
		list,
		c.leaf(adminSpec{
			use: "get NODE", short: "show a node: status, SKU, site, MAAS system id, allocations, last onboarding and decommission",
			long: "Show a node. NODE is a node id or a host name (the host's node that is not removed).",
			args: node, run: runNodesGet,
		}),
		verb("retire", "make an active node unschedulable (refused while an allocation is in use)"),
		verb("reactivate", "return a retired node to service"),
		c.leaf(adminSpec{use: "remove NODE", short: "end a retired node's identity for good (revokes every token; asks first; --yes, --dry-run)",
			args: node, flags: destructiveFlags, run: runNodesRemove}),
		c.leaf(adminSpec{
			use:   "reissue-bundle NODE --out FILE|-",
			short: "reissue the node's bootstrap bundle: a new single-use token, every earlier one revoked",
			long: `Reissue the node's bootstrap bundle: a new single-use enrollment token, every earlier
one revoked. The bundle holds the token, so it is never printed unasked: --out FILE
creates FILE with mode 0600 (an existing file is never overwritten), --out - writes it
to stdout.`,
			args:  node,
			flags: func(fs *pflag.FlagSet) { fs.String("out", "", "file to create (mode 0600), or - for stdout") },
			run:   runNodesReissue,
		}),
	)
}

func (c *cli) decommissionCommand() *cobra.Command {
	start := c.leaf(adminSpec{
		use:   "start NODE --mode reimage|full|storage_cleanup",
		short: "drain, release with erase, then reimage, remove or retire the node",
		long: `Start decommissioning a node (an id or a host name):

  reimage          drain, release with erase, onboard the same node identity again
  full             drain, release with erase, delete the machine when policy says so,
                   remove the node (terminal)
  storage_cleanup  drain, release with erase, retire the node

--wait follows it to the end: exit 0 completed, 3 manual intervention, 4 failed.`,
		example: `  maasflow decommission start gpu-01 --mode storage_cleanup --reason "tenant change" --wait`,
		args:    []string{"NODE"},
		flags: func(fs *pflag.FlagSet) {
			fs.String("mode", "", "reimage, full or storage_cleanup")
			fs.String("reason", "", "why, recorded on the decommission")
			fs.Bool("wait", false, "follow it to the end; the exit code tells the outcome")
			fs.Duration("interval", adminDefaultInterval, "how often --wait polls")
			timeoutFlag(fs)
			destructiveFlags(fs)
		},
		run: runDecommissionStart,
	})
	_ = start.RegisterFlagCompletionFunc("mode", cobra.FixedCompletions(domain.DecommissionModes(), cobra.ShellCompDirectiveNoFileComp))
	list := c.leaf(adminSpec{
		use: "list", short: "list decommissions, newest first; --all follows every page",
		flags: func(fs *pflag.FlagSet) {
			fs.String("status", "", "only this status (pending, running, completed, failed, manual_intervention, cancelled)")
			fs.String("site", "", "only this site (id or name)")
			fs.String("node", "", "only this node (id or host name)")
			pageFlags(fs, "page size (default: the API's)")
		},
		run: runDecommissionList,
	})
	_ = list.RegisterFlagCompletionFunc("status", cobra.FixedCompletions(onboardingStatuses, cobra.ShellCompDirectiveNoFileComp))
	_ = list.RegisterFlagCompletionFunc("site", c.flagCompletion(completeSites))
	dec := []string{"DECOMMISSION"}
	g := c.group("decommission", "decommission nodes: reimage, full removal or storage cleanup; recover stopped decommissions",
		start,
		list,
		c.leaf(adminSpec{
			use: "get DECOMMISSION", short: "show a decommission: status, stage, erase evidence and timeline (an id, or a node for its newest)",
			args: dec, run: runDecommissionGet,
		}),
		c.leaf(adminSpec{
			use: "watch DECOMMISSION", short: "follow a decommission until it ends (exit codes as start --wait)", args: dec,
			flags: func(fs *pflag.FlagSet) {
				fs.Duration("interval", adminDefaultInterval, "how often to poll")
				timeoutFlag(fs)
			},
			run: runDecommissionWatch,
		}),
	)
	g.AddCommand(c.decommissionRecoveryCommands()...)
	g.Aliases = []string{"decommissions"}
	return g
}

// nodeID resolves a node id, or a host name to the host's node. A host
// keeps its removed nodes (a returning host is a new identity), so the one
// that is not removed is meant; a host name on two sites is ambiguous. A
// ref no host carries is passed on as an id.
func (r *adminRun) nodeID(ctx context.Context, c *adminClient, ref string) (string, error) {
	if isUUID(ref) {
		return ref, nil
	}
	resp, err := c.do(ctx, http.MethodGet, adminNodesPath, url.Values{"hostname": {ref}, "limit": {"50"}}, nil)
	if err != nil {
		// Not a valid host name: it can only be an id, which the API
		// reports as not found when it is none.
		var apiE *adminAPIError
		if errors.As(err, &apiE) && apiE.Status == http.StatusBadRequest {
			return ref, nil
		}
		return "", err
	}
	var page struct {
		Items []domain.Node `json:"items"`
	}
	if err := resp.decode(&page); err != nil {
		return "", err
	}
	var live, all []string
	for _, n := range page.Items {
		all = append(all, n.ID)
		if n.Status != domain.NodeRemoved {
			live = append(live, n.ID)
		}
	}
	candidates := live
	if len(candidates) == 0 {
		candidates = all
	}
	switch len(candidates) {
	case 0:
		return ref, nil
	case 1:
		return candidates[0], nil
	default:
		return "", &adminAmbiguousRefError{Kind: "node", Ref: ref, IDs: candidates}
	}
}

// decommissionID resolves a decommission id, or a node (id or host name)
// to the node's newest decommission.
func (r *adminRun) decommissionID(ctx context.Context, c *adminClient, ref string) (string, error) {
	if isUUID(ref) {
		return ref, nil
	}
	node, err := r.nodeID(ctx, c, ref)
	if err != nil || node == ref {
		// No node of that host name: take it as a decommission id.
		return ref, err
	}
	resp, err := c.do(ctx, http.MethodGet, adminDecommissionsPath, url.Values{"node_id": {node}, "limit": {"1"}}, nil)
	if err != nil {
		return "", err
	}
	var page struct {
		Items []domain.Decommission `json:"items"`
	}
	if err := resp.decode(&page); err != nil {
		return "", err
	}
	if len(page.Items) == 0 {
		return "", &adminRefNotFoundError{Kind: "decommission", Ref: ref, Hint: "node " + node + " has never been decommissioned"}
	}
	return page.Items[0].ID, nil
}

func runNodesList(ctx context.Context, r *adminRun, _ []string) error {
	c, q, err := r.listQuery(ctx, map[string]string{"status": "status", "sku_id": "sku", "hostname": "hostname", "cursor": "cursor"})
	if err != nil {
		return err
	}
	nodes, next, printed, err := listItems[adminNamedNode](ctx, r, c, adminNodesPath, q)
	if err != nil || printed {
		return err
	}
	t := r.table("ID", "STATUS", "HOSTNAME", "SITE", "SKU", "MAAS_SYSTEM_ID", "UPDATED")
	for _, n := range nodes {
		t.row(n.ID, n.Status, n.Hostname, named(n.SiteName, n.SiteID), n.SKUID, n.MAASSystemID, adminTime(n.UpdatedAt))
	}
	t.flush()
	if next != "" {
		fmt.Fprintf(r.env.stderr, "more nodes: add --all, or --cursor %s\n", adminCell(next))
	}
	return nil
}

var runNodesGet = getByRef((*adminRun).nodeID, adminNodesPath, (*adminRun).printNode)

// printNode shows a node and its allocations.
func (r *adminRun) printNode(d adminNodeDetail) {
	w := r.env.stdout
	f := newAdminFields(w)
	f.add("ID", d.ID)
	f.add("Status", d.Status)
	f.add("Hostname", d.Hostname)
	f.add("Site", namedID(d.SiteName, d.SiteID))
	f.add("SKU", d.SKUID)
	f.add("MAAS system ID", d.MAASSystemID)
	f.add("Enrolled", adminTimePtr(d.EnrolledAt))
	f.add("Last onboarding", d.LastOnboarding.String())
	f.add("Last decommission", d.LastDecommission.String())
	f.flush()
	r.printAsBuilt(w, d.AsBuilt)
	fmt.Fprintln(w, "\nAllocations:")
	if len(d.Allocations) == 0 {
		fmt.Fprintln(w, "  (none)")
		return
	}
	t := r.table("ID", "STATE", "UPDATED")
	for _, a := range d.Allocations {
		t.row(a.ID, a.State, adminTime(a.UpdatedAt))
	}
	t.flush()
}

// lifecycleVerb is retire, reactivate or remove: POST …/nodes/{id}/<verb>.
func lifecycleVerb(verb string) func(context.Context, *adminRun, []string) error {
	return func(ctx context.Context, r *adminRun, args []string) error {
		c, err := r.client()
		if err != nil {
			return err
		}
		id, err := r.nodeID(ctx, c, args[0])
		if err != nil {
			return err
		}
		return r.call(ctx, c, http.MethodPost, adminPath(adminNodesPath, id, verb), nil, func(resp *adminResponse) error {
			var n domain.Node
			if err := resp.decode(&n); err != nil {
				return err
			}
			fmt.Fprintf(r.env.stdout, "node %s (%s) is %s\n", adminCell(n.ID), adminCell(n.Hostname), adminCell(n.Status))
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
	id, err := r.nodeID(ctx, c, args[0])
	if err != nil {
		return err
	}
	resp, err := c.do(ctx, http.MethodPost, adminPath(adminNodesPath, id, "bootstrap-bundle"), nil, nil)
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
	if err := f.Close(); err != nil {
		return fmt.Errorf("write bundle: %w", err)
	}
	return nil
}

func runDecommissionStart(ctx context.Context, r *adminRun, args []string) error {
	interval, err := r.positiveInterval()
	if err != nil {
		return err
	}
	mode := r.str("mode")
	// Storage cleanup has its own endpoint, which takes no mode.
	verb, body := "decommission", map[string]string{"mode": mode}
	switch mode {
	case domain.DecommissionReimage, domain.DecommissionFull:
	case domain.DecommissionStorageCleanup:
		verb, body = "storage-cleanup", map[string]string{}
	case "":
		return usagef("--mode is required: reimage, full or storage_cleanup")
	default:
		return usagef("--mode must be reimage, full or storage_cleanup, not %q", mode)
	}
	if r.changed("reason") {
		body["reason"] = r.str("reason")
	}
	dry := r.dryRun()
	if dry && mode == domain.DecommissionStorageCleanup {
		return usagef("--dry-run is for --mode full or reimage")
	}
	if mode == domain.DecommissionFull && !dry {
		if err := r.confirm(fmt.Sprintf("decommission node %s fully: drain it, erase its disks, remove the node for good and, as policy says, delete its MAAS machine", args[0])); err != nil {
			return err
		}
	}
	c, err := r.client()
	if err != nil {
		return err
	}
	node, err := r.nodeID(ctx, c, args[0])
	if err != nil {
		return err
	}
	if dry {
		var raw []byte
		p, err := c.PlanDecommission(ctx, node, client.DecommissionCreate{Mode: mode, Reason: body["reason"]}, client.RawResponse(&raw))
		if err != nil {
			return err
		}
		r.printPlan(raw, p)
		return nil
	}
	resp, err := c.do(ctx, http.MethodPost, adminPath(adminNodesPath, node, verb), nil, body)
	if err != nil {
		return err
	}
	var d domain.Decommission
	if err := resp.decode(&d); err != nil {
		return err
	}
	wait := r.boolean("wait")
	if r.machine() {
		if !wait {
			r.emit(resp.Body)
		}
	} else {
		fmt.Fprintf(r.env.stdout, "decommission %s (%s) accepted for node %s (%s)\n", adminCell(d.ID), adminCell(d.Mode), adminCell(d.NodeID), adminCell(d.Hostname))
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
	c, q, err := r.listQuery(ctx, map[string]string{"status": "status", "cursor": "cursor"})
	if err != nil {
		return err
	}
	if ref := r.str("node"); ref != "" {
		id, err := r.nodeID(ctx, c, ref)
		if err != nil {
			return err
		}
		q.Set("node_id", id)
	}
	decs, next, printed, err := listItems[domain.Decommission](ctx, r, c, adminDecommissionsPath, q)
	if err != nil || printed {
		return err
	}
	t := r.table("ID", "MODE", "STATUS", "STAGE", "NODE", "HOSTNAME", "DISKS", "UPDATED")
	for _, d := range decs {
		t.row(d.ID, d.Mode, string(d.Status), string(d.Stage), d.NodeID, d.Hostname, d.Erase.Outcome, adminTime(d.UpdatedAt))
	}
	t.flush()
	if next != "" {
		fmt.Fprintf(r.env.stderr, "more decommissions: add --all, or --cursor %s\n", adminCell(next))
	}
	return nil
}

var runDecommissionGet = getByRef((*adminRun).decommissionID, adminDecommissionsPath, (*adminRun).printDecommission)

// printDecommission shows a decommission; the erase evidence says plainly
// whether the disks were erased.
func (r *adminRun) printDecommission(d adminDecommissionDetail) {
	w := r.env.stdout
	f := newAdminFields(w)
	f.add("ID", d.ID)
	f.add("Mode", d.Mode)
	f.add("Status", string(d.Status))
	f.add("Stage", string(d.Stage))
	f.add("Attempt", strconv.Itoa(d.Attempt))
	f.add("Node", d.NodeID+" ("+d.Hostname+")")
	f.add("MAAS system ID", d.MAASSystemID)
	f.add("Machine deleted", strconv.FormatBool(d.MachineDeleted))
	f.add("Reimage onboarding", d.OnboardingID)
	f.add("Reason", d.Reason)
	f.add("Erase asked", d.Erase.Mode)
	f.add("Disks", d.Erase.Outcome)
	f.add("Erase detail", d.Erase.Detail)
	if d.Erase.Fallback {
		f.add("Release fallback", "yes: "+d.Erase.FallbackReason)
	}
	if d.Error != nil {
		f.add("Error", d.Error.Code+": "+d.Error.Message)
	}
	f.add("Allowed operations", opsLine(d.AllowedOperations))
	f.add("Created", adminTime(d.CreatedAt)+" by "+orDash(d.CreatedBy))
	f.add("Completed", adminTimePtr(d.CompletedAt))
	f.flush()
	for _, e := range d.Erase.ScriptResults {
		fmt.Fprintf(w, "release script %s: %s\n", adminCell(e.Name), adminCell(e.Status))
	}
	fmt.Fprintln(w, "\nTimeline:")
	if len(d.Timeline) == 0 {
		fmt.Fprintln(w, "  (empty)")
		return
	}
	t := r.table("TIME", "KIND", "STAGE", "OUTCOME", "SOURCE", "DETAIL")
	for _, e := range d.Timeline {
		t.row(adminTime(e.Time), string(e.Kind), e.Stage, e.Outcome, e.Source, e.Detail)
	}
	t.flush()
}

func runDecommissionWatch(ctx context.Context, r *adminRun, args []string) error {
	return r.watchRef(ctx, args[0], (*adminRun).decommissionID, (*adminRun).watchDecommission)
}

// adminDecomEvent is one line of a decommission watch: a timeline entry,
// or a change of the record (kind "status", with the disks' erase outcome).
type adminDecomEvent struct {
	DecommissionID string              `json:"decommission_id"`
	NodeID         string              `json:"node_id"`
	Hostname       string              `json:"hostname"`
	Time           time.Time           `json:"time"`
	Attempt        int                 `json:"attempt"`
	Kind           domain.TimelineKind `json:"kind"`
	Stage          string              `json:"stage,omitempty"`
	Outcome        string              `json:"outcome,omitempty"`
	Detail         string              `json:"detail,omitempty"`
	Source         string              `json:"source,omitempty"`
	MAASEventID    int64               `json:"maas_event_id,omitempty"`
	Status         string              `json:"status,omitempty"`
	Disks          string              `json:"disks,omitempty"`
}

// watchDecommission follows a decommission until it ends, printing each
// timeline entry once and each change of status or erase outcome, and
// returns the onboarding watch's exit codes.
func (r *adminRun) watchDecommission(ctx context.Context, c *adminClient, id string, interval time.Duration) error {
	path := adminPath(adminDecommissionsPath, id)
	seen := map[adminTimelineEntry]bool{}
	prev := ""
	inner := ""
	return followStream(ctx, r, c, path+client.StreamSuffix, interval, func(d adminDecommissionDetail) (bool, error) {
		for _, e := range d.Timeline {
			if !seen[e] {
				seen[e] = true
				r.printDecomEvent(d.Decommission, adminDecomEvent{Time: e.Time, Attempt: e.Attempt, Kind: e.Kind, Stage: e.Stage,
					Outcome: e.Outcome, Detail: e.Detail, Source: e.Source, MAASEventID: e.MAASEventID})
			}
		}
		if snap := fmt.Sprintf("%s/%s/%d", d.Status, d.Erase.Outcome, d.Attempt); snap != prev {
			prev = snap
			r.printDecomEvent(d.Decommission, adminDecomEvent{Time: d.UpdatedAt, Attempt: d.Attempt, Kind: adminWatchStatus,
				Stage: string(d.Stage), Status: string(d.Status), Disks: d.Erase.Outcome})
		}
		if d.Mode == domain.DecommissionReimage && d.OnboardingID != "" && d.OnboardingID != inner {
			// A reimage waits for the onboarding it started: follow that
			// inline, as onboardings watch would, then the decommission.
			inner = d.OnboardingID
			if !r.machine() {
				fmt.Fprintf(r.env.stdout, "reimage: following its onboarding %s\n", adminCell(inner))
			}
			var code *ExitCodeError
			if err := r.follow(ctx, c, newFollower(inner), interval); err != nil && !errors.As(err, &code) {
				return true, err
			}
		}
		code, done := adminOutcome(string(d.Status))
		if done {
			r.printDecomOutcome(d.Decommission)
		}
		return done, exitCodeError(code, done)
	}, func() (adminDecommissionDetail, error) {
		var d adminDecommissionDetail
		resp, err := c.do(ctx, http.MethodGet, path, nil, nil)
		if err != nil {
			return d, err
		}
		err = resp.decode(&d)
		return d, err
	})
}

func (r *adminRun) printDecomEvent(d domain.Decommission, e adminDecomEvent) {
	e.DecommissionID, e.NodeID, e.Hostname = d.ID, d.NodeID, d.Hostname
	line := adminWatchEvent{Time: e.Time, Attempt: e.Attempt, Kind: e.Kind, Stage: e.Stage, Outcome: e.Outcome,
		Detail: e.Detail, Source: e.Source, MAASEventID: e.MAASEventID, Status: e.Status}
	if e.Kind == adminWatchStatus {
		line.Status = e.Status + "  disks=" + orDash(e.Disks)
	}
	r.printEvent(e, watchLine(line, false))
}

func (r *adminRun) printDecomOutcome(d domain.Decommission) {
	if r.machine() {
		return
	}
	w := r.env.stdout
	why := ""
	if d.Error != nil {
		why = ": " + adminCell(d.Error.Code+": "+d.Error.Message)
	}
	fmt.Fprintf(w, "decommission %s (%s) of node %s %s at stage %s, disks %s%s\n", adminCell(d.ID), adminCell(d.Mode),
		adminCell(d.NodeID), adminCell(string(d.Status)), adminCell(string(d.Stage)), adminCell(orDash(d.Erase.Outcome)), why)
	if d.Status == domain.DecommissionManualIntervention {
		fmt.Fprintf(w, "inspect it with: maasflow decommission get %s\n", adminCell(d.ID))
	}
}
