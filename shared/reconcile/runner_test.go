package reconcile

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/clock"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/events"
	"github.com/maasflow/maasflow/shared/maas"
	"github.com/maasflow/maasflow/shared/store"
)

// fakeMAAS answers the batched listings from a map and counts calls.
type fakeMAAS struct {
	mu       sync.Mutex
	machines map[string]maas.Machine
	power    map[string]string
	calls    int
	powerQs  int
}

func (f *fakeMAAS) ListByIDs(_ context.Context, ids []string) ([]maas.Machine, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	var out []maas.Machine
	for _, id := range ids {
		if m, ok := f.machines[id]; ok {
			out = append(out, m)
		}
	}
	return out, nil
}

func (f *fakeMAAS) ListByHostnames(_ context.Context, hosts []string) ([]maas.Machine, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	var out []maas.Machine
	for _, m := range f.machines {
		for _, h := range hosts {
			if m.Hostname == h {
				out = append(out, m)
			}
		}
	}
	return out, nil
}

func (f *fakeMAAS) PowerState(_ context.Context, sid string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.powerQs++
	if s, ok := f.power[sid]; ok {
		return s, nil
	}
	return "", &maas.MAASUnavailableError{}
}

func (f *fakeMAAS) ForSite(context.Context, string) (MachineReader, error) { return f, nil }

type execs map[string]string

func (e execs) ExecutionStatus(_ context.Context, id string) (string, error) {
	if s, ok := e[id]; ok {
		return s, nil
	}
	return ExecutionUnknown, nil
}

// validatingBus checks every event against its schema, as the real buses do.
type validatingBus struct {
	mu     sync.Mutex
	events []events.DriftDetail
}

func (b *validatingBus) Publish(_ context.Context, detailType string, detail any) error {
	if _, err := events.EncodeDetail(detailType, detail); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.events = append(b.events, detail.(events.DriftDetail))
	return nil
}

type harness struct {
	db   store.DynamoDB
	st   *store.Store
	clk  *clockwork.FakeClock
	maas *fakeMAAS
	bus  *validatingBus
	r    *Runner
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	db, err := store.NewLocalDB(context.Background(), "")
	require.NoError(t, err)
	clk := clock.NewFake(t0)
	h := &harness{db: db, st: store.New(db, "", clk.Now), clk: clk, maas: &fakeMAAS{machines: map[string]maas.Machine{}, power: map[string]string{}}, bus: &validatingBus{}}
	require.NoError(t, h.st.CreateSite(context.Background(), domain.Site{ID: "s1", Name: "one", MAASURL: "http://maas/MAAS", Status: domain.StatusActive}))
	h.r = New(Config{}, Deps{Store: h.st, MAAS: h.maas, Executions: execs{}, Events: h.bus, Clock: clk})
	return h
}

func (h *harness) addNode(t *testing.T, id, host, sid string) {
	t.Helper()
	require.NoError(t, h.st.CreateNode(context.Background(), domain.Node{ID: id, SiteID: "s1", Hostname: host, MAASSystemID: sid, Status: domain.NodeActive}))
	h.maas.machines[sid] = machine(sid, host, "Deployed", "on")
}

func (h *harness) run(t *testing.T) domain.ReconcileRun {
	t.Helper()
	h.clk.Advance(time.Minute)
	run, joined, err := h.r.Run(context.Background(), "", TriggerAPI)
	require.NoError(t, err)
	require.False(t, joined)
	return run
}

func (h *harness) open(t *testing.T) map[string]domain.DriftItem {
	t.Helper()
	items, err := h.st.ListOpenDrift(context.Background(), "s1")
	require.NoError(t, err)
	out := map[string]domain.DriftItem{}
	for _, d := range items {
		out[d.NodeID+" "+d.Kind] = d
	}
	return out
}

