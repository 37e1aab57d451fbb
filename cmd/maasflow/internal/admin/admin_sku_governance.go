package admin

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/maasflow/maasflow/shared/domain"
)

// skuGovernanceCommands are the second admin's approve and reject, and the
// listing of an SKU's nodes.
func (c *cli) skuGovernanceCommands() []*cobra.Command {
	decide := func(verb, short string) *cobra.Command {
		return c.leaf(adminSpec{
			use: verb + " SKU --proposal ID", short: short, args: []string{"SKU"}, complete: completeSKUs,
			flags: func(fs *pflag.FlagSet) {
				fs.String("proposal", "", "the pending proposal's id (skus get SKU shows it)")
				fs.String("reason", "", "why")
			},
			run: runSKUDecision(verb),
		})
	}
	return []*cobra.Command{
		decide("approve", "approve an SKU's pending proposal (a different admin than its proposer)"),
		decide("reject", "reject an SKU's pending proposal, or withdraw your own"),
		c.leaf(adminSpec{
			use: "nodes SKU", short: "list the SKU's nodes, newest first; --all follows every page", args: []string{"SKU"}, complete: completeSKUs,
			flags: func(fs *pflag.FlagSet) {
				fs.String("status", "", "only this status (onboarding, active, decommissioning, retired, removed)")
				pageFlags(fs, "page size (default: the API's)")
			},
			run: runSKUNodes,
		}),
	}
}

func runSKUDecision(verb string) func(context.Context, *adminRun, []string) error {
	return func(ctx context.Context, r *adminRun, args []string) error {
		if err := r.requireFlags("proposal"); err != nil {
			return err
		}
		body := map[string]any{"proposal_id": r.str("proposal")}
		if r.changed("reason") {
			body["reason"] = r.str("reason")
		}
		c, err := r.client()
		if err != nil {
			return err
		}
		return r.call(ctx, c, http.MethodPost, adminPath(adminSKUsPath, args[0], verb), body, r.printSKU)
	}
}

func runSKUNodes(ctx context.Context, r *adminRun, args []string) error {
	c, q, err := r.listQuery(ctx, map[string]string{"status": "status", "cursor": "cursor"})
	if err != nil {
		return err
	}
	nodes, next, printed, err := listItems[domain.Node](ctx, r, c, adminPath(adminSKUsPath, args[0], "nodes"), q)
	if err != nil || printed {
		return err
	}
	t := r.table("ID", "STATUS", "HOSTNAME", "SITE", "MAAS_SYSTEM_ID", "UPDATED")
	for _, n := range nodes {
		t.row(n.ID, n.Status, n.Hostname, n.SiteID, n.MAASSystemID, adminTime(n.UpdatedAt))
	}
	t.flush()
	if next != "" {
		fmt.Fprintf(r.env.stderr, "more nodes: add --all, or --cursor %s\n", adminCell(next))
	}
	return nil
}

// skuProposalFields adds an SKU's pending proposal and last decision to
// its detail.
func skuProposalFields(f *adminFields, p *domain.SKUProposal, d *domain.SKUDecision) {
	if p != nil {
		f.add("Proposal", fmt.Sprintf("%s: active=%t by %s at %s, pending a second admin's approval", p.ID, p.Active, p.ProposedBy, adminTime(p.ProposedAt)))
		if p.Reason != "" {
			f.add("Proposal reason", p.Reason)
		}
		if !p.Active {
			f.add("Affected nodes", strconv.Itoa(p.AffectedCount)+" in service: "+orDash(strings.Join(p.AffectedNodes, ", ")))
			f.add("Rollback note", p.RollbackNote)
		}
	}
	if d != nil {
		f.add("Last decision", fmt.Sprintf("%s (active=%t) proposed by %s, %s by %s at %s",
			d.ID, d.Active, d.ProposedBy, d.Outcome, d.DecidedBy, adminTime(d.DecidedAt)))
	}
}
