package main

import (
	"fmt"
	"slices"
	"strings"
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
}

// functionAccess lists every function the stack deploys with what its code
// calls. A function missing here fails synthesis: a new function must say
// what it needs, rather than inherit everything. The lists follow
// shared/activities (which activities call c.maas, publishOnce or the
// completer) and shared/api.
var functionAccess = map[string]access{
	functionAPI:               {api: true, maas: true, completeTask: true},
	"take-site-slot":          {}, // the site and the throttle's rows: the table grants all have
	"validate-onboarding":     {publish: true},
	"discover-machine":        {maas: true},
	"commission-machine":      {maas: true},
	"power-cycle-machine":     {maas: true},
	"check-machine":           {maas: true},
	"configure-storage":       {maas: true},
	"verify-hardware":         {maas: true},
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
	"finish-decommission":    {publish: true},
	"release-machine":        {maas: true},
	functionStartReimage:     {},
	// reconcile (infra/reconcile.go) reads MAAS and publishes drift events;
	// it also describes onboarding executions, granted with its state machine.
	functionReconcile:   {maas: true, publish: true},
	"finish-onboarding": {publish: true},
	// The machine watch (infra/watch.go): watch-machine only stores the
	// wait's task token in the table and never reaches MAAS; watch-sites
	// reads each watched site's MAAS events and completes the tokens.
	functionWatchMachine: {},
	functionWatchSites:   {maas: true, completeTask: true},
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
