package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/maasflow/maasflow/internal/maassim"
	"github.com/maasflow/maasflow/shared/clock"
)

// simOptions are the flags of `maasflow sim`.
type simOptions struct {
	listen, apiKey      string
	timeScale           float64
	seed                int64
	errorRate, slowRate float64
	slowDelay           time.Duration
}

func (c *cli) simCommand() *cobra.Command {
	o := &simOptions{}
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "run the MAAS API 2.0 simulator alone",
		Long: `Serve the MAAS API 2.0 simulator until interrupted. It prints the MAAS URL and the API
key (generated when --api-key is not given) and logs to stderr. The /_sim/ control API
adds hardware and faults (docs/maas-simulator.md).`,
		Args: noPositional,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c.err = runSim(cmd.Context(), o, c.env.stdout, c.env.stderr)
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.listen, "listen", "127.0.0.1:5240", "address to serve MAAS API 2.0 and the /_sim/ control API on")
	fs.StringVar(&o.apiKey, "api-key", "", "MAAS API key to accept, consumer:token:secret (generated and printed when empty)")
	fs.Float64Var(&o.timeScale, "time-scale", 1, "run simulated time this many times faster than the wall clock")
	fs.Int64Var(&o.seed, "seed", 0, "seed for system ids, generated names and fault rolls")
	fs.Float64Var(&o.errorRate, "error-rate", 0, "fraction of MAAS API calls answered 503")
	fs.Float64Var(&o.slowRate, "slow-rate", 0, "fraction of MAAS API calls answered late")
	fs.DurationVar(&o.slowDelay, "slow-delay", 5*time.Second, "how late a slow answer is, in simulated time")
	return cmd
}

// runSim serves the MAAS API 2.0 simulator until ctx ends.
func runSim(ctx context.Context, o *simOptions, stdout, stderr io.Writer) error {
	var problems []string
	if o.apiKey != "" && len(strings.Split(o.apiKey, ":")) != 3 {
		problems = append(problems, "--api-key must be consumer:token:secret")
	}
	if o.timeScale <= 0 {
		problems = append(problems, "--time-scale must be positive")
	}
	for name, v := range map[string]float64{"--error-rate": o.errorRate, "--slow-rate": o.slowRate} {
		if v < 0 || v > 1 {
			problems = append(problems, name+" must be between 0 and 1")
		}
	}
	if len(problems) > 0 {
		return usagef("%s", strings.Join(problems, "; "))
	}

	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", o.listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", o.listen, err)
	}
	logger := slog.New(slog.NewJSONHandler(stderr, nil))
	sim := maassim.New(maassim.Options{
		APIKey: o.apiKey, Clock: clock.Scaled(o.timeScale), Seed: o.seed,
		ErrorRate: o.errorRate, SlowRate: o.slowRate, SlowDelay: o.slowDelay, Logger: logger,
	})
	defer sim.Close()
	srv := &http.Server{Handler: sim, ReadHeaderTimeout: 10 * time.Second}

	fmt.Fprintf(stdout, "MAAS simulator: http://%s/MAAS\n", ln.Addr())
	fmt.Fprintf(stdout, "API key: %s\n", sim.APIKey())
	fmt.Fprintf(stdout, "control API: http://%s/_sim/ (hardware, machines, calls, reset)\n", ln.Addr())
	logger.Info("maas simulator started", "listen", ln.Addr().String(), "time_scale", o.timeScale, "seed", o.seed)

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}
