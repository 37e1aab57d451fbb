package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/maasflow/maasflow/shared/api"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/reconcile"
	"github.com/maasflow/maasflow/shared/store"
)

const (
	reconcilePath = "/api/v1/admin/reconciliation"
	driftPath     = reconcilePath + "/drift"
	testNodeID    = "0d000000-0000-4000-8000-000000000001"

	reconcileRunningJSON = `{"id":"run-1","site_id":"` + testSiteID + `","trigger":"api","status":"running","started_at":"2026-01-02T03:04:05Z",` +
		`"sites":[],"nodes_checked":0,"drift_by_kind":{},"joined":false}`
	reconcileEndedJSON = `{"id":"run-1","site_id":"` + testSiteID + `","trigger":"api","status":"succeeded","started_at":"2026-01-02T03:04:05Z",` +
		`"ended_at":"2026-01-02T03:04:09Z","sites":[{"site_id":"` + testSiteID + `","started_at":"2026-01-02T03:04:05Z",` +
		`"ended_at":"2026-01-02T03:04:09Z","nodes_checked":3,"drift_by_kind":{"power_off":1,"status_mismatch":2},"new":3,"closed":0,` +
		`"maas_calls":2,"power_queries":1}],"nodes_checked":3,"drift_by_kind":{"power_off":1,"status_mismatch":2}}`
	reconcilePartialJSON = `{"id":"run-1","trigger":"api","status":"partial","started_at":"2026-01-02T03:04:05Z",` +
		`"ended_at":"2026-01-02T03:04:09Z","sites":[{"site_id":"s-down","started_at":"2026-01-02T03:04:05Z",` +
		`"ended_at":"2026-01-02T03:04:06Z","nodes_checked":0,"drift_by_kind":{},"new":0,"closed":0,"maas_calls":0,` +
		`"power_queries":0,"error":"MAAS unavailable"}],"nodes_checked":0,"drift_by_kind":{}}`
	driftItemJSON = `{"id":"d1","node_id":"` + testNodeID + `","hostname":"gpu-01","site_id":"` + testSiteID + `","kind":"status_mismatch",` +
		`"expected":"Deployed","observed":"Broken","state":"open","first_seen":"2026-01-02T03:04:05Z","last_seen":"2026-01-02T03:04:05Z","run_id":"run-1"}`
	driftResolvedJSON = `{"id":"d1","node_id":"` + testNodeID + `","hostname":"gpu-01","site_id":"` + testSiteID + `","kind":"status_mismatch",` +
		`"expected":"Deployed","observed":"Broken","state":"closed","first_seen":"2026-01-02T03:04:05Z","last_seen":"2026-01-02T03:04:05Z",` +
		`"run_id":"run-1","closed_by":"adopt","resolution":{"action":"adopt","reason":"RMA","by":"ops","at":"2026-01-02T03:05:00Z",` +
		`"detail":"node status active → retired (MAAS shows Broken)"}}`
)

