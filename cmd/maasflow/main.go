// Command maasflow is the operator's binary: `local` runs the embedded stack
// (ASL runtime, handlers, DynamoDB, bus, secrets, admin API), `sim` runs the
// MAAS simulator alone, `asl` validates and runs state machines, and the
// admin commands (sites, profiles, roce, skus, onboard, onboardings,
// batches, audit, nodes, decommission, reconcile, drift; package
// internal/admin) are a client of the admin API through the SDK in
// github.com/maasflow/maasflow/client.
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
	env := newEnv(out, stderr)
	if f, ok := stdout.(*os.File); ok {
		env.stdoutTTY, env.width = terminal(f)
	}
	code := execute(ctx, env, args)
	if err := out.Err(); err != nil && code == 0 {
		fmt.Fprintf(stderr, "maasflow: write output: %v\n", err)
		return 1
	}
	return code
}

// newEnv is the environment of a real run: this process's stdin and
// environment, the wall clock, a plain HTTP client.
func newEnv(stdout, stderr io.Writer) *cliEnv {
	return &cliEnv{
		stdout:   stdout,
		stderr:   stderr,
		stdin:    os.Stdin,
		stdinTTY: isTerminal(os.Stdin),
		getenv:   os.Getenv,
		clock:    clock.Real(),
		http:     &http.Client{},
	}
}

// terminal reports whether f is a terminal and how to read its width.
func terminal(f *os.File) (bool, func() int) {
	fd := int(f.Fd())
	if !term.IsTerminal(fd) {
		return false, nil
	}
	return true, func() int {
		w, _, err := term.GetSize(fd)
		if err != nil {
			return 0
		}
		return w
	}
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
