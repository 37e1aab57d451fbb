package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/maasflow/maasflow/shared/store"
)

// access is what one function does beyond the grants every function has
// (its own log group, X-Ray, item reads and writes on the table). Each flag
// maps to the statements below; infra/stack_test.go walks the template and
// fails on any statement a function's access does not explain.
type access struct {
	// maas: the function talks to a site's MAAS, so it reads the site's
	// credentials (through the per-site session role), runs in the MAAS
	// VPC when one is configured and may relay through a site connector.
	maas bool
	// fetch: the function runs the site's pre-deploy fetch checks, from the
	// site's network (the VPC or the site connector), without credentials.
	fetch bool
	// publish: the function puts onboarding events on the bus.
	publish bool
	// completeTask: the function calls SendTaskSuccess on the onboarding's
	// task token.
	completeTask bool
	// api: the admin API: writes site credentials, starts, stops and
	// describes executions, and reads connector heartbeats.
	api bool
	// indexes are the table's indexes the function queries; a function
	// without any gets no grant on the indexes at all. Every function reads
	// and writes items on the table itself (tableActions): each writes its
	// run's record, and closing a run releases the record's locks and
	// revokes its enrollment token in the same transaction.
	indexes []string
	// items, when set, replaces tableActions for a function that makes
	// fewer kinds of item call than a run's record writer.
	items []string
}

// itemActions is what the function may do to the table's items.
func (a access) itemActions() []string {
	if a.items != nil {
		return a.items
	}
	return tableActions
}

// allIndexes is every index of the table, for the admin API's lists.
func allIndexes() []string {
	var out []string
	for _, ix := range store.Indexes() {
		out = append(out, ix.Name)
	}
	return out
}

// functionAccess lists every function the stack deploys with what its code
// calls. A function missing here fails synthesis: a new function must say
// what it needs, rather than inherit everything. The lists follow
// shared/activities (which activities call c.maas, publishOnce or the
// completer) and shared/api.
var functionAccess = map[string]access{
	functionAPI:               {api: true, maas: true, completeTask: true, indexes: allIndexes()},
	"take-site-slot":          {}, // the site and the throttle's rows: the table grants all have
	"validate-onboarding":     {publish: true},
	"discover-machine":        {maas: true},
	"commission-machine":      {maas: true},
	"power-cycle-machine":     {maas: true},
	"check-machine":           {maas: true},
	"configure-storage":       {maas: true},
	"verify-hardware":         {maas: true},
	"configure-machine":       {maas: true},
	"preflight-pxe":           {maas: true},
	"apply-roce":              {maas: true},
	"check-predeploy":         {fetch: true},
	"deploy-machine":          {maas: true},
	"classify-deploy-failure": {maas: true},
	"recover-deploy":          {maas: true},
	functionAwaitEnrollment:   {completeTask: true},
	"check-completion-gates":  {maas: true},
	"reset-machine":           {maas: true},
	"adopt-machine":           {maas: true},
	// The decommission path (infra/decommission.go grants the state machine,
	// start-reimage's StartExecution and the allocation service's secret).
	"begin-decommission":     {publish: true},
	"check-reimage":          {},
	"check-release":          {maas: true},
	"delete-machine":         {maas: true},
	functionDrainAllocations: {},
	"fallback-release":       {maas: true},
	"finish-decommission":    {publish: true, indexes: []string{store.IndexGSI4}}, // the node's open drift, by node
	"release-machine":        {maas: true},
	functionStartReimage:     {},
	// reconcile (infra/reconcile.go) reads MAAS and publishes drift events;
	// it also describes onboarding executions, granted with its state machine.
	// A site's nodes, open onboardings and open drift, each by site.
	functionReconcile:   {maas: true, publish: true, indexes: []string{store.IndexGSI3}},
	"finish-onboarding": {publish: true},
	// The machine watch (infra/watch.go): watch-machine only stores the
	// wait's task token in the table and never reaches MAAS; watch-sites
	// reads each watched site's MAAS events and completes the tokens.
	functionWatchMachine: {items: []string{"dynamodb:PutItem"}}, // store.PutMachineWatch, one conditional put
	functionWatchSites:   {maas: true, completeTask: true},
	// The admin API's streams (infra/streams.go): reads only.
	functionStream: streamAccess(),
}

// reachesSite reports whether the function makes requests to the site's
// network, so it belongs in the VPC and may relay through a connector.
func (a access) reachesSite() bool { return a.maas || a.fetch }

// unlistedFunctions names the functions with no functionAccess entry.
func unlistedFunctions(fns []string) error {
	var missing []string
	for _, fn := range fns {
		if _, ok := functionAccess[fn]; !ok {
			missing = append(missing, fn)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	slices.Sort(missing)
	return fmt.Errorf("functions/%s: no entry in functionAccess (infra/grants.go) saying what the function calls",
		strings.Join(missing, ", functions/"))
}