func TestReconcileRun(t *testing.T) {
	sitesList := adminReply{http.StatusOK, `{"items":[` + adminSiteJSON + `]}`}

	t.Run("a site name, waited for", func(t *testing.T) {
		api := newAdminFakeAPI(t)
		api.on("GET "+sitesPath, sitesList)
		api.on("POST "+reconcilePath+"/run", adminReply{http.StatusAccepted, reconcileRunningJSON})
		api.on("GET "+reconcilePath+"/status",
			adminReply{http.StatusOK, `{"current":` + reconcileRunningJSON + `}`},
			adminReply{http.StatusOK, `{"last":` + reconcileEndedJSON + `,"interval":"5m0s"}`})
		res := api.run(t, adminInvocation{}, "reconcile", "run", "--site", "lab", "--wait")
		require.Equal(t, 0, res.code, res.stderr)
		assert.Contains(t, res.stdout, "reconcile run run-1 started\n")
		assert.Regexp(t, `Status:\s+succeeded`, res.stdout)
		assert.Regexp(t, `Open drift:\s+power_off=1 status_mismatch=2`, res.stdout)
		assert.Regexp(t, testSiteID+`\s+3\s+power_off=1 status_mismatch=2\s+3\s+0\s+2\s+1\s+-`, res.stdout, "the per-site row")
		reqs := api.requests()
		require.Len(t, reqs, 4, "site lookup, run, two polls")
		assert.JSONEq(t, `{"site_id":"`+testSiteID+`"}`, reqs[1].Body, "the site's id, not its name")
	})
	t.Run("without a site nothing is sent but the request", func(t *testing.T) {
		api := newAdminFakeAPI(t)
		api.on("POST "+reconcilePath+"/run", adminReply{http.StatusAccepted, strings.Replace(reconcileRunningJSON, `"joined":false`, `"joined":true`, 1)})
		res := api.run(t, adminInvocation{}, "reconcile", "run")
		require.Equal(t, 0, res.code, res.stderr)
		assert.Equal(t, "reconcile run run-1 joined (a run was under way)\nsee its outcome with: maasflow reconcile status\n", res.stdout)
		reqs := api.requests()
		require.Len(t, reqs, 1)
		assert.Empty(t, reqs[0].Body)
	})
	t.Run("a partial run exits 1 and names the site", func(t *testing.T) {
		api := newAdminFakeAPI(t)
		api.on("POST "+reconcilePath+"/run", adminReply{http.StatusAccepted, reconcileRunningJSON})
		api.on("GET "+reconcilePath+"/status", adminReply{http.StatusOK, `{"last":` + reconcilePartialJSON + `}`})
		res := api.run(t, adminInvocation{}, "reconcile", "run", "--wait")
		assert.Equal(t, 1, res.code)
		assert.Regexp(t, `s-down\s+0\s+none\s+0\s+0\s+0\s+0\s+MAAS unavailable`, res.stdout)
		assert.Equal(t, "reconcile run run-1 ended partial: site(s) not checked: s-down\n", res.stderr)
	})
	t.Run("polls survive a brief outage", func(t *testing.T) {
		api := newAdminFakeAPI(t)
		api.on("POST "+reconcilePath+"/run", adminReply{http.StatusAccepted, reconcileRunningJSON})
		api.on("GET "+reconcilePath+"/status",
			adminReply{http.StatusBadGateway, `{"error":{"code":"bad_gateway","message":"upstream"}}`},
			adminReply{http.StatusOK, `{"last":` + reconcileEndedJSON + `}`})
		res := api.run(t, adminInvocation{}, "reconcile", "run", "--wait")
		require.Equal(t, 0, res.code, res.stderr)
		assert.Contains(t, res.stderr, "warning: poll 1/5 failed")
	})
	t.Run("a run a later one replaced is an error, not a wait for ever", func(t *testing.T) {
		api := newAdminFakeAPI(t)
		api.on("POST "+reconcilePath+"/run", adminReply{http.StatusAccepted, reconcileRunningJSON})
		later := strings.NewReplacer(`"id":"run-1"`, `"id":"run-2"`, "03:04:05Z", "03:10:00Z").Replace(reconcileEndedJSON)
		api.on("GET "+reconcilePath+"/status", adminReply{http.StatusOK, `{"last":` + later + `}`})
		res := api.run(t, adminInvocation{}, "reconcile", "run", "--wait")
		assert.Equal(t, 1, res.code)
		assert.Contains(t, res.stderr, "error: reconcile run run-1 ended and a later run has started since")
	})
	t.Run("json: the answer verbatim, or the ended run with --wait", func(t *testing.T) {
		api := newAdminFakeAPI(t)
		api.on("POST "+reconcilePath+"/run", adminReply{http.StatusAccepted, reconcileRunningJSON})
		api.on("GET "+reconcilePath+"/status", adminReply{http.StatusOK, `{"last":` + reconcileEndedJSON + `}`})
		res := api.run(t, adminInvocation{}, "reconcile", "run", "-o", "json")
		require.Equal(t, 0, res.code, res.stderr)
		assert.JSONEq(t, reconcileRunningJSON, res.stdout)

		res = api.run(t, adminInvocation{}, "reconcile", "run", "--wait", "-o", "json")
		require.Equal(t, 0, res.code, res.stderr)
		assert.JSONEq(t, reconcileEndedJSON, res.stdout, "one document: the ended run")

		res = api.run(t, adminInvocation{}, "reconcile", "run", "--wait", "-o", "yaml")
		require.Equal(t, 0, res.code, res.stderr)
		assertYAMLIsJSON(t, reconcileEndedJSON, res.stdout)
	})
	t.Run("misuse sends nothing", func(t *testing.T) {
		api := newAdminFakeAPI(t)
		for _, args := range [][]string{
			{"reconcile", "run", "--interval", "0s"},
			{"reconcile", "run", "extra"},
			{"reconcile", "status", "-o", "xml"},
			{"reconcile"},
		} {
			res := api.run(t, adminInvocation{}, args...)
			assert.Equal(t, 2, res.code, args)
			assert.Contains(t, res.stderr, "Usage:", args)
		}
		assert.Empty(t, api.requests())
	})
}

