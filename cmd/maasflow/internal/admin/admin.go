// Package admin is maasflow's admin CLI: the cobra commands that drive the
// admin API (sites, profiles, roce, skus, onboard, onboardings, batches,
// audit, nodes, decommission, reconcile, drift) and `version`, all through
// the one SDK client (github.com/maasflow/maasflow/client). cmd/maasflow
// adds them to its root beside the commands that run the stack (local,
// sim, asl, connector, login), and reports errors with ExitCode so every
// command exits the same way.
package admin

import (
	"context"
	"io"
	"net/http"

	"github.com/spf13/cobra"

	"github.com/maasflow/maasflow/shared/clock"
)

// Env is everything the commands touch outside themselves, so tests drive
// them with a recording server, a fake clock and fixed stdin.
type Env struct {
	Stdout, Stderr io.Writer
	Stdin          io.Reader
	// StdinTTY reports whether stdin is a terminal: credentials are not
	// typed on a terminal, where they would stay in the scrollback.
	StdinTTY bool
	// StdoutTTY reports whether stdout is a terminal: watching a batch
	// redraws a live table there, and prints plain lines anywhere else.
	StdoutTTY bool
	// Width is the terminal's width in columns, 0 when unknown.
	Width  func() int
	Getenv func(string) string
	Clock  clock.Clock
	HTTP   *http.Client
	// Token returns the token of the session `maasflow login` stored at
	// path (TokenPath), refreshed when about to expire; "" without one.
	Token func(ctx context.Context, path string) (string, error)
}

// CLI is one execution of an admin command.
type CLI struct {
	c *cli
}

// New makes the admin commands of one execution in env.
func New(env Env) *CLI {
	return &CLI{c: &cli{env: &cliEnv{
		stdout: env.Stdout, stderr: env.Stderr, stdin: env.Stdin,
		stdinTTY: env.StdinTTY, stdoutTTY: env.StdoutTTY, width: env.Width,
		getenv: env.Getenv, clock: env.Clock, http: env.HTTP, token: env.Token,
	}}}
}

// Commands are the admin API commands, each with the common admin flags.
func (a *CLI) Commands() []*cobra.Command { return a.c.commands() }

// ConfigCommand is `maasflow config`: the contexts of the config file.
func (a *CLI) ConfigCommand() *cobra.Command { return a.c.configCommand() }

// VersionCommand is `maasflow version`.
func (a *CLI) VersionCommand() *cobra.Command { return a.c.versionCommand() }

// Err is what the command that ran returned (nil when none ran or it
// succeeded). An error cobra returns itself is a misuse instead.
func (a *CLI) Err() error { return a.c.err }

// Usagef is a misuse of a command: exit 2 with its usage, nothing sent.
func Usagef(format string, args ...any) error { return usagef(format, args...) }

// Exit codes shared by every command.
const (
	ExitOK         = adminExitOK
	ExitError      = adminExitError
	ExitUsage      = adminExitUsage
	ExitInterrupts = adminExitInterrupts
)

// NoPositional refuses positional arguments as a usage error.
func NoPositional(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("unexpected argument %q", args[0])
	}
	return nil
}

// The environment the admin commands read. The token is only ever taken
// from the environment (or a login), never from a flag.
const (
	EnvAPIURL = envAdminAPIURL
	EnvToken  = envAdminToken
)

// The line formats of -o json output a script reads.
type (
	// WatchEvent is one line of `onboardings watch -o json`.
	WatchEvent = adminWatchEvent
	// DecomEvent is one line of `decommission watch -o json`.
	DecomEvent = adminDecomEvent
	// RoCEView is one RoCE assignment as `roce list -o json` shows it.
	RoCEView = adminRoCEView
	// Version is what `maasflow version -o json` prints.
	Version = adminVersion
)

// WatchStatusKind is the kind of a watch line that reports a record change
// rather than a timeline row.
const WatchStatusKind = adminWatchStatus

// Limits a test of the whole binary counts requests by.
const (
	// WatchMaxFailures is how many reads in a row a watch may fail.
	WatchMaxFailures = adminWatchMaxFailures
	// DriftPageLimit is the page size of `drift list --all`.
	DriftPageLimit = adminDriftPageLimit
)
