package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/maasflow/maasflow/internal/localstack"
	"github.com/maasflow/maasflow/shared/config"
	"github.com/maasflow/maasflow/shared/console"
	"github.com/maasflow/maasflow/shared/lokipush"

	"github.com/maasflow/maasflow/shared/nodeid"
)

// demoTimeScale is how much faster time runs under --demo: MAAS phases
// take minutes in real time, and a demo onboarding should take well under
// one (commissioning, deploy and the retried deploy of gpu-node-03 included).
const demoTimeScale = 40

// localOptions are the flags of `maasflow local`.
type localOptions struct {
	cfg       localstack.Config
	demo      bool
	reset     bool
	logLevel  string
	timeScale float64
	// timeScaleSet tells an explicit --time-scale from the default, which
	// depends on --demo.
	timeScaleSet bool
	// reconcileEvery is the schedule of reconcile runs; 0 turns it off.
	reconcileEvery time.Duration
	// lokiURL, when set, also sends the log file's records to Loki.
	lokiURL, lokiTenant string
}

func (c *cli) localCommand() *cobra.Command {
	o := &localOptions{}
	cmd := &cobra.Command{
		Use:   "local",
		Short: "run the embedded stack (API, workflows, MAAS simulator)",
		Long: `Run the embedded stack on this machine: the admin and node API, the onboarding state
machine on the embedded ASL runtime, the activity handlers, the store's tables (one
bbolt database file in the data dir, maasflow.db), the event bus and, unless --maas-url is
given, the MAAS simulator. A data dir of the release that kept a journal (dynamodb.jsonl) is
migrated into the database file at the first start.

Logs go to maasflow.log in the data dir; only warnings and errors reach the terminal.
The admin token is kept in the data dir (unless $MAASFLOW_ADMIN_TOKEN is set), so it
stays the same across restarts. --reset starts from an empty data dir.`,
		Example: `  maasflow local --demo                 # what make run does: demo data, time x` + fmt.Sprint(demoTimeScale) + `
  maasflow local --demo --time-scale 1  # the demo in real time
  maasflow local --reset                # forget every site, onboarding and secret`,
		Args: noPositional,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.timeScaleSet = cmd.Flags().Changed("time-scale")
			c.err = runLocal(cmd.Context(), o, c.env)
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.cfg.Listen, "listen", "127.0.0.1:8080", "admin and node API listen address")
	fs.StringVar(&o.cfg.SimListen, "sim-listen", "127.0.0.1:5240", "MAAS simulator listen address")
	fs.StringVar(&o.cfg.NodeListen, "node-listen", "127.0.0.1:8443", "node endpoints' mutual TLS listen address")
	fs.StringVar(&o.cfg.SimAPIKey, "sim-api-key", "", "simulator API key consumer:token:secret (generated when empty)")
	fs.StringVar(&o.cfg.MAASURL, "maas-url", "", "use a real MAAS region (http://host:5240/MAAS) instead of the simulator")
	fs.Float64Var(&o.timeScale, "time-scale", 0, fmt.Sprintf("run time this many times faster (waits, timeouts, simulated MAAS phases); default %d with --demo, else 1", demoTimeScale))
	fs.StringVar(&o.cfg.DataDir, "data-dir", defaultDataDir(c.env.getenv), "directory holding state that survives a restart")
	fs.BoolVar(&o.demo, "demo", false, "create a demo site, profile, SKU and simulated hosts")
	fs.BoolVar(&o.reset, "reset", false, "empty the data dir first: start from nothing")
	fs.StringVar(&o.logLevel, "log-level", "info", "level of the log file: debug, info, warn, error")
	fs.StringVar(&o.lokiURL, "loki-url", "", "also push the log's records to this Loki (http://loki:3100): labels service_name, level and site, the correlation fields as structured metadata")
	fs.StringVar(&o.lokiTenant, "loki-tenant", "", "X-Scope-OrgID for a multi-tenant Loki")
	fs.DurationVar(&o.reconcileEvery, "reconcile-interval", localstack.DefaultReconcileInterval,
		"period of the reconcile runs in the stack's (scaled) time; 0 turns the schedule off")
	return cmd
}