func TestReconcileStatus(t *testing.T) {
	api := newAdminFakeAPI(t)
	status := `{"current":` + reconcileRunningJSON + `,"last":` + reconcileEndedJSON + `,"next_scheduled":"2026-01-02T03:09:05Z","interval":"5m0s"}`
	api.on("GET "+reconcilePath+"/status", adminReply{http.StatusOK, status})
	res := api.run(t, adminInvocation{}, "reconcile", "status")
	require.Equal(t, 0, res.code, res.stderr)
	assert.Regexp(t, `(?s)Schedule:\s+every 5m0s\nNext scheduled:\s+2026-01-02T03:09:05Z\n\nCurrent run:\nID:\s+run-1\nStatus:\s+running.*\nLast run:\nID:\s+run-1\nStatus:\s+succeeded`, res.stdout)
	assert.Regexp(t, `Ended:\s+-`, res.stdout, "the current run has not ended")

	res = api.run(t, adminInvocation{}, "reconcile", "status", "-o", "json")
	require.Equal(t, 0, res.code, res.stderr)
	assert.JSONEq(t, status, res.stdout)

	api.on("GET "+reconcilePath+"/status", adminReply{http.StatusOK, `{}`})
	res = api.run(t, adminInvocation{}, "reconcile", "status")
	require.Equal(t, 0, res.code, res.stderr)
	assert.Regexp(t, `Schedule:\s+none \(runs only when asked\)`, res.stdout)
	assert.Equal(t, 2, strings.Count(res.stdout, "  none\n"), "no current and no last run:\n%s", res.stdout)

	api.on("GET "+reconcilePath+"/status", adminReply{http.StatusServiceUnavailable,
		`{"error":{"code":"unavailable","message":"reconciliation is not configured on this deployment","correlation_id":"c-9"}}`})
	res = api.run(t, adminInvocation{}, "reconcile", "status")
	assert.Equal(t, 1, res.code)
	assert.Equal(t, "error: unavailable: reconciliation is not configured on this deployment (correlation_id c-9)\n", res.stderr)
}

