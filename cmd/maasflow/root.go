package main

import (
	"context"
	"io"
	"net/http"

	"github.com/spf13/cobra"

	"github.com/maasflow/maasflow/cmd/maasflow/internal/admin"
	"github.com/maasflow/maasflow/shared/clock"
)

// cliEnv is everything a command touches outside itself, so tests drive
// the commands with a recording server, a fake clock and fixed stdin.
type cliEnv struct {
	stdout, stderr io.Writer
	stdin          io.Reader
	// stdinTTY reports whether stdin is a terminal.
	stdinTTY bool
	// stdoutTTY reports whether stdout is a terminal.
	stdoutTTY bool
	// width is the terminal's width in columns, 0 when unknown.
	width  func() int
	getenv func(string) string
	clock  clock.Clock
	http   *http.Client
}

// cli is one execution: the environment, the admin commands (package
// admin) and the error a command of this package returned.
type cli struct {
	env   *cliEnv
	admin *admin.CLI
	// err is what the command returned; an error cobra returns itself is a
	// misuse (unknown flag, wrong arguments).
	err error
}

// The pieces of the admin package the stack's commands share.
type adminExitCodeError = admin.ExitCodeError

const (
	adminExitError = admin.ExitError
	envAdminToken  = admin.EnvToken
	envAdminAPIURL = admin.EnvAPIURL
)

var noPositional = admin.NoPositional

func usagef(format string, args ...any) error { return admin.Usagef(format, args...) }

// execute runs one command line in env and returns the exit code.
func execute(ctx context.Context, env *cliEnv, args []string) int {
	c := &cli{env: env, admin: admin.New(admin.Env{
		Stdout: env.stdout, Stderr: env.stderr, Stdin: env.stdin,
		StdinTTY: env.stdinTTY, StdoutTTY: env.stdoutTTY, Width: env.width,
		Getenv: env.getenv, Clock: env.clock, HTTP: env.http, Token: storedToken,
	})}
	root := c.rootCommand()
	root.SetArgs(args)
	root.SetOut(env.stdout)
	root.SetErr(env.stderr)
	root.SetIn(env.stdin)
	cmd, err := root.ExecuteContextC(ctx)
	ran := c.err
	if ran == nil {
		ran = c.admin.Err()
	}
	if err == nil {
		err = ran
	}
	if err == nil {
		return admin.ExitOK
	}
	return admin.ExitCode(env.stderr, cmd, err, ran == nil)
}

// rootCommand builds the whole command tree.
func (c *cli) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "maasflow",
		Short: "Onboard bare-metal GPU servers through Canonical MAAS",
		Long: `maasflow onboards bare-metal GPU servers through Canonical MAAS.

"maasflow local --demo" runs the whole stack on this machine with a MAAS
simulator; the admin commands talk to its API (or to the deployed one).`,
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          admin.NoArgsOrUnknown,
		RunE:          admin.GroupRun,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usagef("%s", err.Error()) })
	root.CompletionOptions.HiddenDefaultCmd = false
	root.AddGroup(
		&cobra.Group{ID: "stack", Title: "Run the stack:"},
		&cobra.Group{ID: "admin", Title: "Admin API commands:"},
	)
	for _, cmd := range []*cobra.Command{c.localCommand(), c.simCommand(), c.aslCommand(), c.connectorCommand()} {
		cmd.GroupID = "stack"
		root.AddCommand(cmd)
	}
	for _, cmd := range c.admin.Commands() {
		cmd.GroupID = "admin"
		root.AddCommand(cmd)
	}
	root.AddCommand(c.admin.VersionCommand(), c.loginCommand(), c.admin.ConfigCommand())
	return root
}

// group makes a command that holds sub-commands.
func (c *cli) group(use, short string, subs ...*cobra.Command) *cobra.Command {
	return admin.Group(use, short, subs...)
}
