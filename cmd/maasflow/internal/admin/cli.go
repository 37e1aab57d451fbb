package admin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/maasflow/maasflow/shared/clock"
)

// Environment the admin commands read. The token is only ever taken from the
// environment: a flag would land in shell history and in `ps` output.
const (
	envAdminAPIURL = "MAASFLOW_API_URL"
	envAdminToken  = "MAASFLOW_ADMIN_TOKEN"

	adminDefaultAPIURL = "http://127.0.0.1:8080"
)

// Exit codes. 3 and 4 let a script tell "an operator must look at this
// host" from "this onboarding is over and did not succeed".
const (
	adminExitOK         = 0
	adminExitError      = 1
	adminExitUsage      = 2
	adminExitManual     = 3
	adminExitFailed     = 4
	adminExitInterrupts = 130
)

// cliEnv is everything a command touches outside itself, so tests drive
// the commands with a recording server, a fake clock and fixed stdin.
type cliEnv struct {
	stdout, stderr io.Writer
	stdin          io.Reader
	// stdinTTY reports whether stdin is a terminal: credentials are not
	// typed on a terminal, where they would stay in the scrollback.
	stdinTTY bool
	// stdoutTTY reports whether stdout is a terminal: watching a batch
	// redraws a live table there, and prints plain lines anywhere else.
	stdoutTTY bool
	// width is the terminal's width in columns, 0 when unknown.
	width  func() int
	getenv func(string) string
	clock  clock.Clock
	http   *http.Client
	// token reads the session login stored at a path, refreshing it.
	token func(ctx context.Context, path string) (string, error)
}

// cli is one execution: the environment, the common admin flags (one
// command runs per execution, so one set serves them all) and the error
// the command's own code returned.
type cli struct {
	env *cliEnv
	// err is what the command returned; an error cobra returns itself is a
	// misuse (unknown flag, wrong arguments).
	err         error
	apiURL      string
	output      string
	noHeaders   bool
	contextName string
}

// Output formats of -o.
const (
	adminOutputTable = "table"
	adminOutputJSON  = "json"
	adminOutputYAML  = "yaml"
)

var adminOutputs = []string{adminOutputTable, adminOutputJSON, adminOutputYAML}

// adminUsageError is a misuse of a command: exit 2 with its usage, nothing
// sent.
type adminUsageError struct {
	Reason string
}

func (e *adminUsageError) Error() string { return e.Reason }

func usagef(format string, args ...any) error {
	return &adminUsageError{Reason: fmt.Sprintf(format, args...)}
}

// ExitCodeError ends a command with a given exit code after the command
// has said why (a watch that ended in manual_intervention, an unhealthy
// probe).
type ExitCodeError struct {
	Code int
}

func (e *ExitCodeError) Error() string { return fmt.Sprintf("exit code %d", e.Code) }

// adminHintedError is an error followed by lines that relate it to the
// operator's input.
type adminHintedError struct {
	Err   error
	Hints []string
}

func (e *adminHintedError) Error() string { return e.Err.Error() }
func (e *adminHintedError) Unwrap() error { return e.Err }

// ExitCode reports err on w and returns the exit code that goes with it:
// usage for a misuse (an error cobra itself returned, misuse true, or a
// usage error), 1 for everything else (API errors included).
func ExitCode(w io.Writer, cmd *cobra.Command, err error, misuse bool) int {
	var (
		usage *adminUsageError
		exit  *ExitCodeError
		apiE  *adminAPIError
		hint  *adminHintedError
	)
	code := adminExitError
	switch {
	case errors.As(err, &exit):
		return exit.Code
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(w, "error: interrupted")
		return adminExitInterrupts
	case errors.As(err, &usage) || misuse:
		// Errors cobra returns itself (unknown command or flag, bad flag
		// value) are misuse too.
		fmt.Fprintf(w, "%s: %s\n\n", cmd.CommandPath(), adminCell(err.Error()))
		fmt.Fprint(w, cmd.UsageString())
		return adminExitUsage
	case errors.As(err, &apiE):
		fmt.Fprintf(w, "error: %s\n", apiErrorText(apiE))
	default:
		fmt.Fprintf(w, "error: %s\n", adminCell(err.Error()))
	}
	if errors.As(err, &hint) {
		for _, h := range hint.Hints {
			fmt.Fprintln(w, adminCell(h))
		}
	}
	return code
}

const adminUsageFooter = `
The admin API is $MAASFLOW_API_URL (or --api-url; default ` + adminDefaultAPIURL + `) and the
bearer token is read from $MAASFLOW_ADMIN_TOKEN only, never from a flag.
Exit codes: 0 ok, 1 API or network error, 2 misuse, 3 manual intervention,
4 failed or cancelled (3 and 4 from --wait and watch), 130 interrupted.
`

// Commands are the admin API commands, each with the common admin flags.
func (c *cli) commands() []*cobra.Command {
	cmds := []*cobra.Command{
		c.sitesCommand(), c.profilesCommand(), c.roceCommand(), c.skusCommand(),
		c.onboardCommand(), c.onboardingsCommand(), c.batchesCommand(), c.auditCommand(),
		c.nodesCommand(), c.decommissionCommand(), c.reconcileCommand(), c.driftCommand(),
		c.designCommand(),
	}
	for _, cmd := range cmds {
		c.addAdminFlags(cmd)
	}
	return cmds
}

// NoArgsOrUnknown accepts a group called alone (GroupRun calls that a
// misuse) and turns a word that is no sub-command into a usage error.
func NoArgsOrUnknown(cmd *cobra.Command, args []string) error {
	if len(args) == 0 || args[0] == "help" {
		return nil
	}
	return usagef("unknown command %q for %q", args[0], cmd.CommandPath())
}