func TestDriftList(t *testing.T) {
	t.Run("filters, a site name and the next page's cursor", func(t *testing.T) {
		api := newAdminFakeAPI(t)
		api.on("GET "+sitesPath, adminReply{http.StatusOK, `{"items":[` + adminSiteJSON + `]}`})
		api.on("GET "+driftPath, adminReply{http.StatusOK, `{"items":[` + driftItemJSON + `],"next_cursor":"abc"}`})
		res := api.run(t, adminInvocation{}, "drift", "list", "--site", "lab", "--kind", "status_mismatch", "--state", "open", "--limit", "1")
		require.Equal(t, 0, res.code, res.stderr)
		assert.Regexp(t, testNodeID+`\s+gpu-01\s+status_mismatch\s+Deployed\s+Broken\s+open\s+2026-01-02T03:04:05Z\s+2026-01-02T03:04:05Z\s+-`, res.stdout)
		assert.Equal(t, "more drift items: add --all, or --cursor abc\n", res.stderr)
		reqs := api.requests()
		require.Len(t, reqs, 2)
		assert.Equal(t, "kind=status_mismatch&limit=1&site_id="+testSiteID+"&state=open", reqs[1].Query)
	})
	t.Run("a node's history", func(t *testing.T) {
		api := newAdminFakeAPI(t)
		api.on("GET "+driftPath, adminReply{http.StatusOK, `{"items":[` + driftResolvedJSON + `]}`})
		res := api.run(t, adminInvocation{}, "drift", "list", "--node", testNodeID, "--state", "closed")
		require.Equal(t, 0, res.code, res.stderr)
		assert.Regexp(t, `closed\s+\S+\s+\S+\s+adopt by ops`, res.stdout)
		assert.Empty(t, res.stderr)
		assert.Equal(t, "node_id="+testNodeID+"&state=closed", api.requests()[0].Query)
	})
	t.Run("--all follows every page into one document", func(t *testing.T) {
		api := newAdminFakeAPI(t)
		second := strings.Replace(driftItemJSON, `"id":"d1"`, `"id":"d2"`, 1)
		api.on("GET "+driftPath,
			adminReply{http.StatusOK, `{"items":[` + driftItemJSON + `],"next_cursor":"p2"}`},
			adminReply{http.StatusOK, `{"items":[` + second + `]}`})
		res := api.run(t, adminInvocation{}, "drift", "list", "--all", "-o", "json")
		require.Equal(t, 0, res.code, res.stderr)
		assert.JSONEq(t, `{"items":[`+driftItemJSON+`,`+second+`]}`, res.stdout)
		reqs := api.requests()
		require.Len(t, reqs, 2)
		assert.Equal(t, "cursor=p2", reqs[1].Query)
	})
	t.Run("one page as the API sent it", func(t *testing.T) {
		api := newAdminFakeAPI(t)
		page := `{"items":[` + driftItemJSON + `],"next_cursor":"abc"}`
		api.on("GET "+driftPath, adminReply{http.StatusOK, page})
		res := api.run(t, adminInvocation{}, "drift", "list", "-o", "yaml")
		require.Equal(t, 0, res.code, res.stderr)
		assertYAMLIsJSON(t, page, res.stdout)
	})
	t.Run("an empty list says so", func(t *testing.T) {
		api := newAdminFakeAPI(t)
		api.on("GET "+driftPath, adminReply{http.StatusOK, `{"items":[]}`})
		res := api.run(t, adminInvocation{}, "drift", "list")
		require.Equal(t, 0, res.code, res.stderr)
		assert.Equal(t, "NODE  HOSTNAME  KIND  EXPECTED  OBSERVED  STATE  FIRST_SEEN  LAST_SEEN  RESOLUTION\n(none)\n", res.stdout)
	})
	t.Run("a bad filter is the API's 400, naming it", func(t *testing.T) {
		api := newAdminFakeAPI(t)
		api.on("GET "+driftPath, adminReply{http.StatusBadRequest,
			`{"error":{"code":"invalid_request","field":"kind","message":"kind: must be one of machine_missing, …","correlation_id":"c-1"}}`})
		res := api.run(t, adminInvocation{}, "drift", "list", "--kind", "broken")
		assert.Equal(t, 1, res.code)
		assert.Contains(t, res.stderr, "error: invalid_request: kind: must be one of")
	})
	t.Run("--limit must be positive", func(t *testing.T) {
		api := newAdminFakeAPI(t)
		res := api.run(t, adminInvocation{}, "drift", "list", "--limit", "0")
		assert.Equal(t, 2, res.code)
		assert.Contains(t, res.stderr, "--limit must be a positive integer")
		assert.Empty(t, api.requests())
	})
}

