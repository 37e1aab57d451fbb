// Command maasflow is the operator's binary: `local` runs the embedded stack
// (ASL runtime, handlers, DynamoDB, bus, secrets, admin API), `sim` runs the
// MAAS simulator alone, `asl` validates and runs state machines, and the
// admin commands (sites, profiles, roce, skus, onboard, onboardings,
// batches, audit) are a client of the admin API.
package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/term"

	"github.com/maasflow/maasflow/shared/clock"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes one command line and returns the process exit code. A
// command prints without checking each write; run checks stdout once at the
// end, so output lost to a full disk or a closed pipe still fails the
// command.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	out := &outputWriter{w: stdout}
	env := &cliEnv{
		stdout:    out,
		stderr:    stderr,
		stdin:     os.Stdin,
		stdinTTY:  isTerminal(os.Stdin),
		stdoutTTY: stdout == os.Stdout && term.IsTerminal(int(os.Stdout.Fd())),
		width: func() int {
			w, _, err := term.GetSize(int(os.Stdout.Fd()))
			if err != nil {
				return 0
			}
			return w
		},
		getenv: os.Getenv,
		clock:  clock.Real(),
		http:   &http.Client{},
	}
	code := execute(ctx, env, args)
	if err := out.Err(); err != nil && code == 0 {
		fmt.Fprintf(stderr, "maasflow: write output: %v\n", err)
		return 1
	}
	return code
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
