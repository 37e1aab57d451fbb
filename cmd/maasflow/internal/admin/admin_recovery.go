package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/maasflow/maasflow/shared/domain"
)

// adminRecoveryOp is one recovery operation (docs/recovery.md) as a
// command: the command's name and the operation it posts.
type adminRecoveryOp struct {
	name  string
	op    domain.RecoveryOperation
	short string
}

// adminRecoveryOps are the onboardings' recovery commands, in the order an
// operator reaches for them. Each posts
// /api/v1/admin/onboardings/{id}/<op>; the API decides what is allowed.
var adminRecoveryOps = []adminRecoveryOp{
	{"retry", domain.OpRetry, "run the stage that stopped a failed or manual_intervention onboarding again, in the same attempt"},
	{"resume", domain.OpResume, "continue a manual_intervention onboarding from its last safe checkpoint, after MAAS is read again"},
	{"rerun", domain.OpRerun, "run a failed or manual_intervention onboarding again from the top as a new attempt"},
	{"restart-clean", domain.OpRestartClean, "release the MAAS machine with the erase policy, revoke every token and start a new attempt that commissions afresh"},
	{"adopt", domain.OpAdopt, "continue from what MAAS and the node show now (a machine handled outside maasflow)"},
	{"freeze", domain.OpMarkManualIntervention, "stop a pending or running onboarding's workflow and hold it in manual_intervention; the host stays locked"},
}

func (c *cli) recoveryLeaves() []*cobra.Command {
	out := make([]*cobra.Command, 0, len(adminRecoveryOps))
	for _, ro := range adminRecoveryOps {
		out = append(out, c.leaf(adminSpec{
			use: ro.name + " ONBOARDING", short: ro.short, args: []string{"ONBOARDING"},
			example: fmt.Sprintf("  maasflow onboardings %s gpu-node-01 --reason %q --wait", ro.name, "ticket OPS-1234"),
			flags: func(fs *pflag.FlagSet) {
				fs.String("reason", "", "why, recorded on the onboarding's timeline and in the audit trail")
				fs.Bool("wait", false, "follow the run the operation leaves until it ends; the exit code tells the outcome")
				fs.Duration("interval", adminDefaultInterval, "how often --wait polls")
				timeoutFlag(fs)
				if ro.op == domain.OpRestartClean {
					destructiveFlags(fs)
				}
			},
			run: runRecovery(ro.op),
		}))
	}
	return out
}

// runRecovery posts a recovery operation and prints where the onboarding
// stands after it; --wait then follows the run (only what the operation
// added to the timeline) and exits as onboard --wait does. A 409 also
// prints the operations the onboarding allows now.
func runRecovery(op domain.RecoveryOperation) func(ctx context.Context, r *adminRun, args []string) error {
	return func(ctx context.Context, r *adminRun, args []string) error {
		wait := r.boolean("wait")
		interval, err := r.positiveInterval()
		if err != nil {
			return err
		}
		destructive := op == domain.OpRestartClean
		if destructive && !r.dryRun() {
			if err := r.confirm(fmt.Sprintf("restart onboarding %s clean: release its MAAS machine with the erase policy, revoke every token and start over", args[0])); err != nil {
				return err
			}
		}
		c, err := r.client()
		if err != nil {
			return err
		}
		id, err := r.onboardingID(ctx, c, args[0])
		if err != nil {
			return err
		}
		if destructive && r.dryRun() {
			return r.planRestartClean(ctx, c, id)
		}
		var f *adminFollower
		if wait {
			// What the timeline holds now was printed by earlier runs.
			f = newFollower(id)
			if _, _, err := f.poll(ctx, c); err != nil {
				return err
			}
		}
		resp, err := r.postRecovery(ctx, c, adminPath(adminOnboardingsPath, id, string(op)), func() { r.printAllowed(ctx, c, id) })
		if err != nil {
			return err
		}
		var o domain.Onboarding
		if err := resp.decode(&o); err != nil {
			return err
		}
		switch {
		case r.machine() && !wait:
			r.emit(resp.Body)
		case !r.machine():
			fmt.Fprintf(r.env.stdout, "%s: onboarding %s attempt %d run %d is %s at stage %s\n", op, adminCell(o.ID), o.Attempt, o.Run,
				adminCell(string(o.Status)), adminCell(stageOrStart(string(o.Stage))))
		}
		if !wait {
			return nil
		}
		return r.follow(ctx, c, f, interval)
	}
}

// printAllowed tells, after a refused operation, what the onboarding is
// and which operations it allows now. Best effort: the refusal is the
// error that counts.
func (r *adminRun) printAllowed(ctx context.Context, c *adminClient, id string) {
	resp, err := c.do(ctx, http.MethodGet, adminPath(adminOnboardingsPath, id), nil, nil)
	if err != nil {
		return
	}
	var d adminOnboardingDetail
	if err := resp.decode(&d); err != nil {
		return
	}
	fmt.Fprintf(r.env.stderr, "onboarding %s is %s at stage %s (attempt %d, run %d); allowed operations: %s\n",
		adminCell(d.ID), adminCell(string(d.Status)), adminCell(stageOrStart(string(d.Stage))), d.Attempt, d.Run, adminCell(opsLine(d.AllowedOperations)))
}

// postRecovery posts a recovery operation to path with the --reason, if
// given. A refusal (409) also runs refused, which tells what the record
// allows now.
func (r *adminRun) postRecovery(ctx context.Context, c *adminClient, path string, refused func()) (*adminResponse, error) {
	var body any
	if r.changed("reason") {
		body = map[string]string{"reason": r.str("reason")}
	}
	resp, err := c.do(ctx, http.MethodPost, path, nil, body)
	if err != nil {
		var apiE *adminAPIError
		if errors.As(err, &apiE) && apiE.Status == http.StatusConflict {
			refused()
		}
		return nil, err
	}
	return resp, nil
}

// opsLine lists recovery operations for a person: "none" when there are
// none.
func opsLine(ops []string) string {
	if len(ops) == 0 {
		return "none"
	}
	return strings.Join(ops, ", ")
}

func stageOrStart(s string) string {
	if s == "" {
		return "start"
	}
	return s
}
