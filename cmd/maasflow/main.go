// Command maasflow is the operator's binary: `local` runs the embedded stack
// (ASL runtime, handlers, DynamoDB, bus, secrets, admin API), `sim` runs the
// MAAS simulator alone, and `asl` validates and runs state machines.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

const usage = `usage: maasflow <command> [flags]

commands:
  local   run the embedded stack (API, workflows, MAAS simulator)
  sim     run the MAAS API 2.0 simulator alone
  asl     validate or run Amazon States Language definitions

admin commands (talk to the admin API at $MAASFLOW_API_URL with $MAASFLOW_ADMIN_TOKEN):
  sites, profiles, roce, skus, onboard, onboardings, audit
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run dispatches a command and returns the process exit code. A command
// prints without checking each write; run checks stdout once at the end, so
// output lost to a full disk or a closed pipe still fails the command.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	out := &outputWriter{w: stdout}
	code := dispatch(ctx, args, out, stderr)
	if err := out.Err(); err != nil && code == 0 {
		fmt.Fprintf(stderr, "maasflow: write output: %v\n", err)
		return 1
	}
	return code
}

func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "local":
		return runLocal(ctx, args[1:], stdout, stderr)
	case "sim":
		return runSim(ctx, args[1:], stdout, stderr)
	case "asl":
		return runASL(ctx, args[1:], stdout, stderr)
	case "connector":
		return runConnector(ctx, args[1:], stdout, stderr)
	case "login":
		return runLogin(ctx, args[1:], stdout, stderr)
	case "sites", "profiles", "roce", "skus", "onboard", "onboardings", "audit":
		return runAdmin(ctx, args, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "maasflow: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
}