func TestDriftResolve(t *testing.T) {
	resolvePath := driftPath + "/" + testNodeID + "/resolve"

	t.Run("by node id", func(t *testing.T) {
		api := newAdminFakeAPI(t)
		api.on("POST "+resolvePath, adminReply{http.StatusOK, driftResolvedJSON})
		res := api.run(t, adminInvocation{}, "drift", "resolve", testNodeID, "--kind", "status_mismatch", "--action", "adopt", "--reason", "RMA")
		require.Equal(t, 0, res.code, res.stderr)
		assert.Equal(t, "status_mismatch drift of node "+testNodeID+" (gpu-01) is closed (adopt)\n"+
			"changed: node status active → retired (MAAS shows Broken)\n", res.stdout)
		reqs := api.requests()
		require.Len(t, reqs, 1, "an id needs no lookup")
		assert.JSONEq(t, `{"kind":"status_mismatch","action":"adopt","reason":"RMA"}`, reqs[0].Body)
	})
	t.Run("by host name", func(t *testing.T) {
		api := newAdminFakeAPI(t)
		api.on("GET "+driftPath, adminReply{http.StatusOK, `{"items":[` + driftItemJSON + `]}`})
		api.on("POST "+resolvePath, adminReply{http.StatusOK, driftResolvedJSON})
		res := api.run(t, adminInvocation{}, "drift", "resolve", "gpu-01", "--kind", "status_mismatch", "--action", "adopt", "--reason", "RMA", "-o", "json")
		require.Equal(t, 0, res.code, res.stderr)
		assert.JSONEq(t, driftResolvedJSON, res.stdout)
		reqs := api.requests()
		require.Len(t, reqs, 2)
		assert.Equal(t, "kind=status_mismatch&limit=200&state=open", reqs[0].Query)
		assert.Equal(t, resolvePath, reqs[1].Path)
	})
	t.Run("a host name on two sites is ambiguous", func(t *testing.T) {
		api := newAdminFakeAPI(t)
		other := strings.Replace(driftItemJSON, testNodeID, "n-other", 1)
		api.on("GET "+driftPath, adminReply{http.StatusOK, `{"items":[` + driftItemJSON + `,` + other + `]}`})
		res := api.run(t, adminInvocation{}, "drift", "resolve", "gpu-01", "--kind", "status_mismatch", "--action", "acknowledge", "--reason", "x")
		assert.Equal(t, 1, res.code)
		assert.Contains(t, res.stderr, `"gpu-01" names 2 nodes (`+testNodeID+`, n-other); give the id`)
		assert.Len(t, api.requests(), 1, "nothing resolved")
	})
	t.Run("start says what it started and how to follow it", func(t *testing.T) {
		api := newAdminFakeAPI(t)
		started := strings.NewReplacer(`"action":"adopt"`, `"action":"start"`,
			`"detail":"node status active → retired (MAAS shows Broken)"`, `"detail":"decommission `+testDecomID+` (full)"`).Replace(driftResolvedJSON)
		api.on("POST "+resolvePath, adminReply{http.StatusOK, started})
		res := api.run(t, adminInvocation{}, "drift", "resolve", testNodeID, "--kind", "status_mismatch", "--action", "start", "--reason", "RMA")
		require.Equal(t, 0, res.code, res.stderr)
		assert.Equal(t, "status_mismatch drift of node "+testNodeID+" (gpu-01) is closed (start)\n"+
			"started: decommission "+testDecomID+" (full)\nfollow it with: maasflow decommission watch "+testNodeID+"\n", res.stdout)
	})
	t.Run("a subject that is not a node is used as it is", func(t *testing.T) {
		api := newAdminFakeAPI(t)
		api.on("POST "+driftPath+"/maas:p8k2qd/resolve", adminReply{http.StatusConflict,
			`{"error":{"code":"conflict","field":"action","message":"unknown_machine has nothing to adopt: delete or rename the machine in MAAS","correlation_id":"c-2"}}`})
		res := api.run(t, adminInvocation{}, "drift", "resolve", "maas:p8k2qd", "--kind", "unknown_machine", "--action", "adopt", "--reason", "x")
		assert.Equal(t, 1, res.code)
		assert.Contains(t, res.stderr, "error: conflict: unknown_machine has nothing to adopt")
		assert.Len(t, api.requests(), 1)
	})
	t.Run("kind, action and reason are required", func(t *testing.T) {
		api := newAdminFakeAPI(t)
		for flag, args := range map[string][]string{
			"--kind":   {"--action", "adopt", "--reason", "x"},
			"--action": {"--kind", "power_off", "--reason", "x"},
			"--reason": {"--kind", "power_off", "--action", "adopt"},
		} {
			res := api.run(t, adminInvocation{}, append([]string{"drift", "resolve", testNodeID}, args...)...)
			assert.Equal(t, 2, res.code, flag)
			assert.Contains(t, res.stderr, flag+" is required", flag)
		}
		res := api.run(t, adminInvocation{}, "drift", "resolve", "--kind", "power_off", "--action", "adopt", "--reason", "x")
		assert.Equal(t, 2, res.code)
		assert.Contains(t, res.stderr, "expected 1 argument(s) (NODE), got 0")
		assert.Empty(t, api.requests(), "nothing is sent")
	})
}

