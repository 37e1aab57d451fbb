package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/maasflow/maasflow/client"

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

// followStream is pollLoop fed by the server: it follows the stream at path
// (the server pushes the resource's document at once and after each
// change) and hands each state to handle, until handle reports done. Where
// the server does not stream (client.ErrStreamsUnsupported) it polls
// instead: read every interval, as before streams existed. A stream that
// fails transiently is reopened after interval, up to
// adminWatchMaxFailures times in a row; one the server ends (its age) at
// once. --timeout bounds the whole wait on the CLI's clock.
func followStream[T any](ctx context.Context, r *adminRun, c *adminClient, path string, interval time.Duration,
	handle func(T) (done bool, err error), read func() (T, error)) error {
	timeout := r.duration("timeout")
	if timeout < 0 {
		return usagef("--timeout must not be negative")
	}
	start := r.env.clock.Now()
	poll := func() error {
		return r.pollLoop(ctx, interval, func() (bool, error) {
			v, err := read()
			if err != nil {
				return false, err
			}
			return handle(v)
		})
	}
	gaveUp := fmt.Errorf("gave up waiting after --timeout %s; the work goes on on the server (watch it again to follow it)", timeout)
	sctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	timerOn := false
	failures := 0
	for {
		s, err := c.OpenStream(sctx, path)
		if errors.Is(err, client.ErrStreamsUnsupported) && !timerOn {
			return poll()
		}
		if err == nil {
			if c.sawHeader != nil {
				c.sawHeader(s.Header)
			}
			if timeout > 0 && !timerOn {
				// Started only once the stream is open: a poll fallback
				// keeps pollLoop's own deadline.
				timerOn = true
				left := timeout - r.env.clock.Since(start)
				go func() {
					select {
					case <-r.env.clock.After(left):
						cancel(gaveUp)
					case <-sctx.Done():
					}
				}()
			}
			var done bool
			done, err = streamStates(s, handle, &failures)
			_ = s.Close()
			if done {
				return err
			}
		}
		if cause := context.Cause(sctx); cause != nil && ctx.Err() == nil {
			return cause
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err == nil {
			continue // the server ended the stream: reopen
		}
		if !isTransient(err) || failures >= adminWatchMaxFailures {
			return err
		}
		failures++
		fmt.Fprintf(r.env.stderr, "warning: stream %d/%d failed, reconnecting in %s: %s\n", failures, adminWatchMaxFailures, interval, adminCell(err.Error()))
		select {
		case <-sctx.Done():
		case <-r.env.clock.After(interval):
		}
	}
}

// streamStates hands each state of one open stream to handle until the
// stream ends (nil error, not done) or handle reports done.
func streamStates[T any](s *client.EventStream, handle func(T) (bool, error), failures *int) (bool, error) {
	for n := 0; ; n++ {
		v, err := client.NextState[T](s)
		if errors.Is(err, io.EOF) && n == 0 {
			// A stream sends the state at once: one that ends first is
			// failing, and is reopened after a pause, not in a loop.
			return false, errors.New("the stream ended before its first event")
		}
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		*failures = 0
		if done, err := handle(v); done || err != nil {
			return true, err
		}
	}
}
