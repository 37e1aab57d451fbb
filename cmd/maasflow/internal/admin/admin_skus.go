package admin

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/maasflow/maasflow/shared/domain"
)

// adminSKUView is one catalog entry.
type adminSKUView struct {
	ID          string `json:"id"`
	GPUModel    string `json:"gpu_model"`
	GPUsTotal   int    `json:"gpus_total"`
	Description string `json:"description"`
	Active      bool   `json:"active"`
	// Proposal and LastDecision: the governance of active.
	Proposal     *domain.SKUProposal `json:"proposal"`
	LastDecision *domain.SKUDecision `json:"last_decision"`
	CreatedAt    time.Time           `json:"created_at"`
	UpdatedAt    time.Time           `json:"updated_at"`
}

func (r *adminRun) printSKU(resp *adminResponse) error {
	var s adminSKUView
	if err := resp.decode(&s); err != nil {
		return err
	}
	f := newAdminFields(r.env.stdout)
	f.add("ID", s.ID)
	f.add("GPU model", s.GPUModel)
	f.add("GPUs", strconv.Itoa(s.GPUsTotal))
	f.add("Active", strconv.FormatBool(s.Active))
	f.add("Description", s.Description)
	skuProposalFields(f, s.Proposal, s.LastDecision)
	f.add("Created", adminTime(s.CreatedAt))
	f.add("Updated", adminTime(s.UpdatedAt))
	f.flush()
	return nil
}

func (c *cli) skusCommand() *cobra.Command {
	return c.group("skus", "the SKU catalog", append([]*cobra.Command{
		c.leaf(adminSpec{
			use: "create --id ID --gpu-model MODEL --gpus-total N", short: "add a SKU to the catalog",
			flags: func(fs *pflag.FlagSet) {
				fs.String("id", "", "SKU id, e.g. h100-8x")
				fs.String("gpu-model", "", "GPU model, e.g. \"NVIDIA H100 80GB\"")
				fs.Int("gpus-total", 0, "GPUs per server")
				fs.String("description", "", "free text")
				fs.Bool("active", true, "whether new onboardings may use it")
			},
			run: runSKUsCreate,
		}),
		c.leaf(adminSpec{use: "list", short: "list the SKU catalog", run: runSKUsList}),
		c.leaf(adminSpec{use: "get SKU", short: "show a SKU", args: []string{"SKU"}, complete: completeSKUs, run: runSKUsGet}),
		c.leaf(adminSpec{
			use: "patch SKU", short: "activate, deactivate or describe a SKU", args: []string{"SKU"}, complete: completeSKUs,
			flags: func(fs *pflag.FlagSet) {
				fs.Bool("active", true, "propose --active=false (stops new onboardings from using it) or true; a second admin approves")
				fs.String("description", "", "free text")
				fs.String("reason", "", "why active should change")
				fs.String("rollback-note", "", "how to undo a deactivation; required when nodes in service use the SKU")
			},
			run: runSKUsPatch,
		}),
	}, c.skuGovernanceCommands()...)...)
}

func runSKUsCreate(ctx context.Context, r *adminRun, _ []string) error {
	if err := r.requireFlags("id", "gpu-model", "gpus-total"); err != nil {
		return err
	}
	body := map[string]any{"id": r.str("id"), "gpu_model": r.str("gpu-model"), "gpus_total": r.integer("gpus-total")}
	if r.changed("description") {
		body["description"] = r.str("description")
	}
	if r.changed("active") {
		body["active"] = r.boolean("active")
	}
	c, err := r.client()
	if err != nil {
		return err
	}
	return r.call(ctx, c, http.MethodPost, adminSKUsPath, body, r.printSKU)
}

func runSKUsList(ctx context.Context, r *adminRun, _ []string) error {
	c, err := r.client()
	if err != nil {
		return err
	}
	return r.call(ctx, c, http.MethodGet, adminSKUsPath, nil, func(resp *adminResponse) error {
		var l struct {
			Items []adminSKUView `json:"items"`
		}
		if err := resp.decode(&l); err != nil {
			return err
		}
		t := r.table("ID", "GPU_MODEL", "GPUS", "ACTIVE", "DESCRIPTION")
		for _, s := range l.Items {
			t.row(s.ID, s.GPUModel, strconv.Itoa(s.GPUsTotal), strconv.FormatBool(s.Active), s.Description)
		}
		t.flush()
		return nil
	})
}

// completeSKUs proposes the catalog's SKU ids (a SKU's id is its name).
func completeSKUs(r *adminRun, _ []string) []string {
	c, err := r.client()
	if err != nil {
		return nil
	}
	items, err := c.listNamed(completionContext(r), adminSKUsPath)
	if err != nil {
		return nil
	}
	ids := make([]string, 0, len(items))
	for _, it := range items {
		ids = append(ids, it.ID)
	}
	return ids
}

func runSKUsGet(ctx context.Context, r *adminRun, args []string) error {
	c, err := r.client()
	if err != nil {
		return err
	}
	return r.call(ctx, c, http.MethodGet, adminPath(adminSKUsPath, args[0]), nil, r.printSKU)
}

func runSKUsPatch(ctx context.Context, r *adminRun, args []string) error {
	body := map[string]any{}
	if r.changed("active") {
		body["active"] = r.boolean("active")
	}
	if r.changed("description") {
		body["description"] = r.str("description")
	}
	if len(body) == 0 {
		return usagef("nothing to change: give --active=true|false or --description")
	}
	for flag, field := range map[string]string{"reason": "reason", "rollback-note": "rollback_note"} {
		if r.changed(flag) {
			body[field] = r.str(flag)
		}
	}
	c, err := r.client()
	if err != nil {
		return err
	}
	return r.call(ctx, c, http.MethodPatch, adminPath(adminSKUsPath, args[0]), body, r.printSKU)
}

// adminAuditView is one audit entry.
type adminAuditView struct {
	ID            string    `json:"id"`
	Time          time.Time `json:"time"`
	Actor         string    `json:"actor"`
	Action        string    `json:"action"`
	Target        string    `json:"target"`
	Result        string    `json:"result"`
	CorrelationID string    `json:"correlation_id"`
}

func (c *cli) auditCommand() *cobra.Command {
	return c.leaf(adminSpec{
		use: "audit", short: "show the latest audit entries",
		flags: func(fs *pflag.FlagSet) { fs.Int("limit", 0, "how many entries (default: the API's page size)") },
		run:   runAudit,
	})
}

func runAudit(ctx context.Context, r *adminRun, _ []string) error {
	q := url.Values{}
	if err := r.limitQuery(q); err != nil {
		return err
	}
	c, err := r.client()
	if err != nil {
		return err
	}
	return r.callQuery(ctx, c, http.MethodGet, adminAuditPath, q, nil, func(resp *adminResponse) error {
		var l struct {
			Items []adminAuditView `json:"items"`
		}
		if err := resp.decode(&l); err != nil {
			return err
		}
		t := r.table("TIME", "ACTOR", "ACTION", "TARGET", "RESULT", "CORRELATION_ID")
		for _, e := range l.Items {
			t.row(adminTime(e.Time), e.Actor, e.Action, e.Target, e.Result, e.CorrelationID)
		}
		t.flush()
		return nil
	})
}