func TestReconcileCompletion(t *testing.T) {
	api := newAdminFakeAPI(t)
	api.on("GET "+sitesPath, adminReply{http.StatusOK, `{"items":[` + adminSiteJSON + `]}`})
	api.on("GET "+driftPath, adminReply{http.StatusOK, `{"items":[` + driftItemJSON + `]}`})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"reconcile", "run", "--site", ""}, "lab\n:4\n"},
		{[]string{"drift", "list", "--site", ""}, "lab\n:4\n"},
		{[]string{"drift", "list", "--state", ""}, "open\nclosed\n:4\n"},
		{[]string{"drift", "list", "--kind", "s"}, "machine_missing\nstatus_mismatch\nhostname_changed\nsystem_id_changed\npower_off\n" +
			"bmc_unreachable\nunknown_machine\nexecution_not_running\ntoken_mismatch\nattempt_mismatch\norphan_slot\nnetwork_mismatch\n:4\n"},
		{[]string{"drift", "resolve", "--action", ""}, "acknowledge\nadopt\nstart\n:4\n"},
		{[]string{"drift", "resolve", "--kind", "status_mismatch", ""}, testNodeID + "\tgpu-01 status_mismatch\n:4\n"},
		{[]string{"drift", "resolve", testNodeID, ""}, ":4\n"},
	} {
		res := api.run(t, adminInvocation{}, append([]string{"__complete"}, tc.args...)...)
		assert.Equal(t, 0, res.code, tc.args)
		assert.Equal(t, tc.want, res.stdout, tc.args)
	}
	var driftQueries []string
	for _, rq := range api.requests() {
		if rq.Path == driftPath {
			driftQueries = append(driftQueries, rq.Query)
		}
	}
	assert.Equal(t, []string{"kind=status_mismatch&limit=200&state=open"}, driftQueries, "node completion asks for the open drift of --kind")
}

func TestReconcileHelp(t *testing.T) {
	for _, args := range [][]string{
		{"reconcile", "--help"}, {"reconcile", "help"}, {"help", "reconcile", "run"}, {"reconcile", "run", "-h"},
		{"reconcile", "status", "--help"}, {"drift", "-h"}, {"drift", "help"}, {"drift", "list", "--help"},
		{"help", "drift", "resolve"},
	} {
		res := runAdminTest(t, nil, adminInvocation{}, args...)
		assert.Equal(t, 0, res.code, args)
		assert.Contains(t, res.stdout, "Usage:", args)
		assert.Empty(t, res.stderr, args)
	}
	res := runAdminTest(t, nil, adminInvocation{}, "--help")
	assert.Regexp(t, `(?m)^  reconcile\s+compare MAAS`, res.stdout, "listed with the admin commands")
	assert.Regexp(t, `(?m)^  drift\s+list drift`, res.stdout)
}

// assertYAMLIsJSON checks that y is block-style YAML of the JSON document j.
func assertYAMLIsJSON(t *testing.T, j, y string) {
	t.Helper()
	assert.NotContains(t, y, "{\"", "block style, not JSON")
	var doc any
	require.NoError(t, yaml.Unmarshal([]byte(y), &doc))
	b, err := json.Marshal(doc)
	require.NoError(t, err)
	assert.JSONEq(t, j, string(b))
}

// recordingReconciler stands in for the reconcile runner behind the real
// API: the run ends as soon as it is asked about, and every request the
// API passes on is kept.
type recordingReconciler struct {
	mu       sync.Mutex
	sites    []string
	filters  []store.DriftFilter
	resolved []reconcile.Resolution
}

func (f *recordingReconciler) run(siteID string) domain.ReconcileRun {
	start := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	return domain.ReconcileRun{ID: "run-1", SiteID: siteID, Trigger: "api", Status: domain.RunRunning, StartedAt: start,
		Sites: []domain.SiteRunInfo{}, DriftByKind: map[string]int{}}
}

func (f *recordingReconciler) Trigger(_ context.Context, siteID string) (domain.ReconcileRun, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sites = append(f.sites, siteID)
	return f.run(siteID), false, nil
}

func (f *recordingReconciler) Status(context.Context) (reconcile.Status, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	last := f.run(f.sites[len(f.sites)-1])
	end := last.StartedAt.Add(4 * time.Second)
	last.Status, last.EndedAt, last.NodesChecked = domain.RunSucceeded, &end, 3
	last.DriftByKind = map[string]int{domain.DriftPowerOff: 1}
	return reconcile.Status{Last: &last, Interval: "5m0s"}, nil
}

