package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/maasflow/maasflow/shared/clock"
	"github.com/maasflow/maasflow/shared/design"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/events"
	"github.com/maasflow/maasflow/shared/maas"
	"github.com/maasflow/maasflow/shared/store"
)

// Config bounds a run; zero values take the defaults.
type Config struct {
	// BatchSize is the number of nodes per pair of MAAS list calls
	// (default 100): one by system id, one by hostname.
	BatchSize int
	// PowerQueries bounds the live BMC queries per site and run (default
	// 25): a query can take a minute, so a site with many BMCs down is
	// judged on MAAS's last known power state beyond it.
	PowerQueries int
	// PowerConcurrency is how many BMC queries run at once (default 4).
	PowerConcurrency int
	// PowerTimeout bounds one BMC query (default 90s; MAAS itself gives up
	// on a BMC after about a minute, maas-behaviour §8).
	PowerTimeout time.Duration
	// NetworkReads bounds the interface reads per site and run (default
	// 100): each active node the site's design names costs one. Beyond
	// it a window of the nodes is read, starting at a place the run's
	// minute picks, so successive runs cover the others.
	NetworkReads int
	// Lease frees the run lock of a run that died (default 1h).
	Lease time.Duration
	// Interval is the schedule's period, for the status; zero when runs
	// are only requested.
	Interval time.Duration
}

func (c Config) withDefaults() Config {
	if c.BatchSize <= 0 {
		c.BatchSize = 100
	}
	if c.PowerQueries <= 0 {
		c.PowerQueries = 25
	}
	if c.NetworkReads <= 0 {
		c.NetworkReads = 100
	}
	if c.PowerConcurrency <= 0 {
		c.PowerConcurrency = 4
	}
	if c.PowerTimeout <= 0 {
		c.PowerTimeout = 90 * time.Second
	}
	if c.Lease <= 0 {
		c.Lease = time.Hour
	}
	return c
}

// Deps are the runner's ports. Store, MAAS and Executions are required;
// Events, Metrics, Clock, NewID and Logger are optional.
type Deps struct {
	Store      Store
	MAAS       Connector
	Executions Executions
	Events     Publisher
	Metrics    Metrics
	Clock      clock.Clock
	NewID      func() string
	Logger     *slog.Logger
}

// Runner runs reconcile runs and resolves drift.
type Runner struct {
	cfg Config
	Deps
	// wg tracks runs started in the background (Start), so Wait can wait.
	wg sync.WaitGroup
	// next is when the local schedule starts the next run.
	next atomic.Pointer[time.Time]
}

// SetNext records when the schedule starts the next run (Status shows it).
func (r *Runner) SetNext(t time.Time) { r.next.Store(&t) }

// New returns a Runner.
func New(cfg Config, deps Deps) *Runner {
	if deps.Clock == nil {
		deps.Clock = clock.Real()
	}
	if deps.NewID == nil {
		deps.NewID = uuid.NewString
	}
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	return &Runner{cfg: cfg.withDefaults(), Deps: deps}
}

// finishTimeout bounds the write that ends a run after its context ended.
const finishTimeout = 10 * time.Second

// Run triggers. They say why a run happened.
const (
	TriggerSchedule = "schedule"
	TriggerAPI      = "api"
)

// Begin starts a run over siteID (empty: every active site) unless one is
// under way; joined is true when the running one is returned instead.
func (r *Runner) Begin(ctx context.Context, siteID, trigger string) (domain.ReconcileRun, bool, error) {
	run := domain.ReconcileRun{
		ID: "run-" + r.NewID(), SiteID: siteID, Trigger: trigger, Status: domain.RunRunning,
		StartedAt: r.Clock.Now().UTC(), DriftByKind: map[string]int{},
	}
	return r.Store.BeginReconcileRun(ctx, run, r.cfg.Lease)
}

// Sites lists the sites a run checks: its one site, or every active site.
func (r *Runner) Sites(ctx context.Context, run domain.ReconcileRun) ([]string, error) {
	if run.SiteID != "" {
		return []string{run.SiteID}, nil
	}
	sites, err := r.Store.ListSites(ctx)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, s := range sites {
		if s.Status != domain.StatusDisabled {
			ids = append(ids, s.ID)
		}
	}
	return ids, nil
}

