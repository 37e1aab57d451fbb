package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"

	"github.com/maasflow/maasflow/client"
)

// designDocuments reads design files (YAML, JSON being YAML) and converts
// each YAML document to the JSON the API takes: the conversion lives in
// tooling, the API speaks JSON only. A document without a name is named
// after its file (file#2, … for a file's later documents).
func (r *adminRun) designDocuments(files []string) ([]json.RawMessage, error) {
	if len(files) == 0 {
		return nil, usagef("-f/--file is required: one or more design files, in precedence order (the first is the base)")
	}
	var docs []json.RawMessage
	for _, f := range files {
		raw, err := r.readInput(f)
		if err != nil {
			return nil, err
		}
		dec := yaml.NewDecoder(bytes.NewReader(raw))
		for i := 1; ; i++ {
			var doc any
			err := dec.Decode(&doc)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, usagef("%s: not valid YAML: %s", f, err.Error())
			}
			m, ok := doc.(map[string]any)
			if !ok {
				return nil, usagef("%s: document %d is not a mapping of host_profiles, hardware_profiles, networks, network_links and nodes", f, i)
			}
			if _, named := m["name"]; !named {
				name := filepath.Base(f)
				if i > 1 {
					name = fmt.Sprintf("%s#%d", name, i)
				}
				m["name"] = name
			}
			b, err := json.Marshal(m)
			if err != nil {
				return nil, usagef("%s: document %d cannot be JSON: %s", f, i, err.Error())
			}
			docs = append(docs, b)
		}
	}
	if len(docs) == 0 {
		return nil, usagef("the design files hold no document")
	}
	return docs, nil
}

func (c *cli) designCommand() *cobra.Command {
	files := func(fs *pflag.FlagSet) {
		fs.StringArrayP("file", "f", nil, "a design file (YAML or JSON, - for stdin); repeat in precedence order, the base first")
		fs.String("site", "", "the site (id or name)")
	}
	return c.group("design", "the fleet's design: plan and apply design files",
		c.leaf(adminSpec{
			use: "plan --site SITE -f FILE...", short: "show what applying the design files would change (nothing is stored)",
			example: "  maasflow design plan --site lab -f site.yaml -f rack-a.yaml",
			flags:   files, run: runDesignPlan,
		}),
		c.leaf(adminSpec{
			use: "apply --site SITE -f FILE... [--plan-hash HASH]", short: "apply the design files: exactly the plan shown, onboarding new hosts",
			example: "  maasflow design apply --site lab -f site.yaml -f rack-a.yaml --profile gpu --sku h100-8x",
			flags: func(fs *pflag.FlagSet) {
				files(fs)
				fs.String("plan-hash", "", "apply only if the plan is still this one (from design plan)")
				fs.String("profile", "", "onboarding profile id of new hosts")
				fs.String("sku", "", "SKU id of new hosts")
			},
			run: runDesignApply,
		}),
		c.leaf(adminSpec{
			use: "node --site SITE HOSTNAME", short: "show one node's effective design and where each value came from", args: []string{"HOSTNAME"},
			flags: func(fs *pflag.FlagSet) { fs.String("site", "", "the site (id or name)") },
			run:   runDesignNode,
		}),
	)
}

func (r *adminRun) designRequest(ctx context.Context) (*adminClient, string, client.DesignRequest, error) {
	if err := r.requireFlags("site"); err != nil {
		return nil, "", client.DesignRequest{}, err
	}
	files, _ := r.cmd.Flags().GetStringArray("file")
	docs, err := r.designDocuments(files)
	if err != nil {
		return nil, "", client.DesignRequest{}, err
	}
	c, err := r.client()
	if err != nil {
		return nil, "", client.DesignRequest{}, err
	}
	site, err := r.siteID(ctx, c, r.str("site"))
	if err != nil {
		return nil, "", client.DesignRequest{}, err
	}
	return c, site, client.DesignRequest{Documents: docs}, nil
}

func runDesignPlan(ctx context.Context, r *adminRun, _ []string) error {
	c, site, in, err := r.designRequest(ctx)
	if err != nil {
		return err
	}
	plan, err := c.PlanDesign(ctx, site, in)
	if err != nil {
		return err
	}
	if r.machine() {
		return r.emitValue(plan)
	}
	r.printDesignPlan(plan)
	return nil
}

func (r *adminRun) printDesignPlan(p client.DesignPlan) {
	out := r.env.stdout
	if len(p.Lines) == 0 {
		fmt.Fprintln(out, "No changes: the design is applied.")
	}
	for _, l := range p.Lines {
		fmt.Fprintln(out, l)
	}
	// The site's RoCE rows the apply changes are counted apart from the
	// design's records: the rows follow from the nodes' roce_rails.
	roce := 0
	for _, c := range p.Changes {
		if c.Kind == designKindRoCERow {
			roce++
		}
	}
	fmt.Fprintf(out, "\nPlan: %d change(s), %d host(s) to onboard, %d node(s) to reconfigure.",
		len(p.Changes)-roce, len(p.Onboard), len(p.Reconfigure))
	if roce > 0 {
		fmt.Fprintf(out, " %d RoCE row(s) to change.", roce)
	}
	fmt.Fprintf(out, " Plan hash %s\n", p.Hash)
}

// designKindRoCERow is the kind of a plan's change to one of the site's
// RoCE rows.
const designKindRoCERow = "roce_row"

func runDesignApply(ctx context.Context, r *adminRun, _ []string) error {
	c, site, in, err := r.designRequest(ctx)
	if err != nil {
		return err
	}
	// The plan first, so what is applied is exactly what was shown.
	in.PlanHash = r.str("plan-hash")
	if in.PlanHash == "" {
		plan, err := c.PlanDesign(ctx, site, in)
		if err != nil {
			return err
		}
		if !r.machine() {
			r.printDesignPlan(plan)
		}
		in.PlanHash = plan.Hash
	}
	if p, s := r.str("profile"), r.str("sku"); p != "" || s != "" {
		in.Onboard = &client.DesignOnboard{ProfileID: p, SKUID: s}
	}
	out, err := c.ApplyDesign(ctx, site, in)
	if err != nil {
		return err
	}
	if r.machine() {
		return r.emitValue(out)
	}
	fmt.Fprintf(r.env.stdout, "Applied: design version %d.", out.Version)
	if out.Batch != nil {
		fmt.Fprintf(r.env.stdout, " Onboarding %d host(s) in batch %s.", len(out.Batch.Items), out.Batch.ID)
	}
	fmt.Fprintln(r.env.stdout)
	return nil
}

func runDesignNode(ctx context.Context, r *adminRun, args []string) error {
	if err := r.requireFlags("site"); err != nil {
		return err
	}
	c, err := r.client()
	if err != nil {
		return err
	}
	site, err := r.siteID(ctx, c, r.str("site"))
	if err != nil {
		return err
	}
	raw, err := c.GetDesignNode(ctx, site, args[0])
	if err != nil {
		return err
	}
	if !r.machine() {
		// The effective design is a nested document: YAML reads best.
		y, err := jsonToYAML(raw)
		if err == nil {
			_, _ = r.env.stdout.Write(y)
			return nil
		}
	}
	r.emit(raw)
	return nil
}
