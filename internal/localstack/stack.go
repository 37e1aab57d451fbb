package localstack

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/google/uuid"

	"github.com/maasflow/maasflow/internal/maassim"
	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/activities/decommission"
	"github.com/maasflow/maasflow/shared/activities/onboarding"
	"github.com/maasflow/maasflow/shared/allocation"
	"github.com/maasflow/maasflow/shared/api"
	"github.com/maasflow/maasflow/shared/asl"
	"github.com/maasflow/maasflow/shared/clock"
	"github.com/maasflow/maasflow/shared/config"
	"github.com/maasflow/maasflow/shared/connector"
	"github.com/maasflow/maasflow/shared/console"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/enroll"
	"github.com/maasflow/maasflow/shared/events"
	"github.com/maasflow/maasflow/shared/maas"
	"github.com/maasflow/maasflow/shared/metrics"
	"github.com/maasflow/maasflow/shared/nodeid"
	"github.com/maasflow/maasflow/shared/reconcile"
	"github.com/maasflow/maasflow/shared/secrets"
	"github.com/maasflow/maasflow/shared/store"
	"github.com/maasflow/maasflow/shared/workflow"
	"github.com/maasflow/maasflow/statemachines"
)

// Config is what `maasflow local` takes from its flags and environment.
type Config struct {
	Listen    string  // admin and node API, e.g. 127.0.0.1:8080
	SimListen string  // simulator, e.g. 127.0.0.1:5240; ignored with MAASURL
	MAASURL   string  // a real MAAS region; empty runs the simulator
	SimAPIKey string  // simulator API key; empty generates one
	TimeScale float64 // 1 = real time
	DataDir   string  // state that survives a restart
	// AdminToken is the bearer token of the admin API; empty uses the one
	// kept in DataDir (AdminTokenFile), generated on first start.
	AdminToken string
	// Admins are further admin principals, token → subject: a second
	// admin approves what one admin proposes (SKU changes).
	Admins map[string]string
	// SimTaggedVLANs are tagged VLANs (each with one subnet) the simulator
	// adds to its fabric, for designs whose networks are VLAN interfaces.
	SimTaggedVLANs []maassim.TaggedVLAN
	// ReconcileInterval is the period of reconcile runs in the stack's
	// time: zero is DefaultReconcileInterval, negative turns them off.
	ReconcileInterval time.Duration
	// FunctionConcurrency caps each function's concurrent invocations, as
	// Lambda's reserved concurrency does; 0 means
	// asl.DefaultFunctionConcurrency (sized from the cores).
	FunctionConcurrency int
	// HTTP bounds the API server (timeouts, connections); zero fields take
	// DefaultHTTPLimits.
	HTTP HTTPLimits
	// ConnectorRelay, when set, carries connector sites' requests instead
	// of the built-in long-poll broker (the e2e suite against LocalStack's
	// SQS and DynamoDB); it must also read heartbeats.
	ConnectorRelay interface {
		connector.Relay
		connector.StatusReader
	}
	// NodeListen is the address of the node endpoints' TLS listener
	// (default 127.0.0.1:0).
	NodeListen string
	// NodeCertTTL is the life of the node certificates the node CA
	// issues; 0 means nodeid.DefaultCertTTL.
	NodeCertTTL time.Duration
	// Clock overrides the scaled clock (tests).
	Clock  clock.Clock
	Logger *slog.Logger
}