// Run runs a whole run in the caller's goroutine: Begin, every site, Finish.
// When a run is under way it returns that run at once with joined true.
func (r *Runner) Run(ctx context.Context, siteID, trigger string) (domain.ReconcileRun, bool, error) {
	run, joined, err := r.Begin(ctx, siteID, trigger)
	if err != nil || joined {
		return run, joined, err
	}
	return r.complete(ctx, run)
}

// Start is Run in the background: it returns the new (or joined) run as
// soon as it is recorded. Wait waits for background runs.
func (r *Runner) Start(ctx context.Context, siteID, trigger string) (domain.ReconcileRun, bool, error) {
	run, joined, err := r.Begin(ctx, siteID, trigger)
	if err != nil || joined {
		return run, joined, err
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		// The caller's request ends now; the run must not end with it.
		if _, _, err := r.complete(context.WithoutCancel(ctx), run); err != nil {
			r.Logger.Error("reconcile run", "run_id", run.ID, "error", err.Error())
		}
	}()
	return run, false, nil
}

// Wait waits for the runs Start began.
func (r *Runner) Wait() { r.wg.Wait() }

func (r *Runner) complete(ctx context.Context, run domain.ReconcileRun) (domain.ReconcileRun, bool, error) {
	sites, err := r.Sites(ctx, run)
	if err == nil {
		for _, id := range sites {
			if _, err = r.RunSite(ctx, run.ID, id); err != nil {
				break
			}
		}
	}
	// The lock must be released even when ctx ended mid-run (shutdown),
	// or the next process would join a run nobody works on until the
	// lease expires.
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	done, ferr := r.Finish(fctx, run.ID)
	return done, false, errors.Join(err, ferr)
}

// Finish ends a run: sums its sites, sets its status and releases the run
// lock.
func (r *Runner) Finish(ctx context.Context, runID string) (domain.ReconcileRun, error) {
	now := r.Clock.Now().UTC()
	return r.Store.UpdateReconcileRun(ctx, runID, true, func(run *domain.ReconcileRun) error {
		run.Status, run.EndedAt = domain.RunSucceeded, &now
		run.NodesChecked, run.DriftByKind = 0, map[string]int{}
		for _, s := range run.Sites {
			run.NodesChecked += s.NodesChecked
			for k, n := range s.DriftByKind {
				run.DriftByKind[k] += n
			}
			if s.Error != "" {
				run.Status = domain.RunPartial
			}
		}
		return nil
	})
}

// RunSite checks one site and records the outcome on the run. A site MAAS
// cannot be read on is recorded as the site's error, not returned; the
// error return is for the store, without which nothing can be recorded.
func (r *Runner) RunSite(ctx context.Context, runID, siteID string) (domain.SiteRunInfo, error) {
	now := r.Clock.Now().UTC()
	info := domain.SiteRunInfo{SiteID: siteID, StartedAt: now, DriftByKind: map[string]int{}}
	log := r.Logger.With("run_id", runID, "site_id", siteID)

	obs, err := r.observe(ctx, siteID, now, &info)
	if err != nil {
		var se *siteError
		if !errors.As(err, &se) {
			return info, err
		}
		info.Error = se.Error()
		log.WarnContext(ctx, "reconcile site not checked", "error", info.Error)
	} else {
		if err := r.apply(ctx, runID, siteID, now, obs, &info); err != nil {
			return info, err
		}
	}
	info.EndedAt = r.Clock.Now().UTC()
	if _, err := r.Store.UpdateReconcileRun(ctx, runID, false, func(run *domain.ReconcileRun) error {
		for i := range run.Sites {
			if run.Sites[i].SiteID == siteID {
				run.Sites[i] = info // a repeated site step replaces its result
				return nil
			}
		}
		run.Sites = append(run.Sites, info)
		return nil
	}); err != nil {
		return info, err
	}
	if r.Metrics != nil {
		r.Metrics.RecordSite(info)
	}
	log.InfoContext(ctx, "reconcile site checked", "nodes", info.NodesChecked, "new", info.New, "closed", info.Closed,
		"maas_calls", info.MAASCalls, "power_queries", info.PowerQueries)
	return info, nil
}

// siteError is a site that could not be read (MAAS down, no credentials):
// recorded on the run, the other sites go on.
type siteError struct{ msg string }

func (e *siteError) Error() string { return e.msg }

