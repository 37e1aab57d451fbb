package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/pflag"
)

// Every wait and watch of the admin commands runs in pollLoop and prints
// its lines with printEvent, whatever the resource (onboarding,
// decommission, batch, reconcile run).

// timeoutFlag adds --timeout to a command that waits.
func timeoutFlag(fs *pflag.FlagSet) {
	fs.Duration("timeout", 0, "give up waiting after this long (e.g. 30m; 0 waits until the end); the work itself goes on")
}

// pollLoop runs step, then again every interval, until step reports done
// (returning step's error with it) or fails for good. A failure isTransient calls passing is retried, with
// a warning, up to adminWatchMaxFailures times in a row. --timeout, when
// set, bounds the whole wait on the CLI's clock.
func (r *adminRun) pollLoop(ctx context.Context, interval time.Duration, step func() (done bool, err error)) error {
	timeout := r.duration("timeout")
	if timeout < 0 {
		return usagef("--timeout must not be negative")
	}
	deadline := r.env.clock.Now().Add(timeout)
	failures := 0
	for {
		done, err := step()
		switch {
		case done:
			// The end, with its outcome (nil, an exit code or an error).
			return err
		case err != nil && isTransient(err) && failures < adminWatchMaxFailures:
			failures++
			fmt.Fprintf(r.env.stderr, "warning: poll %d/%d failed, retrying in %s: %s\n", failures, adminWatchMaxFailures, interval, adminCell(err.Error()))
		case err != nil:
			return err
		default:
			failures = 0
		}
		if timeout > 0 && !r.env.clock.Now().Before(deadline) {
			return fmt.Errorf("gave up waiting after --timeout %s; the work goes on on the server (watch it again to follow it)", timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-r.env.clock.After(interval):
		}
	}
}

// printEvent prints one line of a watch: v as a JSON line (-o json) or a
// YAML document (-o yaml), else line for people.
func (r *adminRun) printEvent(v any, line string) {
	if r.machine() {
		if r.yaml() {
			fmt.Fprintln(r.env.stdout, "---")
		}
		if b, err := json.Marshal(v); err == nil {
			r.emit(b)
		}
		return
	}
	fmt.Fprintln(r.env.stdout, adminCell(line))
}
