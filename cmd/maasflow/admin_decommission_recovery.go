package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/maasflow/maasflow/shared/domain"
)

// Decommission recovery commands (docs/recovery.md, docs/cli.md): one
// generic runner over the operation's name, so it folds together with the
// onboardings' recovery commands.

// recoveryVerb is one recovery command: the CLI's verb, the API's
// operation, its help, and whether it starts a run that --wait follows.
type recoveryVerb struct {
	verb, op, short string
	starts          bool
}

var decommissionRecoveryVerbs = []recoveryVerb{
	{verb: "retry", op: string(domain.OpRetry), starts: true,
		short: "run again the stage that stopped a manual_intervention decommission (same attempt)"},
	{verb: "resume", op: string(domain.OpResume), starts: true,
		short: "continue a stopped decommission from its last safe checkpoint, once MAAS agrees"},
	{verb: "rerun", op: string(domain.OpRerun), starts: true,
		short: "run a stopped decommission again from the top as a new attempt"},
	{verb: "adopt", op: string(domain.OpAdopt), starts: true,
		short: "take a machine MAAS already shows released (Ready) and finish the decommission"},
	{verb: "cancel", op: string(domain.OpCancel),
		short: "stop an open decommission: abort MAAS's operation where it allows, revoke the reimage's tokens, free the node"},
	{verb: "freeze", op: string(domain.OpMarkManualIntervention),
		short: "stop a pending or running decommission's workflow and hold it in manual_intervention"},
}

// decommissionRecoveryCommands are the recovery leaves of the decommission
// group.
func (c *cli) decommissionRecoveryCommands() []*cobra.Command {
	out := make([]*cobra.Command, 0, len(decommissionRecoveryVerbs))
	for _, v := range decommissionRecoveryVerbs {
		out = append(out, c.leaf(adminSpec{
			use: v.verb + " DECOMMISSION", short: v.short, args: []string{"DECOMMISSION"},
			long: v.short + ".\n\nDECOMMISSION is an id, or a node (id or host name) for its newest decommission." +
				map[bool]string{true: "\n--wait follows the new run to the end: exit 0 completed, 3 manual intervention, 4 failed.", false: ""}[v.starts],
			flags: func(fs *pflag.FlagSet) {
				fs.String("reason", "", "why, recorded on the decommission")
				if v.starts {
					fs.Bool("wait", false, "follow the new run to the end; the exit code tells the outcome")
					fs.Duration("interval", adminDefaultInterval, "how often --wait polls")
				}
			},
			run: runDecommissionRecovery(v),
		}))
	}
	return out
}

// adminDecommissionRecovered is a recovery operation's answer.
type adminDecommissionRecovered struct {
	domain.Decommission
	AllowedOperations []string `json:"allowed_operations"`
}

func runDecommissionRecovery(v recoveryVerb) func(ctx context.Context, r *adminRun, args []string) error {
	return func(ctx context.Context, r *adminRun, args []string) error {
		wait := v.starts && r.boolean("wait")
		interval := adminDefaultInterval
		if v.starts {
			var err error
			if interval, err = r.positiveInterval(); err != nil {
				return err
			}
		}
		var body any
		if r.changed("reason") {
			body = map[string]string{"reason": r.str("reason")}
		}
		c, err := r.client()
		if err != nil {
			return err
		}
		id, err := r.decommissionID(ctx, c, args[0])
		if err != nil {
			return err
		}
		resp, err := c.do(ctx, http.MethodPost, adminPath(adminDecommissionsPath, id, v.op), nil, body)
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
			fmt.Fprintf(r.env.stdout, "%s: decommission %s (%s) of node %s attempt %d run %d is %s at stage %s\n", v.verb,
				adminCell(d.ID), adminCell(d.Mode), adminCell(d.NodeID), d.Attempt, d.Run, adminCell(string(d.Status)), adminCell(string(d.Stage)))
			fmt.Fprintf(r.env.stdout, "allowed operations now: %s\n", adminCell(opsLine(d.AllowedOperations)))
			if v.starts && !wait {
				fmt.Fprintf(r.env.stdout, "follow it with: maasflow decommission watch %s\n", adminCell(d.ID))
			}
		}
		if !wait {
			return nil
		}
		return r.watchDecommission(ctx, c, d.ID, interval)
	}
}

// opsLine lists recovery operations for a person: "none" when there are
// none.
func opsLine(ops []string) string {
	if len(ops) == 0 {
		return "none"
	}
	return strings.Join(ops, ", ")
}