// observe reads everything Compare needs about a site.
func (r *Runner) observe(ctx context.Context, siteID string, now time.Time, info *domain.SiteRunInfo) (Observation, error) {
	obs := Observation{SiteID: siteID, Now: now, Power: map[string]PowerReading{}}
	nodes, err := r.Store.ListNodesBySite(ctx, siteID)
	if err != nil {
		return obs, err
	}
	obs.Nodes = nodes
	var checked []domain.Node
	for _, n := range nodes {
		if Checked(n) {
			checked = append(checked, n)
		}
	}
	info.NodesChecked = len(checked)

	if obs.Onboardings, err = r.openOnboardings(ctx, siteID); err != nil {
		return obs, err
	}
	if obs.DeadSlots, err = r.Store.FindDeadSlots(ctx, siteID); err != nil {
		return obs, err
	}
	if len(checked) == 0 {
		return obs, nil
	}
	client, err := r.MAAS.ForSite(ctx, siteID)
	if err != nil {
		return obs, &siteError{msg: "connect to MAAS: " + err.Error()}
	}
	for start := 0; start < len(checked); start += r.cfg.BatchSize {
		batch := checked[start:min(start+r.cfg.BatchSize, len(checked))]
		ids := make([]string, len(batch))
		hosts := make([]string, len(batch))
		for i, n := range batch {
			ids[i], hosts[i] = n.MAASSystemID, n.Hostname
		}
		byID, err := client.ListByIDs(ctx, ids)
		info.MAASCalls++
		if err != nil {
			return obs, &siteError{msg: "list machines: " + err.Error()}
		}
		byHost, err := client.ListByHostnames(ctx, hosts)
		info.MAASCalls++
		if err != nil {
			return obs, &siteError{msg: "list machines: " + err.Error()}
		}
		obs.Machines = append(append(obs.Machines, byID...), byHost...)
	}
	r.queryPower(ctx, client, checked, &obs, info)
	if err := r.readNetworks(ctx, client, siteID, checked, &obs, info); err != nil {
		return obs, err
	}
	return obs, nil
}

// interfaceReader reads a machine's interfaces as the design's drift
// check compares them (*maas.Client).
type interfaceReader interface {
	ObservedInterfaces(ctx context.Context, systemID string) ([]design.ObservedInterface, error)
}

// designReader reads a site's applied design (*store.Store).
type designReader interface {
	GetSiteDesign(ctx context.Context, siteID string) (store.SiteDesign, error)
}

// readNetworks reads the site's applied design and, for each active node
// it names whose machine MAAS lists Deployed, the machine's interfaces:
// one MAAS call per such node, at most NetworkReads, none for a site
// without a design. A
// machine whose interfaces cannot be read is left out (a later run reads
// it again); a store that cannot be read is the run's error.
func (r *Runner) readNetworks(ctx context.Context, client MachineReader, siteID string, checked []domain.Node, obs *Observation, info *domain.SiteRunInfo) error {
	dr, ok := r.Store.(designReader)
	ir, ok2 := client.(interfaceReader)
	if !ok || !ok2 {
		return nil
	}
	sd, err := dr.GetSiteDesign(ctx, siteID)
	var nf *store.ItemNotFoundError
	if errors.As(err, &nf) {
		return nil
	}
	if err != nil {
		return err
	}
	obs.Design = &sd.Design
	obs.Interfaces = map[string][]design.ObservedInterface{}
	deployed := map[string]bool{}
	for _, m := range obs.Machines {
		if m.StatusName == maasDeployed {
			deployed[m.SystemID] = true
		}
	}
	var todo []string
	for _, n := range checked {
		if deployed[n.MAASSystemID] && DesignedNetwork(obs.Design, n) {
			todo = append(todo, n.MAASSystemID)
		}
	}
	if len(todo) > r.cfg.NetworkReads {
		info.NetworkSkipped = len(todo) - r.cfg.NetworkReads
		start := int((obs.Now.Unix() / 60) % int64(len(todo)))
		todo = append(todo[start:], todo[:start]...)[:r.cfg.NetworkReads]
	}
	for _, sid := range todo {
		ifaces, err := ir.ObservedInterfaces(ctx, sid)
		info.MAASCalls++
		if err != nil {
			r.Logger.WarnContext(ctx, "reconcile: interfaces not read", "system_id", sid, "error", err.Error())
			continue
		}
		obs.Interfaces[sid] = ifaces
	}
	return nil
}