func TestRunFindsAndClosesDrift(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	for i, host := range []string{"gpu1", "gpu2", "gpu3"} {
		h.addNode(t, "n"+host[3:], host, "sid"+string(rune('a'+i)))
	}
	run := h.run(t)
	assert.Equal(t, domain.RunSucceeded, run.Status)
	assert.Equal(t, 3, run.NodesChecked)
	assert.Empty(t, h.open(t))
	assert.Equal(t, 2, h.maas.calls, "one list by id and one by hostname for three nodes")
	states, err := h.st.ListNodeMAASStates(ctx, "s1")
	require.NoError(t, err)
	assert.Len(t, states, 3)

	// Behind maasflow's back: one released, one deleted, one powered off.
	h.maas.machines["sida"] = machine("sida", "gpu1", "Ready", "off")
	delete(h.maas.machines, "sidb")
	h.maas.machines["sidc"] = machine("sidc", "gpu3", "Deployed", "off")
	h.maas.power["sidc"] = "off"
	h.maas.calls = 0
	run = h.run(t)
	open := h.open(t)
	require.Len(t, open, 3, "%v", open)
	assert.Equal(t, "Ready", open["n1 status_mismatch"].Observed)
	assert.Equal(t, "absent", open["n2 machine_missing"].Observed)
	assert.Equal(t, "off", open["n3 power_off"].Observed)
	assert.Equal(t, map[string]int{"status_mismatch": 1, "machine_missing": 1, "power_off": 1}, run.DriftByKind)
	assert.Equal(t, 2, h.maas.calls)
	assert.Equal(t, 1, h.maas.powerQs, "only the Deployed machine not listed as on is queried")
	require.Len(t, h.bus.events, 3, "one event per new item")

	// Seen again: no new event, last_seen moves.
	h.run(t)
	assert.Len(t, h.bus.events, 3)
	again := h.open(t)
	assert.Equal(t, open["n1 status_mismatch"].ID, again["n1 status_mismatch"].ID)
	assert.True(t, again["n1 status_mismatch"].LastSeen.After(open["n1 status_mismatch"].LastSeen))

	// Fixed in MAAS: closed by the next run, kept as history.
	h.maas.machines["sidc"] = machine("sidc", "gpu3", "Deployed", "on")
	closer := h.run(t)
	_, stillOpen := h.open(t)["n3 power_off"]
	assert.False(t, stillOpen)
	page, err := h.st.ListDrift(ctx, store.DriftFilter{NodeID: "n3"})
	require.NoError(t, err)
	require.Len(t, page.Items, 1)
	assert.Equal(t, domain.DriftClosed, page.Items[0].State)
	assert.Equal(t, closer.ID, page.Items[0].ClosedBy)
}

// A decommission owns its node from the moment it is created, before its
// workflow's first step marks the node decommissioning: the drift that
// led to it closes at the next run, and the node is not reported again.
func TestNodeHeldByADecommissionIsNotCompared(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	h.addNode(t, "n1", "gpu1", "sida")
	h.maas.machines["sida"] = machine("sida", "gpu1", "Ready", "off")
	h.run(t)
	require.Contains(t, h.open(t), "n1 status_mismatch")

	require.NoError(t, h.st.CreateDecommission(ctx, domain.Decommission{
		ID: "d1", NodeID: "n1", SiteID: "s1", Hostname: "gpu1", Mode: domain.DecommissionFull,
		Status: domain.DecommissionPending, Attempt: 1, CreatedAt: t0, UpdatedAt: t0,
	}))
	node, err := h.st.GetNode(ctx, "n1")
	require.NoError(t, err)
	require.Equal(t, domain.NodeActive, node.Status, "the workflow has not begun")
	h.run(t)
	assert.NotContains(t, h.open(t), "n1 status_mismatch")
}

