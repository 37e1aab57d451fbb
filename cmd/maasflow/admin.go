package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/maasflow/maasflow/shared/clock"
)

// Environment the admin commands read. The token is only ever taken from the
// environment: a flag would land in shell history and in `ps` output.
const (
	envAdminAPIURL = "MAASFLOW_API_URL"
	envAdminToken  = "MAASFLOW_ADMIN_TOKEN"

	adminDefaultAPIURL = "http://127.0.0.1:8080"
)

// Exit codes of the admin commands. 3 and 4 let a script tell "an operator
// must look at this host" from "this onboarding is over and did not succeed".
const (
	adminExitOK         = 0
	adminExitError      = 1
	adminExitUsage      = 2
	adminExitManual     = 3
	adminExitFailed     = 4
	adminExitInterrupts = 130
)

// adminEnv is everything an admin command touches outside itself, so tests
// drive the commands with a recording server, a fake clock and fixed stdin.
type adminEnv struct {
	stdout, stderr io.Writer
	stdin          io.Reader
	// stdinTTY reports whether stdin is a terminal: credentials are not
	// typed on a terminal, where they would stay in the scrollback.
	stdinTTY bool
	getenv   func(string) string
	clock    clock.Clock
	http     *http.Client
}

// runAdmin runs one admin command (args[0] is the command) against the admin
// API and returns the process exit code.
func runAdmin(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	env := &adminEnv{
		stdout:   stdout,
		stderr:   stderr,
		stdin:    os.Stdin,
		stdinTTY: isTerminal(os.Stdin),
		getenv:   os.Getenv,
		clock:    clock.Real(),
		http:     &http.Client{},
	}
	return runAdminWith(ctx, env, args)
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// adminCommand is one admin command: its words ("sites create"), its
// synopsis and one line of help, and what it does with the words after it.
type adminCommand struct {
	name     string
	synopsis string
	summary  string
	run      func(ctx context.Context, r *adminRun, args []string) int
}

// adminCommands lists every admin command in the order usage shows them.
func adminCommands() []adminCommand {
	return append([]adminCommand{
		{"sites create", "--name NAME --maas-url URL [--description TEXT] [--policy-json JSON]", "create a MAAS site", runSitesCreate},
		{"sites list", "", "list sites", runSitesList},
		{"sites get", "SITE_ID", "show a site and its effective policy", runSitesGet},
		{"sites patch", "SITE_ID [--name NAME] [--maas-url URL] [--description TEXT] [--status active|disabled] [--policy-json JSON]", "change a site (policy-json is merged into the site's policy)", runSitesPatch},
		{"sites disable", "SITE_ID", "disable a site", runSitesDisable},
		{"sites credentials", "SITE_ID  < creds.json", "store the site's MAAS API key and BMC credentials, read as JSON from stdin or from MAAS_API_KEY, BMC_USERNAME, BMC_PASSWORD", runSitesCredentials},
		{"sites probe", "SITE_ID", "check MAAS reachability, version and capabilities (exit 1 when unhealthy)", runSitesProbe},

		{"profiles create", "SITE_ID --name NAME --architecture ARCH --distro-series SERIES [--hwe-kernel KERNEL] [--policy-json JSON]", "create a profile under a site", runProfilesCreate},
		{"profiles list", "SITE_ID", "list a site's profiles", runProfilesList},
		{"profiles get", "SITE_ID PROFILE_ID", "show a profile and its effective policy", runProfilesGet},
		{"profiles patch", "SITE_ID PROFILE_ID [--name NAME] [--architecture ARCH] [--distro-series SERIES] [--hwe-kernel KERNEL] [--status active|disabled] [--policy-json JSON]", "change a profile", runProfilesPatch},
		{"profiles disable", "SITE_ID PROFILE_ID", "disable a profile", runProfilesDisable},

		{"roce upsert", "SITE_ID --file FILE|- [--csv]", `bulk upsert RoCE assignments from {"items":[…]} JSON or hostname,interface,ipv4_cidr CSV`, runRoCEUpsert},
		{"roce list", "SITE_ID [--hostname HOST]", "list a site's RoCE assignments", runRoCEList},
		{"roce delete", "SITE_ID ASSIGNMENT_ID", "delete one RoCE assignment", runRoCEDelete},

		{"skus create", "--id ID --gpu-model MODEL --gpus-total N [--description TEXT] [--active=false]", "add a SKU to the catalog", runSKUsCreate},
		{"skus list", "", "list the SKU catalog", runSKUsList},
		{"skus get", "SKU_ID", "show a SKU", runSKUsGet},
		{"skus patch", "SKU_ID [--active=true|false] [--description TEXT]", "activate, deactivate or describe a SKU", runSKUsPatch},

		{"onboard", "--site SITE_ID --profile PROFILE_ID --sku SKU_ID --hostname HOST --ipmi-ip IP [--wait] [--interval 5s]", "start onboarding one server; --wait follows it to the end (exit 0 completed, 3 manual intervention, 4 failed or cancelled)", runOnboard},
		{"onboardings list", "[--status S] [--site SITE_ID] [--hostname HOST] [--limit N] [--cursor C] [--all]", "list onboardings, newest first; --all follows every page", runOnboardingsList},
		{"onboardings get", "ONBOARDING_ID", "show an onboarding: status, stage, timeline and diagnostics", runOnboardingsGet},
		{"onboardings watch", "ONBOARDING_ID [--interval 5s]", "follow an onboarding until it ends (exit codes as onboard --wait)", runOnboardingsWatch},
		{"onboardings cancel", "ONBOARDING_ID [--reason TEXT]", "cancel an open onboarding (also manual_intervention): stop its workflow and free the host; MAAS is not touched", runOnboardingsCancel},

		{"audit", "[--limit N]", "show the latest audit entries", runAudit},
	}, nodeCommands()...)
}

// adminGroups are the commands that take a sub-command.
var adminGroups = []string{"sites", "profiles", "roce", "skus", "onboardings", "nodes", "decommission"}

const adminCommonFlags = `common flags:
  --api-url URL    admin API base URL (default $MAASFLOW_API_URL, else ` + adminDefaultAPIURL + `)
  -o table|json    output: human tables (default) or the API's JSON verbatim
The bearer token is read from $MAASFLOW_ADMIN_TOKEN.
`

// runAdminWith dispatches args (args[0] is the command) in env.
func runAdminWith(ctx context.Context, env *adminEnv, args []string) int {
	if len(args) == 0 {
		adminGroupUsage(env.stderr, "")
		return adminExitUsage
	}
	words, rest := args[:1], args[1:]
	group := slices.Contains(adminGroups, args[0])
	if group {
		if len(rest) == 0 || isHelpArg(rest[0]) {
			if len(rest) == 0 {
				fmt.Fprintf(env.stderr, "maasflow %s: a sub-command is required\n\n", args[0])
				adminGroupUsage(env.stderr, args[0])
				return adminExitUsage
			}
			adminGroupUsage(env.stdout, args[0])
			return adminExitOK
		}
		words, rest = args[:2], args[2:]
	}
	name := strings.Join(words, " ")
	for _, c := range adminCommands() {
		if c.name == name {
			r := &adminRun{env: env, cmd: c}
			return c.run(ctx, r, rest)
		}
	}
	fmt.Fprintf(env.stderr, "maasflow: unknown command %q\n\n", name)
	adminGroupUsage(env.stderr, words[0])
	return adminExitUsage
}

func isHelpArg(s string) bool {
	return s == "help" || s == "-h" || s == "-help" || s == "--help"
}

// adminGroupUsage lists the commands of group ("" for all).
func adminGroupUsage(w io.Writer, group string) {
	fmt.Fprintln(w, "usage:")
	for _, c := range adminCommands() {
		if group == "" || strings.Split(c.name, " ")[0] == group {
			fmt.Fprintf(w, "  %s\n      %s\n", strings.TrimSpace("maasflow "+c.name+" "+c.synopsis), c.summary)
		}
	}
	fmt.Fprint(w, "\n"+adminCommonFlags)
}

// adminRun is one invocation of one command: the common flags and the
// client built from them.
type adminRun struct {
	env    *adminEnv
	cmd    adminCommand
	apiURL string
	output string
}

const (
	adminOutputTable = "table"
	adminOutputJSON  = "json"
)

func (r *adminRun) json() bool { return r.output == adminOutputJSON }

// flags returns the command's flag set with the common flags registered.
func (r *adminRun) flags() *flag.FlagSet {
	fs := flag.NewFlagSet("maasflow "+r.cmd.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&r.apiURL, "api-url", "", "")
	fs.StringVar(&r.output, "o", adminOutputTable, "")
	fs.StringVar(&r.output, "output", adminOutputTable, "")
	return fs
}

// adminUsageError is a misuse of a command: exit 2 with its usage.
type adminUsageError struct {
	Reason string
}

func (e *adminUsageError) Error() string { return e.Reason }

func usagef(format string, args ...any) error {
	return &adminUsageError{Reason: fmt.Sprintf(format, args...)}
}

// parse parses args, where flags and positional arguments may be mixed
// ("profiles create SITE --name n" and "profiles create --name n SITE"),
// and returns exactly want positional arguments.
func (r *adminRun) parse(fs *flag.FlagSet, args []string, want int) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, flag.ErrHelp
			}
			return nil, usagef("%s", err.Error())
		}
		rest := fs.Args()
		consumed := args[:len(args)-len(rest)]
		if len(consumed) > 0 && consumed[len(consumed)-1] == "--" {
			pos = append(pos, rest...)
			break
		}
		if len(rest) == 0 {
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	if r.output != adminOutputTable && r.output != adminOutputJSON {
		return nil, usagef("-o must be %q or %q, not %q", adminOutputTable, adminOutputJSON, r.output)
	}
	switch {
	case len(pos) < want:
		return nil, usagef("expected %d argument(s), got %d", want, len(pos))
	case len(pos) > want:
		return nil, usagef("unexpected argument %q", pos[want])
	}
	for _, p := range pos {
		if p == "" || p == "." || p == ".." {
			return nil, usagef("%q is not a valid id", p)
		}
	}
	return pos, nil
}