func (f *recordingReconciler) ListDrift(_ context.Context, filter store.DriftFilter) (store.DriftPage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.filters = append(f.filters, filter)
	return store.DriftPage{Items: []domain.DriftItem{{ID: "d1", NodeID: "node-1", Hostname: "gpu-01", SiteID: filter.SiteID,
		Kind: domain.DriftPowerOff, Expected: "on", Observed: "off", State: domain.DriftOpen}}}, nil
}

func (f *recordingReconciler) OpenDrift(_ context.Context, nodeID, kind string) (domain.DriftItem, error) {
	return domain.DriftItem{ID: "d1", NodeID: nodeID, Kind: kind, State: domain.DriftOpen}, nil
}

func (f *recordingReconciler) Resolve(_ context.Context, res reconcile.Resolution) (domain.DriftItem, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.resolved = append(f.resolved, res)
	return domain.DriftItem{ID: "d1", NodeID: res.NodeID, Hostname: "gpu-01", Kind: res.Kind, State: domain.DriftOpen,
		Resolution: &domain.DriftResolution{Action: res.Action, Reason: res.Reason, By: res.Actor}}, nil
}

// TestReconcileCLIAgainstTheAPI pins the routes, query parameters and body
// fields of the reconcile and drift commands against the real handler,
// which refuses unknown fields and parameters.
func TestReconcileCLIAgainstTheAPI(t *testing.T) {
	rc := &recordingReconciler{}
	env := map[string]string{envAdminAPIURL: newAdminRealAPI(t, func(d *api.Deps) { d.Reconciler = rc }), envAdminToken: adminTestToken}
	cli := func(args ...string) adminResult {
		t.Helper()
		res := runAdminTest(t, env, adminInvocation{}, args...)
		require.Equal(t, 0, res.code, "maasflow %s\nstdout: %s\nstderr: %s", strings.Join(args, " "), res.stdout, res.stderr)
		return res
	}
	var site struct {
		ID string `json:"id"`
	}
	require.NoError(t, json.Unmarshal([]byte(cli("sites", "create", "--name", "lab", "--maas-url", "http://maas.lab:5240/MAAS", "-o", "json").stdout), &site))

	res := cli("reconcile", "run", "--site", "lab", "--wait")
	assert.Regexp(t, `Open drift:\s+power_off=1`, res.stdout)
	cli("reconcile", "run")
	rc.mu.Lock()
	assert.Equal(t, []string{site.ID, ""}, rc.sites, "the site's id, then every site")
	rc.mu.Unlock()
	res = cli("reconcile", "status")
	assert.Regexp(t, `Schedule:\s+every 5m0s`, res.stdout)

	res = cli("drift", "list", "--site", "lab", "--kind", "power_off", "--node", "node-1", "--state", "open", "--limit", "5", "--cursor", "c1")
	assert.Regexp(t, `node-1\s+gpu-01\s+power_off\s+on\s+off\s+open`, res.stdout)
	res = cli("drift", "resolve", "gpu-01", "--kind", "power_off", "--action", "acknowledge", "--reason", "planned maintenance")
	assert.Equal(t, "power_off drift of node node-1 (gpu-01) is open (acknowledge)\n", res.stdout)

	res = cli("audit")
	assert.Contains(t, res.stdout, "reconciliation.run")
	assert.Contains(t, res.stdout, "reconciliation.drift.resolve")

	rc.mu.Lock()
	defer rc.mu.Unlock()
	require.Len(t, rc.filters, 2)
	assert.Equal(t, store.DriftFilter{SiteID: site.ID, Kind: "power_off", NodeID: "node-1", State: "open", Limit: 5, Cursor: "c1"}, rc.filters[0])
	assert.Equal(t, store.DriftFilter{Kind: "power_off", State: "open", Limit: adminDriftPageLimit}, rc.filters[1], "the host-name lookup")
	assert.Equal(t, []reconcile.Resolution{{NodeID: "node-1", Kind: "power_off", Action: "acknowledge", Reason: "planned maintenance", Actor: "alice"}}, rc.resolved)
}
