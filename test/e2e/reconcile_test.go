package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/internal/localstack"
	"github.com/maasflow/maasflow/internal/maassim"
	"github.com/maasflow/maasflow/shared/asl"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/events"
	"github.com/maasflow/maasflow/shared/maas"
	"github.com/maasflow/maasflow/shared/reconcile"
)

const reconPath = "/api/v1/admin/reconciliation"

// startStackWith starts a stack with the reconcile schedule set to
// interval (negative: off), so a test decides when runs happen.
func startStackWith(t testing.TB, interval time.Duration) *env {
	t.Helper()
	logs := &syncBuffer{}
	dir := t.TempDir()
	s, err := localstack.Start(context.Background(), localstack.Config{
		Listen: "127.0.0.1:0", SimListen: "127.0.0.1:0", TimeScale: timeScale, DataDir: dir,
		ReconcileInterval: interval,
		Logger:            slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return newEnv(t, s, dir, logs)
}

// reconcileNow starts a run through the API and waits until it ended.
func (e *env) reconcileNow() map[string]any {
	e.t.Helper()
	run := e.admin("POST", reconPath+"/run", nil, http.StatusAccepted)
	require.Equal(e.t, false, run["joined"], "no other run under way")
	deadline := time.Now().Add(terminalWait)
	for {
		st := e.admin("GET", reconPath+"/status", nil, http.StatusOK)
		if last, ok := st["last"].(map[string]any); ok && last["id"] == run["id"] {
			return last
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("run %v did not end: %v", run["id"], st)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// openDrift lists the open drift items keyed by "<node_id> <kind>".
func (e *env) openDrift(siteID string) map[string]map[string]any {
	e.t.Helper()
	out := map[string]map[string]any{}
	list := e.admin("GET", reconPath+"/drift?site_id="+siteID, nil, http.StatusOK)
	for _, it := range list["items"].([]any) {
		d := it.(map[string]any)
		out[d["node_id"].(string)+" "+d["kind"].(string)] = d
	}
	return out
}

// driftEvents returns the node.drift.detected details on the bus.
func (e *env) driftEvents() []string {
	e.t.Helper()
	envs, err := e.stack.Bus.ReadAll()
	require.NoError(e.t, err)
	var out []string
	for _, ev := range envs {
		if ev.DetailType == events.DriftDetected {
			out = append(out, string(ev.Detail))
		}
	}
	return out
}

func TestReconcileReportsDriftMadeBehindMaasflowsBack(t *testing.T) {
	t.Parallel()
	e := startStackWith(t, -1)
	f := e.setup(nil, nil)
	hosts := []string{"gpu-r1", "gpu-r2", "gpu-r3", "gpu-r4"}
	ids := map[string]string{}
	for i, h := range hosts {
		e.hardware(h, fmt.Sprintf("10.10.9.%d", 11+i), fmt.Sprintf("52:54:00:00:91:%02x", i+1), nil)
		ids[h] = e.onboard(f, h, fmt.Sprintf("10.10.9.%d", 11+i))
	}
	nodes := map[string]string{} // hostname → node id
	systems := map[string]string{}
	for _, h := range hosts {
		o := e.waitTerminal(ids[h])
		require.Equal(t, "completed", o["status"], o)
		nodes[h], systems[h] = o["node_id"].(string), o["maas_system_id"].(string)
	}

	// A killed workflow: an onboarding waiting for a node that never
	// enrolls, whose execution is stopped in the runtime, not through
	// maasflow.
	e.hardware("gpu-r5", "10.10.9.21", "52:54:00:00:91:21", map[string]any{"never_enrolls": true})
	stuck := e.onboard(f, "gpu-r5", "10.10.9.21")
	waiting := e.waitStage(stuck, "wait_enrollment")
	require.NoError(t, e.stack.Engine.StopExecution(waiting["execution_id"].(string), "States.Runtime", "killed by hand"))

	first := e.reconcileNow()
	assert.Empty(t, e.openDrift(f.SiteID)[nodes["gpu-r1"]+" status_mismatch"], "in agreement before the changes")
	assert.EqualValues(t, 4, first["nodes_checked"])

	ctx := context.Background()
	mc := e.maasClient()
	_, err := mc.Release(ctx, systems["gpu-r1"], maas.MachineReleaseParams{Comment: "freed by hand"})
	require.NoError(t, err)
	_, err = mc.MarkBroken(ctx, systems["gpu-r2"], "bad DIMM")
	require.NoError(t, err)
	require.NoError(t, mc.Delete(ctx, systems["gpu-r3"]))
	require.NoError(t, mc.PowerOff(ctx, systems["gpu-r4"]))
	// MAAS moves a released machine through Releasing to Ready; a run in
	// between would see two states in turn.
	require.Eventually(t, func() bool {
		m, err := mc.Get(ctx, systems["gpu-r1"])
		return err == nil && m.StatusName == "Ready"
	}, terminalWait, 20*time.Millisecond)

	before := len(e.driftEvents())
	run := e.reconcileNow()
	drift := e.openDrift(f.SiteID)
	check := func(host, kind, expected, observed string) {
		t.Helper()
		d := drift[nodes[host]+" "+kind]
		require.NotNil(t, d, "%s %s in %v", host, kind, drift)
		assert.Equal(t, expected, d["expected"], "%s %s", host, kind)
		assert.Equal(t, observed, d["observed"], "%s %s", host, kind)
		assert.Equal(t, host, d["hostname"])
		assert.Equal(t, run["id"], d["run_id"])
	}
	check("gpu-r1", "status_mismatch", "Deployed", "Ready")
	check("gpu-r2", "status_mismatch", "Deployed", "Broken")
	check("gpu-r3", "machine_missing", "system_id "+systems["gpu-r3"], "absent")
	check("gpu-r4", "power_off", "on", "off")
	killed := drift["onboarding:"+stuck+" execution_not_running"]
	if killed == nil {
		killed = drift[waiting["node_id"].(string)+" execution_not_running"]
	}
	require.NotNil(t, killed, "the killed workflow is reported: %v", drift)
	ex, err := e.stack.Engine.DescribeExecution(waiting["execution_id"].(string))
	require.NoError(t, err)
	require.NotEqual(t, asl.StatusRunning, ex.Status)
	assert.Equal(t, "execution "+ex.Status, killed["observed"])
	assert.Equal(t, stuck, killed["onboarding_id"])
	assert.Len(t, e.driftEvents(), before+4, "one node.drift.detected per new item (the killed workflow was news in the first run)")

	// adopt: the broken node leaves service in maasflow's records.
	adopted := e.admin("POST", reconPath+"/drift/"+nodes["gpu-r2"]+"/resolve",
		map[string]any{"kind": "status_mismatch", "action": "adopt", "reason": "DIMM RMA"}, http.StatusOK)
	assert.Equal(t, "closed", adopted["state"])
	n, err := e.stack.Store.GetNode(ctx, nodes["gpu-r2"])
	require.NoError(t, err)
	assert.Equal(t, domain.NodeRetired, n.Status)
	// adopt the killed workflow: the onboarding closes, the host is free.
	e.admin("POST", reconPath+"/drift/"+killed["node_id"].(string)+"/resolve",
		map[string]any{"kind": "execution_not_running", "action": "adopt", "reason": "execution lost"}, http.StatusOK)
	o := e.onboarding(stuck)
	assert.Equal(t, "failed", o["status"])
	assert.Equal(t, "ExecutionLost", o["error"].(map[string]any)["code"])

	// acknowledge: quiet while unchanged, news again once it changes.
	e.admin("POST", reconPath+"/drift/"+nodes["gpu-r4"]+"/resolve",
		map[string]any{"kind": "power_off", "action": "acknowledge", "reason": "maintenance window"}, http.StatusOK)
	before = len(e.driftEvents())
	e.reconcileNow()
	drift = e.openDrift(f.SiteID)
	quiet := drift[nodes["gpu-r4"]+" power_off"]
	require.NotNil(t, quiet)
	assert.Equal(t, "acknowledge", quiet["resolution"].(map[string]any)["action"])
	_, stillBroken := drift[nodes["gpu-r2"]+" status_mismatch"]
	assert.False(t, stillBroken, "an adopted node is no longer compared")
	assert.Len(t, e.driftEvents(), before, "nothing new")

	_, err = mc.MarkBroken(ctx, systems["gpu-r4"], "PSU")
	require.NoError(t, err)
	e.reconcileNow()
	drift = e.openDrift(f.SiteID)
	assert.Nil(t, drift[nodes["gpu-r4"]+" power_off"], "the power item closed")
	changed := drift[nodes["gpu-r4"]+" status_mismatch"]
	require.NotNil(t, changed, "%v", drift)
	assert.Nil(t, changed["resolution"])
	assert.Len(t, e.driftEvents(), before+1)

	// History: the closed power item is kept, closed by the run.
	hist := e.admin("GET", reconPath+"/drift?node_id="+nodes["gpu-r4"]+"&state=closed", nil, http.StatusOK)
	require.Len(t, hist["items"].([]any), 1)

	// start: a machine gone from MAAS has nothing to decommission; a
	// released one is decommissioned, and the next run closes its item.
	e.admin("POST", reconPath+"/drift/"+nodes["gpu-r3"]+"/resolve",
		map[string]any{"kind": "machine_missing", "action": "start", "reason": "decommission"}, http.StatusConflict)
	started := e.admin("POST", reconPath+"/drift/"+nodes["gpu-r1"]+"/resolve",
		map[string]any{"kind": "status_mismatch", "action": "start", "reason": "out of service"}, http.StatusOK)
	res := started["resolution"].(map[string]any)
	assert.Equal(t, "start", res["action"])
	require.Contains(t, res["detail"], "decommission ")
	decomID := strings.Fields(res["detail"].(string))[1]
	decom := e.decommissionRecord(decomID)
	assert.Equal(t, nodes["gpu-r1"], decom["node_id"])
	assert.Equal(t, "full", decom["mode"])
	e.reconcileNow()
	_, stillOpen := e.openDrift(f.SiteID)[nodes["gpu-r1"]+" status_mismatch"]
	assert.False(t, stillOpen, "the decommissioning node is no longer compared")

	// Metrics.
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.stack.APIURL+"/metrics", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.NoError(t, err)
	text := string(body)
	assert.Contains(t, text, `maasflow_onboarding_events_total{event="completed"} 4`)
	assert.Contains(t, text, fmt.Sprintf(`maasflow_drift_open{kind="machine_missing",site_id="%s"} 1`, f.SiteID))
}

func TestReconcileScheduleRunsByItself(t *testing.T) {
	t.Parallel()
	e := startStackWith(t, time.Minute) // 100 ms of wall time at this scale
	deadline := time.Now().Add(terminalWait)
	for {
		st := e.admin("GET", reconPath+"/status", nil, http.StatusOK)
		if last, ok := st["last"].(map[string]any); ok {
			assert.Equal(t, "schedule", last["trigger"])
			assert.NotEmpty(t, st["next_scheduled"])
			assert.Equal(t, "1m0s", st["interval"])
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no scheduled run: %v", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// fleet puts n Deployed machines with their hosts in the simulator and n
// active nodes for them in the store, without onboarding each.
func fleet(t testing.TB, s *localstack.Stack, siteID string, n int) {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		host := fmt.Sprintf("gpu-f%04d", i)
		sid, err := s.Sim.AddMachine(maassim.MachineSeed{Hostname: host, Status: "deployed",
			BMCIP: fmt.Sprintf("10.%d.%d.%d", 20+i/65536, (i/256)%256, i%256), PXEMAC: fmt.Sprintf("52:54:01:%02x:%02x:%02x", i/65536, (i/256)%256, i%256)})
		require.NoError(t, err)
		require.NoError(t, s.Store.CreateNode(ctx, domain.Node{ID: fmt.Sprintf("node-f%04d", i), SiteID: siteID, Hostname: host,
			SKUID: "sku", Status: domain.NodeActive, MAASSystemID: sid}))
	}
}

// TestReconcileCallBudget checks the MAAS call budget over 1,000 nodes: two
// list calls per 100 nodes, plus one power query per machine not listed as
// on.
func TestReconcileCallBudget(t *testing.T) {
	t.Parallel()
	e := startStackWith(t, -1)
	f := e.setup(nil, nil)
	const nodes = 1000
	fleet(t, e.stack, f.SiteID, nodes)
	ctx := context.Background()
	mc := e.maasClient()
	// Three hosts powered off behind maasflow's back.
	off, err := mc.ListByHostnames(ctx, []string{"gpu-f0007", "gpu-f0500", "gpu-f0999"})
	require.NoError(t, err)
	require.Len(t, off, 3)
	for _, m := range off {
		require.NoError(t, mc.PowerOff(ctx, m.SystemID))
	}

	before := e.stack.Sim.Calls()
	run, joined, err := e.stack.Reconciler.Run(ctx, f.SiteID, reconcile.TriggerAPI)
	require.NoError(t, err)
	require.False(t, joined)
	after := e.stack.Sim.Calls()

	lists, power := callDelta(before, after)
	assert.Equal(t, 2*nodes/100, lists, "two list calls per 100 nodes")
	assert.Equal(t, 3, power, "a power query only for the machines not listed as on")
	assert.Equal(t, nodes, run.NodesChecked)
	assert.Equal(t, map[string]int{domain.DriftPowerOff: 3}, run.DriftByKind)
	require.Len(t, run.Sites, 1)
	assert.Equal(t, lists, run.Sites[0].MAASCalls)
}

// callDelta counts the machine list calls and power queries between two
// call snapshots.
func callDelta(before, after maassim.CallStats) (lists, power int) {
	count := func(s maassim.CallStats) (l, p int) {
		for _, c := range s.Calls {
			switch {
			case c.Method == "GET" && c.Op == "" && strings.HasSuffix(c.Path, "/machines/"):
				l += c.Count
			case c.Op == "query_power_state":
				p += c.Count
			}
		}
		return l, p
	}
	l0, p0 := count(before)
	l1, p1 := count(after)
	return l1 - l0, p1 - p0
}

// BenchmarkReconcile1000Nodes times one run over 1,000 active nodes on one
// site of the local stack (minidyn, simulator over HTTP); docs/benchmarks.md.
func BenchmarkReconcile1000Nodes(b *testing.B) {
	e := startStackWith(b, -1)
	s := e.stack
	ctx := context.Background()
	siteID := benchSite(b, s)
	fleet(b, s, siteID, 1000)
	b.ReportAllocs()
	for b.Loop() {
		run, _, err := s.Reconciler.Run(ctx, siteID, reconcile.TriggerAPI)
		if err != nil || run.NodesChecked != 1000 || run.Sites[0].MAASCalls != 20 {
			b.Fatalf("run: %v %+v", err, run)
		}
	}
}

// benchSite creates a site with the simulator's credentials through the
// admin API and returns its id.
func benchSite(tb testing.TB, s *localstack.Stack) string {
	tb.Helper()
	do := func(method, path string, body string, want int) map[string]any {
		req, err := http.NewRequestWithContext(context.Background(), method, s.APIURL+path, strings.NewReader(body))
		require.NoError(tb, err)
		req.Header.Set("Authorization", "Bearer "+s.AdminToken)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(tb, err)
		defer func() { _ = resp.Body.Close() }()
		var out map[string]any
		require.NoError(tb, json.NewDecoder(resp.Body).Decode(&out))
		require.Equal(tb, want, resp.StatusCode, "%s %s: %v", method, path, out)
		return out
	}
	site := do("POST", "/api/v1/admin/maas-sites", fmt.Sprintf(`{"name":"bench","maas_url":%q}`, s.SimURL), http.StatusCreated)
	id := site["id"].(string)
	do("POST", "/api/v1/admin/maas-sites/"+id+"/credentials",
		fmt.Sprintf(`{"maas_api_key":%q,"bmc_username":"maasflow","bmc_password":"bench-pass"}`, s.SimAPIKey), http.StatusOK)
	return id
}