// Stack is a running embedded stack.
type Stack struct {
	APIURL     string
	SimURL     string // empty when a real MAAS is used
	AdminToken string
	SimAPIKey  string
	// NodeAPIURL is the node endpoints' TLS listener (mutual TLS).
	NodeAPIURL string
	// NodeCA is the deployment's node CA (node-ca.crt in the data dir).
	NodeCA *nodeid.CA

	// SiteBootstrap is a site bootstrap bundle reference local mode serves
	// itself, with the development CA, for demo and test sites.
	SiteBootstrap domain.BootstrapRef

	Sim    *maassim.Simulator
	Engine *asl.Engine
	Store  *store.Store
	Bus    *events.LocalBus
	// Reconciler runs reconcile runs (on the schedule and on request);
	// Metrics is what GET /metrics serves.
	Reconciler *reconcile.Runner
	Metrics    *metrics.Prometheus

	// apiListener caps the API server's connections.
	apiListener *connLimiter
	// refusals counts the API's refused unauthenticated requests; Close
	// logs the totals.
	refusals api.RefusalCounter

	// Connectors is the local site-connector transport, served on the API
	// listener under /_connector/.
	Connectors *connector.Broker

	onboardingARN string
	reconcileARN  string
	// machineWatchARN is the machine watch state machine's;
	// stopMachineWatch stops its schedule (watch.go).
	machineWatchARN  string
	stopMachineWatch func()
	// Allocations is the simulated allocation service (control API at
	// /_local/allocations on the API listener).
	Allocations     *allocation.Local
	decommissionARN string
	dbOps           *store.Counting
	closeOnce       sync.Once
	closeErr        error
	servers         []*http.Server
	closers         []func() error
	wg              sync.WaitGroup
	logger          *slog.Logger
}