// queryPower asks the BMC of each active node whose machine is Deployed
// but not listed as on, at most PowerQueries of them, PowerConcurrency at
// a time: MAAS's listed power_state comes from its last periodic check,
// and a live answer separates a host that is off from a BMC that is gone.
func (r *Runner) queryPower(ctx context.Context, client MachineReader, checked []domain.Node, obs *Observation, info *domain.SiteRunInfo) {
	listed := map[string]maas.Machine{}
	for _, m := range obs.Machines {
		listed[m.SystemID] = m
	}
	var todo []string
	for _, n := range checked {
		if m, ok := listed[n.MAASSystemID]; ok && m.StatusName == maasDeployed && m.PowerState != "on" {
			todo = append(todo, m.SystemID)
		}
	}
	if len(todo) > r.cfg.PowerQueries {
		info.PowerSkipped = len(todo) - r.cfg.PowerQueries
		todo = todo[:r.cfg.PowerQueries]
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, r.cfg.PowerConcurrency)
	for _, sid := range todo {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			qctx, cancel := context.WithTimeout(ctx, r.cfg.PowerTimeout)
			defer cancel()
			state, err := client.PowerState(qctx, sid)
			mu.Lock()
			defer mu.Unlock()
			info.PowerQueries++
			var gone *maas.MAASNotFoundError
			switch {
			case errors.As(err, &gone):
				// Deleted since the listing: the next run sees it missing.
			case err != nil:
				obs.Power[sid] = PowerReading{Unreachable: true}
			default:
				obs.Power[sid] = PowerReading{State: state}
			}
		}()
	}
	wg.Wait()
}

// openOnboardings lists the site's open onboardings with their execution
// status and enrollment token.
func (r *Runner) openOnboardings(ctx context.Context, siteID string) ([]OnboardingView, error) {
	var out []OnboardingView
	for _, status := range []domain.OnboardingStatus{domain.OnboardingPending, domain.OnboardingRunning, domain.OnboardingManualIntervention} {
		f := store.OnboardingFilter{SiteID: siteID, Status: status, Limit: store.MaxPageSize}
		for {
			page, err := r.Store.ListOnboardings(ctx, f)
			if err != nil {
				return nil, err
			}
			for _, o := range page.Items {
				v, err := r.viewOnboarding(ctx, o)
				if err != nil {
					return nil, err
				}
				out = append(out, v)
			}
			if page.NextCursor == "" {
				break
			}
			f.Cursor = page.NextCursor
		}
	}
	return out, nil
}

func (r *Runner) viewOnboarding(ctx context.Context, o domain.Onboarding) (OnboardingView, error) {
	v := OnboardingView{Onboarding: o}
	if o.ExecutionID != "" {
		st, err := r.Executions.ExecutionStatus(ctx, o.ExecutionID)
		if err != nil {
			return v, &siteError{msg: "read workflow execution: " + err.Error()}
		}
		v.ExecutionStatus = st
	}
	if o.EnrollmentTokenHash != "" {
		t, err := r.Store.GetEnrollmentToken(ctx, o.EnrollmentTokenHash)
		var nf *store.ItemNotFoundError
		switch {
		case errors.As(err, &nf):
		case err != nil:
			return v, err
		default:
			v.Token = &t
		}
	}
	return v, nil
}

// withoutDecommissioning drops the findings of nodes that a decommission
// holds: once a decommission is created its workflow owns the node, even
// before BeginDecommission has marked the node decommissioning, so the drift
// that led to it (a machine released behind maasflow's back) closes now
// instead of at the next run. Only nodes with findings are looked up, so a
// quiet site costs nothing more.
func (r *Runner) withoutDecommissioning(ctx context.Context, findings []Finding) ([]Finding, error) {
	held := map[string]bool{}
	kept := findings[:0]
	for _, f := range findings {
		if f.NodeID == "" {
			kept = append(kept, f)
			continue
		}
		h, seen := held[f.NodeID]
		if !seen {
			_, found, err := r.Store.FindOpenDecommission(ctx, f.NodeID)
			if err != nil {
				return nil, fmt.Errorf("open decommission of node %s: %w", f.NodeID, err)
			}
			h, held[f.NodeID] = found, found
		}
		if !h {
			kept = append(kept, f)
		}
	}
	return kept, nil
}