// runLocal runs the embedded stack until ctx ends.
func runLocal(ctx context.Context, o *localOptions, env *cliEnv) error {
	cfg := o.cfg
	switch {
	case o.reconcileEvery < 0:
		return usagef("--reconcile-interval must not be negative")
	case o.reconcileEvery == 0:
		cfg.ReconcileInterval = -1 // off
	default:
		cfg.ReconcileInterval = o.reconcileEvery
	}
	switch {
	case o.timeScaleSet && o.timeScale <= 0:
		return usagef("--time-scale must be positive")
	case o.timeScaleSet:
		cfg.TimeScale = o.timeScale
	case o.demo && cfg.MAASURL == "":
		cfg.TimeScale = demoTimeScale
	default:
		cfg.TimeScale = 1
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return usagef("--log-level: %v", err)
	}
	if o.reset {
		if err := localstack.Reset(cfg.DataDir); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("create data dir: %w", err)
	}
	logPath := filepath.Join(cfg.DataDir, localstack.LogFile)
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open log file: %w", err)
	}
	defer func() { _ = logFile.Close() }()
	// The terminal keeps the banner readable: only what needs a person.
	handlers := fanout{
		slog.NewJSONHandler(logFile, &slog.HandlerOptions{Level: level}),
		slog.NewTextHandler(env.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}),
	}
	if o.lokiURL != "" {
		loki, err := lokipush.New(lokipush.Config{URL: o.lokiURL, TenantID: o.lokiTenant})
		if err != nil {
			return usagef("--loki-url: %v", err)
		}
		defer func() {
			_ = loki.Close()
			if n := loki.Dropped(); n > 0 {
				fmt.Fprintf(env.stderr, "maasflow local: %d log records did not reach Loki at %s\n", n, loki.URL())
			}
		}()
		handlers = append(handlers, loki.Handler(level))
	}
	cfg.Logger = slog.New(handlers)
	collector, err := localstack.TuneCollector(env.getenv, nil)
	if err != nil {
		cfg.Logger.Warn("garbage collector not tuned for local mode", "error", err)
	} else {
		defer collector.Restore()
		cfg.Logger.Info("garbage collector tuned for local mode", "setting", collector.String(), "from_env", collector.FromEnv)
	}
	tokenFromEnv := env.getenv(config.EnvAdminToken)
	cfg.AdminToken = tokenFromEnv

	stack, err := localstack.Start(ctx, cfg)
	if err != nil {
		return err
	}
	defer func() {
		if err := stack.Close(); err != nil {
			fmt.Fprintf(env.stderr, "maasflow local: shutdown: %v\n", err)
		}
	}()

	w := env.stdout
	fmt.Fprintf(w, "maasflow local is running\n\n")
	fmt.Fprintf(w, "  admin API   %s/api/v1/admin/\n", stack.APIURL)
	fmt.Fprintf(w, "  console     %s%s   (sign in with the admin token)\n", stack.APIURL, console.Prefix)
	fmt.Fprintf(w, "  node API    %s/node/v1/   (mutual TLS; node CA %s)\n", stack.NodeAPIURL, filepath.Join(cfg.DataDir, nodeid.LocalCertFile))
	if tokenFromEnv != "" {
		fmt.Fprintf(w, "  admin token from $%s\n", config.EnvAdminToken)
	} else {
		fmt.Fprintf(w, "  admin token %s   (kept in %s; set $%s to choose one)\n", stack.AdminToken,
			filepath.Join(cfg.DataDir, localstack.AdminTokenFile), config.EnvAdminToken)
	}
	if stack.SimURL != "" {
		fmt.Fprintf(w, "  MAAS sim    %s   API key %s\n", stack.SimURL, stack.SimAPIKey)
	} else {
		fmt.Fprintf(w, "  MAAS        %s\n", cfg.MAASURL)
	}
	fmt.Fprintf(w, "  data dir    %s   (--reset starts from empty)\n", cfg.DataDir)
	fmt.Fprintf(w, "  log file    %s   (only warnings are shown here)\n", logPath)
	if cfg.TimeScale == 1 {
		fmt.Fprintf(w, "  time        real time: an onboarding takes about %s\n", demoDuration(1))
	} else {
		fmt.Fprintf(w, "  time        %gx faster than real time: an onboarding takes about %s (--time-scale 1 for real time)\n",
			cfg.TimeScale, demoDuration(cfg.TimeScale))
	}
	if tokenFromEnv == "" {
		fmt.Fprintf(w, "\n  export MAASFLOW_API_URL=%s MAASFLOW_ADMIN_TOKEN=%s\n", stack.APIURL, stack.AdminToken)
	} else {
		fmt.Fprintf(w, "\n  export MAASFLOW_API_URL=%s\n", stack.APIURL)
	}

	if o.demo {
		d, err := stack.SeedDemo(ctx)
		if err != nil {
			return fmt.Errorf("demo data: %w", err)
		}
		printDemo(w, stack.APIURL, d)
	}
	fmt.Fprintln(w, "\nCtrl-C stops it.")
	<-ctx.Done()
	return nil
}