func TestResolve(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	h.addNode(t, "n1", "gpu1", "sida")
	h.addNode(t, "n2", "gpu2", "sidb")
	h.addNode(t, "n3", "gpu3", "sidc")
	h.maas.machines["sida"] = machine("sida", "gpu1", "Broken", "on")
	h.maas.machines["sidb"] = machine("sidb", "gpu2-renamed", "Deployed", "on")
	h.maas.machines["sidc"] = machine("sidc", "gpu3", "Deployed", "off")
	h.maas.power["sidc"] = "off"
	h.run(t)
	require.Len(t, h.open(t), 3)

	// acknowledge: stays open, quiet, until it changes.
	d, err := h.r.Resolve(ctx, Resolution{NodeID: "n1", Kind: domain.DriftStatusMismatch, Action: domain.DriftAcknowledge, Reason: "RMA ticket 42", Actor: "ops"})
	require.NoError(t, err)
	assert.True(t, d.Acknowledged())
	h.run(t)
	assert.True(t, h.open(t)["n1 status_mismatch"].Acknowledged(), "still acknowledged")
	h.maas.machines["sida"] = machine("sida", "gpu1", "Ready", "off")
	h.run(t)
	changed := h.open(t)["n1 status_mismatch"]
	assert.Equal(t, "Ready", changed.Observed)
	assert.False(t, changed.Acknowledged(), "a change is news again")

	// adopt: the node takes MAAS's hostname; the item closes.
	d, err = h.r.Resolve(ctx, Resolution{NodeID: "n2", Kind: domain.DriftHostnameChanged, Action: domain.DriftAdopt, Reason: "renamed by DC ops", Actor: "ops"})
	require.NoError(t, err)
	assert.Equal(t, domain.DriftClosed, d.State)
	assert.Equal(t, "hostname gpu2 → gpu2-renamed", d.Resolution.Detail)
	n, err := h.st.GetNode(ctx, "n2")
	require.NoError(t, err)
	assert.Equal(t, "gpu2-renamed", n.Hostname)
	h.run(t)
	_, reopened := h.open(t)["n2 hostname_changed"]
	assert.False(t, reopened)

	// adopt a status: the node retires.
	_, err = h.r.Resolve(ctx, Resolution{NodeID: "n1", Kind: domain.DriftStatusMismatch, Action: domain.DriftAdopt, Actor: "ops"})
	require.NoError(t, err)
	n, err = h.st.GetNode(ctx, "n1")
	require.NoError(t, err)
	assert.Equal(t, domain.NodeRetired, n.Status)

	// Refusals.
	var refused *ResolveRefusedError
	_, err = h.r.Resolve(ctx, Resolution{NodeID: "n3", Kind: domain.DriftPowerOff, Action: domain.DriftAdopt})
	require.ErrorAs(t, err, &refused)
	_, err = h.r.Resolve(ctx, Resolution{NodeID: "n3", Kind: domain.DriftPowerOff, Action: domain.DriftStart})
	require.ErrorAs(t, err, &refused)
	assert.Contains(t, refused.Error(), "not available yet")
	var none *NoOpenDriftError
	_, err = h.r.Resolve(ctx, Resolution{NodeID: "n3", Kind: domain.DriftMachineMissing, Action: domain.DriftAcknowledge})
	require.ErrorAs(t, err, &none)
}

func TestKilledWorkflowIsDriftAndAdoptFreesTheHost(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	o := domain.Onboarding{ID: "o1", SiteID: "s1", ProfileID: "p", SKUID: "k", Hostname: "gpu9", NodeID: "n9", Attempt: 1,
		Status: domain.OnboardingRunning, Stage: domain.StageDeploy, ExecutionID: "arn:aws:states:local:0:execution:onboarding:onboarding-o1-1", CreatedAt: t0}
	require.NoError(t, h.st.CreateOnboarding(ctx, o))
	h.r.Executions = execs{o.ExecutionID: "ABORTED"}
	h.run(t)
	d := h.open(t)["n9 execution_not_running"]
	require.NotEmpty(t, d.ID)
	assert.Equal(t, "execution ABORTED", d.Observed)
	assert.Equal(t, "o1", d.OnboardingID)

	_, err := h.r.Resolve(ctx, Resolution{NodeID: "n9", Kind: domain.DriftExecutionNotRunning, Action: domain.DriftAdopt, Actor: "ops"})
	require.NoError(t, err)
	got, err := h.st.GetOnboarding(ctx, "o1")
	require.NoError(t, err)
	assert.Equal(t, domain.OnboardingFailed, got.Status)
	_, locked, err := h.st.FindOpenOnboarding(ctx, "s1", "gpu9")
	require.NoError(t, err)
	assert.False(t, locked, "the host is free again")
}

func TestOneRunAtATime(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	first, joined, err := h.r.Begin(ctx, "", TriggerSchedule)
	require.NoError(t, err)
	require.False(t, joined)
	second, joined, err := h.r.Run(ctx, "", TriggerAPI)
	require.NoError(t, err)
	assert.True(t, joined)
	assert.Equal(t, first.ID, second.ID)
	_, err = h.r.Finish(ctx, first.ID)
	require.NoError(t, err)
	st, err := h.r.Status(ctx)
	require.NoError(t, err)
	assert.Nil(t, st.Current)
	require.NotNil(t, st.Last)
	assert.Equal(t, first.ID, st.Last.ID)
}

func TestUnreadableSiteIsRecordedNotFatal(t *testing.T) {
	h := newHarness(t)
	h.addNode(t, "n1", "gpu1", "sida")
	h.r.MAAS = brokenConnector{}
	run := h.run(t)
	assert.Equal(t, domain.RunPartial, run.Status)
	require.Len(t, run.Sites, 1)
	assert.Contains(t, run.Sites[0].Error, "connect to MAAS")
}

type brokenConnector struct{}

func (brokenConnector) ForSite(context.Context, string) (MachineReader, error) {
	return nil, errors.New("no route to host")
}
