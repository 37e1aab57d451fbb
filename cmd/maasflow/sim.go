package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/maasflow/maasflow/shared/clock"
	"github.com/maasflow/maasflow/test/maassim"
)

// runSim serves the MAAS API 2.0 simulator until ctx ends. It prints the
// MAAS URL and the API key (generated when --api-key is not given) on stdout
// and logs to stderr.
func runSim(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("maasflow sim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:5240", "address to serve MAAS API 2.0 and the /_sim/ control API on")
	apiKey := fs.String("api-key", "", "MAAS API key to accept, consumer:token:secret (generated and printed when empty)")
	timeScale := fs.Float64("time-scale", 1, "run simulated time this many times faster than the wall clock")
	seed := fs.Int64("seed", 0, "seed for system ids, generated names and fault rolls")
	errorRate := fs.Float64("error-rate", 0, "fraction of MAAS API calls answered 503")
	slowRate := fs.Float64("slow-rate", 0, "fraction of MAAS API calls answered late")
	slowDelay := fs.Duration("slow-delay", 5*time.Second, "how late a slow answer is, in simulated time")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	var problems []string
	if *apiKey != "" && len(strings.Split(*apiKey, ":")) != 3 {
		problems = append(problems, "--api-key must be consumer:token:secret")
	}
	if *timeScale <= 0 {
		problems = append(problems, "--time-scale must be positive")
	}
	for name, v := range map[string]float64{"--error-rate": *errorRate, "--slow-rate": *slowRate} {
		if v < 0 || v > 1 {
			problems = append(problems, name+" must be between 0 and 1")
		}
	}
	if fs.NArg() > 0 {
		problems = append(problems, "unexpected arguments: "+strings.Join(fs.Args(), " "))
	}
	if len(problems) > 0 {
		fmt.Fprintln(stderr, "maasflow sim: "+strings.Join(problems, "; "))
		return 2
	}

	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", *listen)
	if err != nil {
		fmt.Fprintf(stderr, "maasflow sim: listen on %s: %v\n", *listen, err)
		return 1
	}
	logger := slog.New(slog.NewJSONHandler(stderr, nil))
	sim := maassim.New(maassim.Options{
		APIKey: *apiKey, Clock: clock.Scaled(*timeScale), Seed: *seed,
		ErrorRate: *errorRate, SlowRate: *slowRate, SlowDelay: *slowDelay, Logger: logger,
	})
	defer sim.Close()
	srv := &http.Server{Handler: sim, ReadHeaderTimeout: 10 * time.Second}

	fmt.Fprintf(stdout, "MAAS simulator: http://%s/MAAS\n", ln.Addr())
	fmt.Fprintf(stdout, "API key: %s\n", sim.APIKey())
	fmt.Fprintf(stdout, "control API: http://%s/_sim/ (hardware, machines, calls, reset)\n", ln.Addr())
	logger.Info("maas simulator started", "listen", ln.Addr().String(), "time_scale", *timeScale, "seed", *seed)

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		fmt.Fprintf(stderr, "maasflow sim: %v\n", err)
		return 1
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		fmt.Fprintf(stderr, "maasflow sim: shutdown: %v\n", err)
		return 1
	}
	return 0
}