// demoReal is how long a demo onboarding takes at time scale 1 (measured
// on the simulator: commissioning and deploy dominate).
const demoReal = 13 * time.Minute

func demoDuration(scale float64) string {
	d := time.Duration(float64(demoReal) / scale)
	if d >= time.Minute {
		return d.Round(time.Minute).String()
	}
	return d.Round(5 * time.Second).String()
}

func printDemo(w io.Writer, apiURL string, d localstack.Demo) {
	fmt.Fprintf(w, "\nDemo site %q (%s), profile %q, SKU %s; simulated hosts:", d.SiteName, d.SiteID, d.ProfileName, d.SKUID)
	for _, h := range d.Hosts {
		fmt.Fprintf(w, " %s (%s)", h.Hostname, h.BMCIP)
	}
	fmt.Fprintln(w)
	if len(d.Fresh) == 0 {
		fmt.Fprintln(w, "\nEvery demo host was onboarded by an earlier run; `maasflow local --demo --reset` starts over.")
		return
	}
	h := d.Fresh[0]
	fmt.Fprintf(w, "\nOnboard %s and follow every stage (in another terminal, after the export above):\n\n"+
		"  go run ./cmd/maasflow onboard --site %s --profile %s --sku %s --hostname %s --ipmi-ip %s --wait\n",
		h.Hostname, d.SiteName, d.ProfileName, d.SKUID, h.Hostname, h.BMCIP)
	fmt.Fprintf(w, "\nor with curl:\n\n  curl -s -X POST %s/api/v1/admin/onboardings \\\n"+
		"    -H \"Authorization: Bearer $MAASFLOW_ADMIN_TOKEN\" -H 'Content-Type: application/json' \\\n"+
		"    -d '{\"site_id\":%q,\"profile_id\":%q,\"sku_id\":%q,\"hostname\":%q,\"ipmi_ip\":%q}'\n",
		apiURL, d.SiteID, d.ProfileID, d.SKUID, h.Hostname, h.BMCIP)
	if len(d.Fresh) > 1 {
		fmt.Fprintf(w, "\nNot onboarded yet:")
		for _, h := range d.Fresh {
			fmt.Fprintf(w, " %s (%s)", h.Hostname, h.BMCIP)
		}
		fmt.Fprintln(w)
	}
	for _, h := range d.Fresh {
		if h.Hostname == localstack.DemoRetryHost {
			fmt.Fprintf(w, "%s fails its first deployment with a cloud-init datasource error: watch the classified retry.\n", h.Hostname)
		}
	}
}

// defaultDataDir is $XDG_STATE_HOME/maasflow (~/.local/state/maasflow):
// the read models, secrets and events are state to keep, not a cache.
func defaultDataDir(getenv func(string) string) string {
	if dir := getenv("XDG_STATE_HOME"); dir != "" {
		return filepath.Join(dir, "maasflow")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "state", "maasflow")
	}
	return ".maasflow"
}

// fanout sends each record to every handler that takes its level.
type fanout []slog.Handler

func (f fanout) Enabled(ctx context.Context, l slog.Level) bool {
	for _, h := range f {
		if h.Enabled(ctx, l) {
			return true
		}
	}
	return false
}

func (f fanout) Handle(ctx context.Context, r slog.Record) error {
	var errs []error
	for _, h := range f {
		if h.Enabled(ctx, r.Level) {
			errs = append(errs, h.Handle(ctx, r.Clone()))
		}
	}
	return errors.Join(errs...)
}

func (f fanout) WithAttrs(attrs []slog.Attr) slog.Handler {
	out := make(fanout, len(f))
	for i, h := range f {
		out[i] = h.WithAttrs(attrs)
	}
	return out
}

func (f fanout) WithGroup(name string) slog.Handler {
	out := make(fanout, len(f))
	for i, h := range f {
		out[i] = h.WithGroup(name)
	}
	return out
}
