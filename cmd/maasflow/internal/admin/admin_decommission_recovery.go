package admin

import (
	"context"
	"fmt"
	"net/http"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/maasflow/maasflow/shared/domain"
)

// Decommission recovery commands (docs/recovery.md, docs/cli.md), on the
// onboardings' adminRecoveryOp: the same verbs over
// /api/v1/admin/decommissions/{id}/<op>, plus cancel (an onboarding's has
// its own command) and without restart-clean (rerun is a decommission's
// clean restart).
var decommissionRecoveryOps = []adminRecoveryOp{
	{"retry", domain.OpRetry, "run again the stage that stopped a manual_intervention decommission (same attempt)"},
	{"resume", domain.OpResume, "continue a stopped decommission from its last safe checkpoint, once MAAS agrees"},
	{"rerun", domain.OpRerun, "run a stopped decommission again from the top as a new attempt"},
	{"adopt", domain.OpAdopt, "take a machine MAAS already shows released (Ready) and finish the decommission"},
	{"cancel", domain.OpCancel, "stop an open decommission: abort MAAS's operation where it allows, revoke the reimage's tokens, free the node"},
	{"freeze", domain.OpMarkManualIntervention, "stop a pending or running decommission's workflow and hold it in manual_intervention"},
}

// startsRun: the operation leaves a run that --wait follows.
func startsRun(op domain.RecoveryOperation) bool {
	return op != domain.OpCancel && op != domain.OpMarkManualIntervention
}

// decommissionRecoveryCommands are the recovery leaves of the decommission
// group.
func (c *cli) decommissionRecoveryCommands() []*cobra.Command {
	out := make([]*cobra.Command, 0, len(decommissionRecoveryOps))
	for _, ro := range decommissionRecoveryOps {
		starts := startsRun(ro.op)
		long := ro.short + ".\n\nDECOMMISSION is an id, or a node (id or host name) for its newest decommission."
		if starts {
			long += "\n--wait follows the new run to the end: exit 0 completed, 3 manual intervention, 4 failed."
		}
		out = append(out, c.leaf(adminSpec{
			use: ro.name + " DECOMMISSION", short: ro.short, long: long, args: []string{"DECOMMISSION"},
			example: fmt.Sprintf("  maasflow decommissions %s gpu-node-01 --reason %q", ro.name, "ticket OPS-1234"),
			flags: func(fs *pflag.FlagSet) {
				fs.String("reason", "", "why, recorded on the decommission's timeline and in the audit trail")
				if starts {
					fs.Bool("wait", false, "follow the new run to the end; the exit code tells the outcome")
					fs.Duration("interval", adminDefaultInterval, "how often --wait polls")
					timeoutFlag(fs)
				}
			},
			run: runDecommissionRecovery(ro),
		}))
	}
	return out
}

// adminDecommissionRecovered is a recovery operation's answer.
type adminDecommissionRecovered struct {
	domain.Decommission
	AllowedOperations []string `json:"allowed_operations"`
}

// runDecommissionRecovery posts a recovery operation and prints where the
// decommission stands after it and what it allows now; --wait follows the
// new run like decommission watch. A 409 also prints what the
// decommission allows.
func runDecommissionRecovery(ro adminRecoveryOp) func(ctx context.Context, r *adminRun, args []string) error {
	starts := startsRun(ro.op)
	return func(ctx context.Context, r *adminRun, args []string) error {
		wait := starts && r.boolean("wait")
		interval := adminDefaultInterval
		if starts {
			var err error
			if interval, err = r.positiveInterval(); err != nil {
				return err
			}
		}
		c, err := r.client()
		if err != nil {
			return err
		}
		id, err := r.decommissionID(ctx, c, args[0])
		if err != nil {
			return err
		}
		resp, err := r.postRecovery(ctx, c, adminPath(adminDecommissionsPath, id, string(ro.op)), func() { r.printDecomAllowed(ctx, c, id) })
		if err != nil {
			return err
		}
		var d adminDecommissionRecovered
		if err := resp.decode(&d); err != nil {
			return err
		}
		if r.machine() {
			if !wait {
				r.emit(resp.Body)
			}
		} else {
			fmt.Fprintf(r.env.stdout, "%s: decommission %s (%s) of node %s attempt %d run %d is %s at stage %s\n", ro.name,
				adminCell(d.ID), adminCell(d.Mode), adminCell(d.NodeID), d.Attempt, d.Run, adminCell(string(d.Status)), adminCell(stageOrStart(string(d.Stage))))
			fmt.Fprintf(r.env.stdout, "allowed operations now: %s\n", adminCell(opsLine(d.AllowedOperations)))
			if starts && !wait {
				fmt.Fprintf(r.env.stdout, "follow it with: maasflow decommission watch %s\n", adminCell(d.ID))
			}
		}
		if !wait {
			return nil
		}
		return r.watchDecommission(ctx, c, d.ID, interval)
	}
}

// printDecomAllowed tells, after a refused operation, what the
// decommission is and which operations it allows now. Best effort: the
// refusal is the error that counts.
func (r *adminRun) printDecomAllowed(ctx context.Context, c *adminClient, id string) {
	resp, err := c.do(ctx, http.MethodGet, adminPath(adminDecommissionsPath, id), nil, nil)
	if err != nil {
		return
	}
	var d adminDecommissionDetail
	if err := resp.decode(&d); err != nil {
		return
	}
	fmt.Fprintf(r.env.stderr, "decommission %s is %s at stage %s (attempt %d, run %d); allowed operations: %s\n",
		adminCell(d.ID), adminCell(string(d.Status)), adminCell(stageOrStart(string(d.Stage))), d.Attempt, d.Run, adminCell(opsLine(d.AllowedOperations)))
}
