package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/maasflow/maasflow/shared/store"
)

// access is what one function does beyond the grants every function has
// (its own log group, X-Ray). Each flag maps to the statements below;
// infra/stack_test.go walks the template and fails on any statement a
// function's access does not explain, and infra/tableaccess_test.go fails
// when items or indexes differ from what the function's code can reach
// (internal/tableaccess, a call analysis of the functions).
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
	// without any gets no grant on the indexes at all.
	indexes []string
	// items are the item actions on the table (a subset of tableActions;
	// dynamodb:Query here is a Query of the table itself, not an index's).
	items []string
}

// itemActions is what the function may do to the table's items.
func (a access) itemActions() []string { return a.items }

// The item actions, as the call analysis names them (TransactWriteItems is
// authorised per item kind: Put, Update, Delete, ConditionCheck).
const (
	getItem   = "dynamodb:GetItem"
	putItem   = "dynamodb:PutItem"
	updItem   = "dynamodb:UpdateItem"
	delItem   = "dynamodb:DeleteItem"
	condCheck = "dynamodb:ConditionCheckItem"
	queryItem = "dynamodb:Query"
)

// items lists item actions; the lists below follow the call analysis's
// order (sorted), so that a difference reads at once.
func items(actions ...string) []string { return actions }

// The item actions most activities share. An onboarding's activity reads
// and writes its run's record and timeline, releases the record's locks
// (DeleteItem) and, closing or repairing it, revokes its enrollment token
// (UpdateItem); some also read a partition of the table (Query). A
// decommission's activity does the same without the token.
var (
	runItems      = items(delItem, getItem, putItem, updItem)
	runItemsQuery = items(delItem, getItem, putItem, queryItem, updItem)
	decomItems    = items(delItem, getItem, putItem)
)

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
// what it needs, rather than inherit everything. The flags follow the
// workflows' activity packages (shared/activities/onboarding and
// decommission: which activities call MAAS, publish or complete a task) and
// shared/api; the table's items and indexes are what internal/tableaccess
// finds the function's code can reach (TestTableGrantsFollowTheCode).
var functionAccess = map[string]access{
	functionAPI:               {api: true, maas: true, completeTask: true, items: items(condCheck, delItem, getItem, putItem, queryItem, updItem), indexes: allIndexes()},
	"take-site-slot":          {items: items(delItem, getItem, putItem, queryItem)}, // the site and the throttle's rows; the slot's waiters by prefix
	"validate-onboarding":     {publish: true, items: runItemsQuery},
	"discover-machine":        {maas: true, items: runItemsQuery},
	"commission-machine":      {maas: true, items: runItems},
	"power-cycle-machine":     {maas: true, items: runItems},
	"check-machine":           {maas: true, items: runItems},
	"configure-storage":       {maas: true, items: runItems},
	"verify-hardware":         {maas: true, items: runItems},
	"configure-machine":       {maas: true, items: runItems},
	"preflight-pxe":           {maas: true, items: runItems},
	"apply-roce":              {maas: true, items: runItemsQuery},
	"check-predeploy":         {fetch: true, items: runItems},
	"deploy-machine":          {maas: true, items: runItems},
	"classify-deploy-failure": {maas: true, items: items(getItem, putItem)},
	"recover-deploy":          {maas: true, items: runItems},
	functionAwaitEnrollment:   {completeTask: true, items: runItems},
	"check-completion-gates":  {maas: true, items: runItems},
	"reset-machine":           {maas: true, items: runItemsQuery},
	"adopt-machine":           {maas: true, items: runItems},
	// The decommission path (infra/decommission.go grants the state machine,
	// start-reimage's StartExecution and the allocation service's secret).
	"begin-decommission":     {publish: true, items: items(delItem, getItem, putItem, queryItem)},
	"check-reimage":          {items: decomItems},
	"check-release":          {maas: true, items: decomItems},
	"delete-machine":         {maas: true, items: decomItems},
	functionDrainAllocations: {items: decomItems},
	"fallback-release":       {maas: true, items: decomItems},
	// finish-decommission and start-reimage revoke the node's enrollment
	// tokens, found among its onboardings (ListOnboardings: the index follows
	// the filter at run time, so the analysis counts every one).
	"finish-decommission": {publish: true, items: runItemsQuery, indexes: allIndexes()},
	"release-machine":     {maas: true, items: decomItems},
	functionStartReimage:  {items: runItemsQuery, indexes: allIndexes()},
	// reconcile (infra/reconcile.go) reads MAAS and publishes drift events;
	// it also describes onboarding executions, granted with its state machine.
	// A site's nodes (gsi3) and its open onboardings (ListOnboardings).
	functionReconcile:   {maas: true, publish: true, items: items(delItem, getItem, putItem, queryItem), indexes: allIndexes()},
	"finish-onboarding": {publish: true, items: runItemsQuery},
	// The machine watch (infra/watch.go): watch-machine only stores the
	// wait's task token in the table and never reaches MAAS; watch-sites
	// reads each watched site's MAAS events and completes the tokens.
	functionWatchMachine: {items: items(putItem)}, // store.PutMachineWatch, one conditional put
	functionWatchSites:   {maas: true, completeTask: true, items: items(delItem, getItem, putItem, queryItem)},
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
