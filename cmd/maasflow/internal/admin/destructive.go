package admin

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/spf13/pflag"

	"github.com/maasflow/maasflow/client"
)

// The destructive verbs (decommission start --mode full, nodes remove,
// onboardings restart-clean, sites disable) ask on a terminal before they
// send anything and need --yes anywhere else; --dry-run shows what they
// would do instead, from the API's own dry run where it has one.

// destructiveFlags adds --yes and --dry-run.
func destructiveFlags(fs *pflag.FlagSet) {
	fs.Bool("yes", false, "do it without asking (required when stdin is not a terminal)")
	fs.Bool("dry-run", false, "only show what it would do; nothing is changed")
}

// errAborted ends a command the operator declined at the prompt.
var errAborted = errors.New("aborted: nothing was changed")

// confirm asks "what? [y/N]" on a terminal; elsewhere it wants --yes.
func (r *adminRun) confirm(what string) error {
	if r.boolean("yes") {
		return nil
	}
	if !r.env.stdinTTY {
		return usagef("this would %s: pass --yes to confirm (or --dry-run to see what it would do)", what)
	}
	fmt.Fprintf(r.env.stderr, "This will %s.\nContinue? [y/N] ", what)
	line, err := bufio.NewReader(r.env.stdin).ReadString('\n')
	if err != nil && line == "" {
		return errAborted
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return nil
	}
	return errAborted
}

// dryRun reports whether --dry-run was given.
func (r *adminRun) dryRun() bool { return r.boolean("dry-run") }

// printPlan prints a dry run's answer: -o json|yaml as the API sent it,
// else what would happen, one field a line.
func (r *adminRun) printPlan(raw []byte, p client.DryRunPlan) {
	if r.machine() {
		r.emit(raw)
		return
	}
	w := r.env.stdout
	fmt.Fprintf(w, "dry run, nothing was changed: %s would %s\n", adminCell(p.Action), adminCell(p.Summary))
	f := newAdminFields(w)
	if p.Site != nil {
		f.add("Site", fmt.Sprintf("%s (%s): %s → %s", p.Site.Name, p.Site.ID, p.Site.Status, p.Site.StatusAfter))
	}
	if p.Node != nil {
		f.add("Node", fmt.Sprintf("%s (%s): %s → %s", p.Node.Hostname, p.Node.ID, p.Node.Status, p.Node.StatusAfter))
	}
	if p.Machine != nil {
		what := "kept"
		switch {
		case p.Machine.Delete:
			what = "released, then deleted from MAAS"
		case p.Machine.Release:
			what = "released"
		}
		f.add("MAAS machine", p.Machine.SystemID+": "+what)
	}
	if p.EraseMode != "" {
		erase := p.EraseMode
		if p.ReleaseFallback != nil && *p.ReleaseFallback {
			erase += " (released without erase if the erase fails)"
		}
		f.add("Erase", erase)
	}
	if p.Node != nil || len(p.Allocations) > 0 {
		allocs := make([]string, 0, len(p.Allocations))
		for _, a := range p.Allocations {
			allocs = append(allocs, a.AllocationID+" ("+a.State+")")
		}
		f.add("Allocations", orDash(strings.Join(allocs, ", ")))
	}
	if p.RevokesTokens {
		f.add("Tokens", "every enrollment token of the node revoked")
	}
	f.flush()
}

// planRestartClean is restart-clean's dry run: the API's own, which
// checks the operation exactly as it would run it and says what it would
// do (machine, node, allocations, erase, tokens) without doing it. A
// refusal (the state allows no restart-clean, the node is active) is the
// operation's error, with the operations the onboarding allows now.
func (r *adminRun) planRestartClean(ctx context.Context, c *adminClient, id string) error {
	var raw []byte
	p, err := c.PlanRestartClean(ctx, id, r.str("reason"), client.RawResponse(&raw))
	if err != nil {
		var apiErr *adminAPIError
		if errors.As(err, &apiErr) && apiErr.Status == http.StatusConflict {
			r.printAllowed(ctx, c, id)
		}
		return err
	}
	r.printPlan(raw, p)
	return nil
}

// removeNode is `nodes remove`: asked for, or planned with --dry-run.
func runNodesRemove(ctx context.Context, r *adminRun, args []string) error {
	if !r.dryRun() {
		if err := r.confirm(fmt.Sprintf("remove node %s for good (every enrollment token revoked)", args[0])); err != nil {
			return err
		}
		return lifecycleVerb("remove")(ctx, r, args)
	}
	c, err := r.client()
	if err != nil {
		return err
	}
	id, err := r.nodeID(ctx, c, args[0])
	if err != nil {
		return err
	}
	var raw []byte
	p, err := c.PlanRemoveNode(ctx, id, client.RawResponse(&raw))
	if err != nil {
		return err
	}
	r.printPlan(raw, p)
	return nil
}

func runSitesDisable(ctx context.Context, r *adminRun, args []string) error {
	if !r.dryRun() {
		if err := r.confirm(fmt.Sprintf("disable site %s: it takes no new onboardings", args[0])); err != nil {
			return err
		}
		return r.siteCall(ctx, args[0], http.MethodDelete, "", nil, r.printSite)
	}
	c, err := r.client()
	if err != nil {
		return err
	}
	id, err := r.siteID(ctx, c, args[0])
	if err != nil {
		return err
	}
	var raw []byte
	p, err := c.PlanDisableSite(ctx, id, client.RawResponse(&raw))
	if err != nil {
		return err
	}
	r.printPlan(raw, p)
	return nil
}