// requireFlags fails when one of the named flags was not given.
func requireFlags(fs *flag.FlagSet, names ...string) error {
	set := flagsSet(fs)
	for _, n := range names {
		if !set[n] {
			return usagef("--%s is required", n)
		}
	}
	return nil
}

// setLimit copies --limit, when given, into q: a page size must be positive.
func setLimit(fs *flag.FlagSet, limit int, q url.Values) error {
	if !flagsSet(fs)["limit"] {
		return nil
	}
	if limit < 1 {
		return usagef("--limit must be a positive integer")
	}
	q.Set("limit", strconv.Itoa(limit))
	return nil
}

// flagsSet reports which flags the command line gave.
func flagsSet(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// fail reports err and returns the exit code that goes with it: usage for a
// misuse, 1 for everything else (API errors included).
func (r *adminRun) fail(err error) int {
	var (
		usage *adminUsageError
		apiE  *adminAPIError
	)
	switch {
	case errors.Is(err, flag.ErrHelp):
		r.usage(r.env.stdout)
		return adminExitOK
	case errors.As(err, &usage):
		fmt.Fprintf(r.env.stderr, "maasflow %s: %s\n\n", r.cmd.name, adminCell(usage.Reason))
		r.usage(r.env.stderr)
		return adminExitUsage
	case errors.As(err, &apiE):
		fmt.Fprintf(r.env.stderr, "error: %s\n", apiE.Error())
		return adminExitError
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(r.env.stderr, "error: interrupted")
		return adminExitInterrupts
	default:
		fmt.Fprintf(r.env.stderr, "error: %s\n", adminCell(err.Error()))
		return adminExitError
	}
}

func (r *adminRun) usage(w io.Writer) {
	fmt.Fprintf(w, "usage: %s\n  %s\n\n%s", strings.TrimSpace("maasflow "+r.cmd.name+" "+r.cmd.synopsis), r.cmd.summary, adminCommonFlags)
}

// emit writes an API answer verbatim (-o json), ending with a newline.
func (r *adminRun) emit(body []byte) {
	if len(body) == 0 {
		return
	}
	_, _ = r.env.stdout.Write(body)
	if body[len(body)-1] != '\n' {
		_, _ = io.WriteString(r.env.stdout, "\n")
	}
}