// Start builds and starts the stack. The listeners are bound before Start
// returns, so the URLs are usable at once (a ":0" port is resolved).
func Start(ctx context.Context, cfg Config) (_ *Stack, err error) {
	s := &Stack{logger: cfg.Logger}
	if s.logger == nil {
		s.logger = slog.New(slog.NewJSONHandler(io.Discard, nil))
	}
	defer func() {
		if err != nil {
			_ = s.Close()
		}
	}()
	if cfg.DataDir == "" {
		return nil, errors.New("data dir is required")
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	unlock, err := lockDataDir(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	s.closers = append(s.closers, unlock)
	clk := cfg.Clock
	var resume *resumeClock
	if clk == nil {
		base := clock.Real()
		if cfg.TimeScale > 1 {
			// Sped up, but slowed while functions are throttled, so that the
			// simulated world never races ahead of what the machine can compute.
			base = asl.NewLoadClock(cfg.TimeScale)
		}
		resume = &resumeClock{Clock: base}
		clk = resume
	}
	s.AdminToken = cfg.AdminToken
	if s.AdminToken == "" {
		if s.AdminToken, err = loadOrCreateToken(cfg.DataDir); err != nil {
			return nil, err
		}
	}

	var lc net.ListenConfig
	apiLn, err := lc.Listen(ctx, "tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", cfg.Listen, err)
	}
	s.APIURL = "http://" + apiLn.Addr().String()
	// Until the API server owns the listener, an early return closes it.
	served := false
	defer func() {
		if !served {
			_ = apiLn.Close()
		}
	}()

	if cfg.MAASURL == "" {
		simLn, err := lc.Listen(ctx, "tcp", cfg.SimListen)
		if err != nil {
			return nil, fmt.Errorf("listen %s: %w", cfg.SimListen, err)
		}
		s.Sim = maassim.New(maassim.Options{APIKey: cfg.SimAPIKey, Clock: clk, Logger: s.logger.With("component", "maassim"),
			SubnetCIDR: simSubnet, TaggedVLANs: cfg.SimTaggedVLANs})
		s.closers = append(s.closers, func() error { s.Sim.Close(); return nil })
		s.SimAPIKey = s.Sim.APIKey()
		s.SimURL = "http://" + simLn.Addr().String() + "/MAAS"
		s.serve(simLn, s.Sim)
	}

	db, err := openDatabase(ctx, cfg.DataDir, s.logger)
	if err != nil {
		return nil, err
	}
	s.closers = append(s.closers, db.Close)
	// Every write to the records wakes the API's streams (they re-read
	// on a change, not on a timer).
	changes := store.NewNotifying(db)
	s.dbOps = store.NewCounting(changes)
	s.Store = store.New(s.dbOps, store.DefaultTable, clk.Now)
	if resume != nil {
		if err := resumeFromDatabase(ctx, db, s.Store, resume); err != nil {
			return nil, err
		}
	}

	secretStore := secrets.NewFileStore(filepath.Join(cfg.DataDir, secretsFile))
	if err := secretStore.Check(ctx); err != nil {
		return nil, fmt.Errorf("open secrets: %w; or start afresh with --reset", err)
	}
	bus, err := events.NewLocalBus(db, events.WithLogger(s.logger), events.WithClock(clk))
	if err != nil {
		return nil, fmt.Errorf("open event bus: %w", err)
	}
	s.Bus = bus
	s.closers = append(s.closers, bus.Close)
	if n, err := failInterrupted(ctx, s.Store, clk); err != nil {
		return nil, err
	} else if n > 0 {
		s.logger.Warn("closed onboardings interrupted by the last shutdown", "count", n)
	}
	if n, err := stopInterruptedDecommissions(ctx, s.Store, bus, clk, s.logger); err != nil {
		return nil, err
	} else if n > 0 {
		s.logger.Warn("stopped decommissions interrupted by the last shutdown for an operator", "count", n)
	}
	relay := &outboxRelay{store: s.Store, bus: bus, clock: clk, log: s.logger.With("component", "outbox")}
	s.closers = append(s.closers, relay.start())

	if s.Connectors, err = s.newBroker(cfg.DataDir); err != nil {
		return nil, err
	}
	s.closers = append(s.closers, func() error { s.Connectors.Close(); return nil })
	paths := &connector.Paths{Relay: s.Connectors, Status: s.Connectors, APIURL: s.APIURL}
	if cfg.ConnectorRelay != nil {
		paths.Relay, paths.Status = cfg.ConnectorRelay, cfg.ConnectorRelay
	}

	// The activities complete the enrollment wait through the engine, and
	// the engine needs the activities as its tasks: ref breaks the cycle.
	ref := &engineRef{}
	s.Allocations = allocation.NewLocal(clk.Now)
	reimages := &onboardingStarterRef{}
	siteMAAS := activities.NewSiteConnector(s.Store, secretStore, activities.NewMAASClient).WithPaths(paths)
	deps := activities.Deps{
		Store:     s.Store,
		MAAS:      siteMAAS,
		Secrets:   secretStore,
		Events:    bus,
		Completer: workflow.NewLocal(ref, ""),
		Clock:     clk,
		NewID:     uuid.NewString,
		Logger:    s.logger,
		HTTP:      &http.Client{Timeout: 10 * time.Second},
		Config:    activities.Config{APIURL: s.APIURL, Package: enroll.DevPackage()},

		Decommissions: s.Store,
		Allocations:   s.Allocations,
		Starter:       reimages,
	}
	subs := map[string]string{}
	tasks := map[string]asl.TaskHandler{}
	for _, f := range append(onboarding.Catalog(deps), decommission.Catalog(deps)...) {
		arn := "arn:aws:lambda:local:000000000000:function:maasflow-" + f.Name
		subs[f.Substitution] = arn
		tasks[arn] = freshHandler{fn: f.Handler}
	}
	s.prepareReconcile(cfg, clk, secretStore, paths, ref, tasks)
	concurrency := cfg.FunctionConcurrency
	if concurrency == 0 {
		concurrency = asl.DefaultFunctionConcurrency()
	}
	s.Engine = asl.NewEngine(asl.Options{
		Clock: clk, Logger: s.logger.With("component", "asl"), Tasks: tasks,
		FunctionConcurrency: concurrency,
		// A handler's run is timed on the wall clock: the time scale speeds up
		// MAAS and the workflow's waits, not the CPU work of a handler.
		InvokeClock: clock.Real(),
	})
	ref.Engine = s.Engine
	sm, err := asl.Parse(statemachines.Onboarding, subs)
	if err != nil {
		return nil, fmt.Errorf("load onboarding state machine: %w", err)
	}
	arn, err := s.Engine.CreateStateMachine("onboarding", sm)
	if err != nil {
		return nil, fmt.Errorf("create onboarding state machine: %w", err)
	}
	s.onboardingARN = arn
	batchSM, err := asl.Parse(statemachines.BatchOnboarding, map[string]string{"OnboardingStateMachineArn": arn})
	if err != nil {
		return nil, fmt.Errorf("load batch onboarding state machine: %w", err)
	}
	batchARN, err := s.Engine.CreateStateMachine("batch-onboarding", batchSM)
	if err != nil {
		return nil, fmt.Errorf("create batch onboarding state machine: %w", err)
	}
	flow := workflow.NewLocal(s.Engine, arn).WithBatch(batchARN)
	reconciler, err := s.startReconcile(cfg, clk)
	if err != nil {
		return nil, err
	}
	if err := s.startMachineWatch(subs, clk); err != nil {
		return nil, err
	}
	reimages.Local = flow
	decoms, err := s.registerDecommission(subs)
	if err != nil {
		return nil, err
	}

	nodeCA, nodeLn, err := listenNodes(ctx, cfg.DataDir, cfg.NodeListen, clk)
	if err != nil {
		return nil, err
	}
	if cfg.NodeCertTTL > 0 {
		nodeCA = nodeCA.WithTTL(cfg.NodeCertTTL)
	}
	s.closers = append(s.closers, func() error { _ = nodeLn.ln.Close(); return nil })
	s.NodeCA, s.NodeAPIURL = nodeCA, nodeLn.url
	handler := api.New(api.Config{TimeScale: cfg.TimeScale}, api.Deps{
		Store:     s.Store,
		Secrets:   secretStore,
		Starter:   flow,
		Stopper:   flow,
		Completer: flow,
		Prober:    maas.SiteProber{},
		Paths:     paths,
		Auth:      api.NewStaticTokens(adminPrincipals(s.AdminToken, cfg.Admins)),
		Clock:     clk,
		Logger:    s.logger,
		Refusals:  &s.refusals,
		// Reconciler serves /api/v1/admin/reconciliation.
		Reconciler: reconciler,

		Decommissions: decoms,
		Allocations:   s.Allocations,
		Bundles:       api.BundleConfig{APIURL: s.APIURL, Package: enroll.DevPackage()},
		Machines:      siteMAAS,
		NodeCA:        nodeCA,
		NodeAPIURL:    s.NodeAPIURL,
		Changes:       changes,
		// A node reads its own design on the node listener with its
		// certificate once enrolled (nodeRoutes).
		NodeIdentity: api.CertIdentity(nodeCA, clk),
	})
	s.serve(nodeLn.ln, nodeRoutes(handler))
	ca, err := enroll.DevCA()
	if err != nil {
		return nil, fmt.Errorf("make the development CA: %w", err)
	}
	sum := sha256.Sum256([]byte(siteBootstrapScript))
	s.SiteBootstrap = domain.BootstrapRef{
		URL:      s.APIURL + siteBootstrapPath,
		Version:  siteBootstrapVersion,
		SHA256:   hex.EncodeToString(sum[:]),
		CABundle: ca,
	}
	mux := http.NewServeMux()
	mux.Handle("/", handler)
	mux.Handle("/_connector/", s.Connectors.Handler())
	mux.HandleFunc("GET "+connectorTokenPath, s.connectorToken)
	mux.HandleFunc("POST "+connectorRotatePath, s.rotateConnectorToken)
	mux.Handle("GET /metrics", s.metricsHandler())
	// The operator console: static files that call the API above.
	mux.Handle(console.Prefix, console.Handler())
	mux.HandleFunc("GET "+GraphPath, s.executionGraph)
	mux.Handle("/_local/allocations", s.Allocations.Control())
	mux.HandleFunc("GET "+siteBootstrapPath, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/x-shellscript")
		_, _ = io.WriteString(w, siteBootstrapScript)
	})
	// Only the API faces clients; the simulator's one client is the
	// activities, which must not be refused.
	limits := cfg.HTTP.withDefaults()
	s.apiListener = limitListener(apiLn, limits)
	if s.Metrics != nil {
		if err := s.Metrics.Register(refusalCollector{s}); err != nil {
			return nil, fmt.Errorf("register the API's refusal metrics: %w", err)
		}
	}
	s.serveWith(limits.newServer(api.RefuseUncleanPaths(mux, handler)), s.apiListener)
	served = true
	return s, nil
}

