package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/maasflow/maasflow/internal/localstack"
	"github.com/maasflow/maasflow/shared/config"
)

// runLocal runs the embedded stack until ctx ends.
func runLocal(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("maasflow local", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := localstack.Config{}
	fs.StringVar(&cfg.Listen, "listen", "127.0.0.1:8080", "admin and node API listen address")
	fs.StringVar(&cfg.SimListen, "sim-listen", "127.0.0.1:5240", "MAAS simulator listen address")
	fs.StringVar(&cfg.SimAPIKey, "sim-api-key", "", "simulator API key consumer:token:secret (generated when empty)")
	fs.StringVar(&cfg.MAASURL, "maas-url", "", "use a real MAAS region (http://host:5240/MAAS) instead of the simulator")
	fs.Float64Var(&cfg.TimeScale, "time-scale", 1, "run time this many times faster (waits, timeouts, simulated MAAS phases)")
	fs.StringVar(&cfg.DataDir, "data-dir", defaultDataDir(), "directory holding state that survives a restart")
	demo := fs.Bool("demo", false, "create a demo site, profile, SKU and simulated hosts")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn, error")
	reconcileEvery := fs.Duration("reconcile-interval", localstack.DefaultReconcileInterval,
		"period of the reconcile runs in the stack's (scaled) time; 0 turns the schedule off")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	switch {
	case *reconcileEvery < 0:
		fmt.Fprintln(stderr, "maasflow local: --reconcile-interval must not be negative")
		return 2
	case *reconcileEvery == 0:
		cfg.ReconcileInterval = -1 // off
	default:
		cfg.ReconcileInterval = *reconcileEvery
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "maasflow local: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if cfg.TimeScale <= 0 {
		fmt.Fprintln(stderr, "maasflow local: --time-scale must be positive")
		return 2
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(stderr, "maasflow local: --log-level: %v\n", err)
		return 2
	}
	tokenFromEnv := os.Getenv(config.EnvAdminToken)
	cfg.AdminToken = tokenFromEnv
	cfg.Logger = slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level}))

	stack, err := localstack.Start(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "maasflow local: %v\n", err)
		return 1
	}
	defer func() {
		if err := stack.Close(); err != nil {
			fmt.Fprintf(stderr, "maasflow local: shutdown: %v\n", err)
		}
	}()

	fmt.Fprintf(stdout, "maasflow local is running (data in %s, time x%g)\n\n", cfg.DataDir, cfg.TimeScale)
	fmt.Fprintf(stdout, "  admin API   %s/api/v1/admin/\n", stack.APIURL)
	if tokenFromEnv != "" {
		fmt.Fprintf(stdout, "  admin token from $%s\n", config.EnvAdminToken)
	} else {
		fmt.Fprintf(stdout, "  admin token %s   (set $%s to choose one)\n", stack.AdminToken, config.EnvAdminToken)
	}
	if stack.SimURL != "" {
		fmt.Fprintf(stdout, "  MAAS sim    %s   API key %s\n", stack.SimURL, stack.SimAPIKey)
	} else {
		fmt.Fprintf(stdout, "  MAAS        %s\n", cfg.MAASURL)
	}
	if tokenFromEnv == "" {
		fmt.Fprintf(stdout, "\n  export MAASFLOW_API_URL=%s MAASFLOW_ADMIN_TOKEN=%s\n", stack.APIURL, stack.AdminToken)
	} else {
		fmt.Fprintf(stdout, "\n  export MAASFLOW_API_URL=%s\n", stack.APIURL)
	}

	if *demo {
		d, err := stack.SeedDemo(ctx)
		if err != nil {
			fmt.Fprintf(stderr, "maasflow local: demo data: %v\n", err)
			return 1
		}
		h := d.Hosts[0]
		fmt.Fprintf(stdout, "\nDemo site %s, profile %s, SKU %s; simulated hosts:", d.SiteID, d.ProfileID, d.SKUID)
		for _, h := range d.Hosts {
			fmt.Fprintf(stdout, " %s (%s)", h.Hostname, h.BMCIP)
		}
		fmt.Fprintf(stdout, "\n\nOnboard one:\n\n  curl -s -X POST %s/api/v1/admin/onboardings \\\n"+
			"    -H \"Authorization: Bearer $MAASFLOW_ADMIN_TOKEN\" -H 'Content-Type: application/json' \\\n"+
			"    -d '{\"site_id\":%q,\"profile_id\":%q,\"sku_id\":%q,\"hostname\":%q,\"ipmi_ip\":%q}'\n",
			stack.APIURL, d.SiteID, d.ProfileID, d.SKUID, h.Hostname, h.BMCIP)
		fmt.Fprintf(stdout, "\nor with the CLI:\n\n  go run ./cmd/maasflow onboard --site %s --profile %s --sku %s --hostname %s --ipmi-ip %s --wait\n",
			d.SiteID, d.ProfileID, d.SKUID, h.Hostname, h.BMCIP)
	}
	fmt.Fprintln(stdout, "\nCtrl-C stops it.")
	<-ctx.Done()
	return 0
}

// defaultDataDir is $XDG_STATE_HOME/maasflow (~/.local/state/maasflow):
// the read models, secrets and events are state to keep, not a cache.
func defaultDataDir() string {
	if dir := os.Getenv("XDG_STATE_HOME"); dir != "" {
		return filepath.Join(dir, "maasflow")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "state", "maasflow")
	}
	return ".maasflow"
}