// apply compares, writes the drift plan, the node states and the events.
func (r *Runner) apply(ctx context.Context, runID, siteID string, now time.Time, obs Observation, info *domain.SiteRunInfo) error {
	findings, err := r.withoutDecommissioning(ctx, Compare(obs))
	if err != nil {
		return err
	}
	open, err := r.Store.ListOpenDrift(ctx, siteID)
	if err != nil {
		return err
	}
	plan := PlanDrift(siteID, runID, now, open, findings)

	// Closing first keeps one open item per subject and kind when a
	// changed observation replaces one.
	for _, d := range plan.Closed {
		if _, err := r.Store.UpdateDriftItem(ctx, d.ID, func(cur *domain.DriftItem) error {
			if cur.State == domain.DriftClosed {
				return nil
			}
			cur.State, cur.ClosedAt, cur.ClosedBy = d.State, d.ClosedAt, d.ClosedBy
			return nil
		}); err != nil {
			return err
		}
	}
	for _, d := range plan.Seen {
		if _, err := r.Store.UpdateDriftItem(ctx, d.ID, func(cur *domain.DriftItem) error {
			cur.LastSeen, cur.RunID = d.LastSeen, d.RunID
			cur.Hostname, cur.MAASSystemID, cur.OnboardingID = d.Hostname, d.MAASSystemID, d.OnboardingID
			return nil
		}); err != nil {
			return err
		}
	}
	for _, d := range plan.New {
		// The event goes out before the item is stored: a failure between
		// the two repeats the event on the next attempt (consumers
		// de-duplicate on drift_id) rather than losing it.
		if err := r.publish(ctx, d); err != nil {
			return err
		}
		err := r.Store.CreateDriftItem(ctx, d)
		var dup *store.ItemConflictError
		if err != nil && !errors.As(err, &dup) {
			return err
		}
	}
	info.New, info.Closed = len(plan.New), len(plan.Closed)
	for _, d := range append(plan.Seen, plan.New...) {
		info.DriftByKind[d.Kind]++
	}
	return r.recordStates(ctx, runID, siteID, now, obs)
}

func (r *Runner) publish(ctx context.Context, d domain.DriftItem) error {
	if r.Events == nil {
		return nil
	}
	err := r.Events.Publish(ctx, events.DriftDetected, events.DriftDetail{
		DriftID: d.ID, RunID: d.RunID, SiteID: d.SiteID, NodeID: d.NodeID, Hostname: d.Hostname,
		MAASSystemID: d.MAASSystemID, OnboardingID: d.OnboardingID, Kind: d.Kind,
		Expected: d.Expected, Observed: d.Observed, FirstSeen: d.FirstSeen, OccurredAt: r.Clock.Now().UTC(),
	})
	if err != nil {
		return fmt.Errorf("publish %s for %s: %w", events.DriftDetected, d.ID, err)
	}
	return nil
}

// recordStates writes node_maas_state for every checked node whose machine
// looks different from the last run's view.
func (r *Runner) recordStates(ctx context.Context, runID, siteID string, now time.Time, obs Observation) error {
	prev, err := r.Store.ListNodeMAASStates(ctx, siteID)
	if err != nil {
		return err
	}
	last := map[string]domain.NodeMAASState{}
	for _, st := range prev {
		last[st.NodeID] = st
	}
	byID := map[string]maas.Machine{}
	for _, m := range obs.Machines {
		byID[m.SystemID] = m
	}
	for _, n := range obs.Nodes {
		if !Checked(n) {
			continue
		}
		st := domain.NodeMAASState{NodeID: n.ID, SiteID: siteID, Hostname: n.Hostname, MAASSystemID: n.MAASSystemID, ObservedAt: now, RunID: runID}
		if m, ok := byID[n.MAASSystemID]; ok {
			st.Found, st.Hostname, st.StatusName, st.PowerState = true, m.Hostname, m.StatusName, m.PowerState
			if p, ok := obs.Power[m.SystemID]; ok {
				st.PowerState = p.State
				if p.Unreachable {
					st.PowerState = "unreachable"
				}
			}
		}
		if old, ok := last[n.ID]; ok && sameState(old, st) {
			continue
		}
		if err := r.Store.PutNodeMAASState(ctx, st); err != nil {
			return err
		}
	}
	return nil
}

func sameState(a, b domain.NodeMAASState) bool {
	return a.Found == b.Found && a.MAASSystemID == b.MAASSystemID && strings.EqualFold(a.Hostname, b.Hostname) &&
		a.StatusName == b.StatusName && a.PowerState == b.PowerState
}