// GroupRun runs a command that only holds sub-commands: `GROUP help` prints
// its help, `GROUP` alone is a misuse.
func GroupRun(cmd *cobra.Command, args []string) error {
	if len(args) > 0 && args[0] == "help" {
		// `GROUP help SUB` is `GROUP SUB --help`.
		if sub, rest, err := cmd.Find(args[1:]); err == nil && sub != cmd && len(rest) == 0 {
			return sub.Help()
		}
		return cmd.Help()
	}
	if cmd.HasParent() {
		return usagef("a sub-command is required")
	}
	return usagef("a command is required")
}

// group makes a command that holds sub-commands.
func (c *cli) group(use, short string, subs ...*cobra.Command) *cobra.Command {
	return Group(use, short, subs...)
}

// Group makes a command that holds sub-commands.
func Group(use, short string, subs ...*cobra.Command) *cobra.Command {
	g := &cobra.Command{Use: use, Short: short, Args: NoArgsOrUnknown, RunE: GroupRun}
	g.AddCommand(subs...)
	return g
}

// addAdminFlags adds the flags every admin command takes to cmd and its
// sub-commands, and the admin help footer.
func (c *cli) addAdminFlags(cmd *cobra.Command) {
	pf := cmd.PersistentFlags()
	c.contextFlag(pf)
	pf.StringVar(&c.apiURL, "api-url", "", "admin API base URL (default $MAASFLOW_API_URL, else "+adminDefaultAPIURL+")")
	pf.StringVarP(&c.output, "output", "o", adminOutputTable, "output format: table, json (the API's JSON verbatim) or yaml")
	pf.BoolVar(&c.noHeaders, "no-headers", false, "print tables without their header line")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(adminOutputs, cobra.ShellCompDirectiveNoFileComp))
	cmd.SetUsageTemplate(cmd.UsageTemplate() + adminUsageFooter)
}

// adminSpec describes one admin command that does something.
type adminSpec struct {
	use     string   // "get SITE"
	short   string   // one line of help
	long    string   // more help, optional
	example string   // optional
	args    []string // names of the positional arguments, in order
	flags   func(*pflag.FlagSet)
	// complete proposes values for the positional arguments.
	complete func(r *adminRun, args []string) []string
	run      func(ctx context.Context, r *adminRun, args []string) error
}

// leaf makes an admin command from its spec.
func (c *cli) leaf(s adminSpec) *cobra.Command {
	cmd := &cobra.Command{
		Use:     s.use,
		Short:   s.short,
		Long:    s.long,
		Example: s.example,
		Args:    exactIDs(s.args...),
	}
	if s.flags != nil {
		s.flags(cmd.Flags())
	}
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		r := &adminRun{cli: c, cmd: cmd}
		if !validOutput(c.output) {
			return usagef("-o must be one of %s, not %q", strings.Join(adminOutputs, ", "), c.output)
		}
		c.err = s.run(cmd.Context(), r, args)
		return nil
	}
	if s.complete != nil {
		cmd.ValidArgsFunction = func(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if len(args) >= len(s.args) {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return s.complete(&adminRun{cli: c, cmd: cmd}, args), cobra.ShellCompDirectiveNoFileComp
		}
	} else if len(s.args) == 0 {
		cmd.ValidArgsFunction = cobra.NoFileCompletions
	}
	return cmd
}

func validOutput(o string) bool {
	for _, v := range adminOutputs {
		if o == v {
			return true
		}
	}
	return false
}

// exactIDs wants exactly the named positional arguments, each a usable id
// or name.
func exactIDs(names ...string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		switch {
		case len(args) < len(names):
			return usagef("expected %d argument(s) (%s), got %d", len(names), strings.Join(names, " "), len(args))
		case len(args) > len(names):
			return usagef("unexpected argument %q", args[len(names)])
		}
		for _, a := range args {
			if a == "" || a == "." || a == ".." {
				return usagef("%q is not a valid id or name", a)
			}
		}
		return nil
	}
}

// adminRun is one invocation of one admin command.
type adminRun struct {
	*cli
	cmd *cobra.Command
}

func (r *adminRun) yaml() bool { return r.output == adminOutputYAML }

// machine reports whether the output is for programs (json or yaml).
func (r *adminRun) machine() bool { return r.output != adminOutputTable }

func (r *adminRun) changed(name string) bool { return r.cmd.Flags().Changed(name) }

func (r *adminRun) str(name string) string {
	v, _ := r.cmd.Flags().GetString(name)
	return v
}

func (r *adminRun) boolean(name string) bool {
	v, _ := r.cmd.Flags().GetBool(name)
	return v
}

func (r *adminRun) integer(name string) int {
	v, _ := r.cmd.Flags().GetInt(name)
	return v
}

func (r *adminRun) duration(name string) time.Duration {
	v, _ := r.cmd.Flags().GetDuration(name)
	return v
}

// requireFlags fails when one of the named flags was not given.
func (r *adminRun) requireFlags(names ...string) error {
	for _, n := range names {
		if !r.changed(n) {
			return usagef("--%s is required", n)
		}
	}
	return nil
}

// positiveInterval checks --interval.
func (r *adminRun) positiveInterval() (time.Duration, error) {
	iv := r.duration("interval")
	if iv <= 0 {
		return 0, usagef("--interval must be positive")
	}
	return iv, nil
}

// limitQuery copies --limit, when given, into q: a page size must be
// positive.
func (r *adminRun) limitQuery(q map[string][]string) error {
	if !r.changed("limit") {
		return nil
	}
	n := r.integer("limit")
	if n < 1 {
		return usagef("--limit must be a positive integer")
	}
	q["limit"] = []string{fmt.Sprint(n)}
	return nil
}