func (s *Stack) serve(ln net.Listener, h http.Handler) {
	s.serveWith(&http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}, ln)
}

func (s *Stack) serveWith(srv *http.Server, ln net.Listener) {
	s.servers = append(s.servers, srv)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.logger.Error("server stopped", "addr", ln.Addr().String(), "error", err.Error())
		}
	}()
}

// DatabaseOps counts the database calls the stack made since it started
// (benchmarks turn them into DynamoDB request units).
func (s *Stack) DatabaseOps() store.OpCounts { return s.dbOps.Counts() }

// Close stops the executions and the servers and releases the stores.
// Calling it again returns the first call's result.
func (s *Stack) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.close() })
	return s.closeErr
}

func (s *Stack) close() error {
	// Long polls of connected site connectors end now, not at the
	// shutdown timeout.
	if s.Connectors != nil {
		s.Connectors.Close()
	}
	// Running executions die with the process; stopping them first keeps
	// their tasks from writing to stores that are about to close. The next
	// start reports them (failInterrupted). StopExecution returns once the
	// execution has ended.
	if s.stopMachineWatch != nil {
		s.stopMachineWatch()
	}
	if s.Engine != nil {
		for _, sm := range []string{s.onboardingARN, s.decommissionARN, s.machineWatchARN} {
			for _, ex := range s.Engine.ListExecutions(sm, asl.StatusRunning) {
				_ = s.Engine.StopExecution(ex.ExecutionARN, interruptedCode, "local stack shutting down")
			}
		}
	}
	// The simulated node agents' heartbeats are long polls: they end now,
	// not at the shutdown timeout.
	if s.Sim != nil {
		s.Sim.StopAgents()
	}
	// Give in-flight requests a moment, then cut what is left: a slow client
	// must not keep the process from stopping.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, srv := range s.servers {
		if err := srv.Shutdown(ctx); err != nil {
			_ = srv.Close()
		}
	}
	s.wg.Wait()
	if counts := s.refusals.Counts(); len(counts) > 0 {
		s.logger.Info("requests refused while running", "by_code", counts)
	}
	if s.apiListener != nil && s.apiListener.Refused() > 0 {
		s.logger.Info("connections refused past the per-client bound", "count", s.apiListener.Refused())
	}
	var errs []error
	for i := len(s.closers) - 1; i >= 0; i-- {
		errs = append(errs, s.closers[i]())
	}
	return errors.Join(errs...)
}

func randomToken() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// The site bootstrap launcher local mode serves: in a real site it is the
// infra-owned bundle that runs before the node agent (requirements readiness §3.4).
const (
	siteBootstrapPath    = "/_local/site-bootstrap.sh"
	siteBootstrapVersion = "local-1"
	siteBootstrapScript  = "#!/bin/sh\n# maasflow local site bootstrap: nothing to prepare on a simulated node.\nexit 0\n"
)

// simSubnet is the simulated site's subnet: a /20 holds some 4,000
// deployed machines, enough to onboard a thousand hosts at once.
const simSubnet = "10.20.0.0/20"

// engineRef lets the activities reach the engine built after them.
type engineRef struct{ *asl.Engine }

// freshHandler wraps an activity handler through aws-lambda-go's own handler
// wrapper, as Lambda does, building the wrapper per call: its Invoke returns
// a byte slice from a buffer pool that the next call on the same wrapper
// reuses, so one shared wrapper would have to serialise every call.
type freshHandler struct{ fn any }

func (h freshHandler) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	return lambda.NewHandlerWithOptions(h.fn, config.HandlerOptions()...).Invoke(ctx, payload)
}
