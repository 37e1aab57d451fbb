package stack

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/asl"
)

// terminalWait bounds a wait for a workflow to end (wall time): a net
// against a hung run, not a speed assertion.
const terminalWait = 3 * time.Minute

// runLane starts the lane on tpl and fails the test when it cannot.
func runLane(t *testing.T, tpl *template) *lane {
	t.Helper()
	l, err := startLane(t, tpl)
	require.NoError(t, err)
	return l
}

func freshTemplate(t *testing.T) *template {
	t.Helper()
	tpl, err := loadTemplate(templatePath)
	require.NoError(t, err)
	return tpl
}

// do sends a request through the API front; it returns the status and the
// decoded body.
func (l *lane) do(method, path string, body any, auth bool) (int, map[string]any) {
	l.t.Helper()
	return l.driver().send(method, path, body, auth)
}

// admin calls an admin route and requires the status.
func (l *lane) admin(method, path string, body any, want int) map[string]any {
	l.t.Helper()
	return l.driver().admin(method, path, body, want)
}

// sim calls the simulator's control API.
func (l *lane) simCall(method, path string, body any, want int) {
	l.t.Helper()
	l.driver().simCall(method, path, body, want)
}

type fixture struct{ SiteID, ProfileID, SKUID string }

// setup creates a probed site with credentials, a profile and an SKU
// through the admin API.
func (l *lane) setup() fixture {
	l.t.Helper()
	site := l.admin("POST", "/api/v1/admin/maas-sites", map[string]any{
		"name": "lane-site", "maas_url": l.simURL,
		"policy": map[string]any{"bootstrap": map[string]any{"url": l.boot.URL, "version": l.boot.Version, "sha256": l.boot.SHA256,
			"ca_bundle_pem": l.boot.CABundle}},
	}, http.StatusCreated)
	id := site["id"].(string)
	l.admin("POST", "/api/v1/admin/maas-sites/"+id+"/credentials", map[string]any{
		"maas_api_key": l.sim.APIKey(), "bmc_username": "maasflow", "bmc_password": "lane-bmc-password",
	}, http.StatusOK)
	probe := l.admin("POST", "/api/v1/admin/maas-sites/"+id+"/probe", nil, http.StatusOK)
	require.Equal(l.t, true, probe["healthy"], probe)
	prof := l.admin("POST", "/api/v1/admin/maas-sites/"+id+"/profiles", map[string]any{
		"name": "gpu-jammy", "architecture": "amd64/generic", "distro_series": "jammy",
	}, http.StatusCreated)
	f := fixture{SiteID: id, ProfileID: prof["id"].(string), SKUID: "h100-8x"}
	l.admin("POST", "/api/v1/admin/skus", map[string]any{"id": f.SKUID, "gpu_model": "H100", "gpus_total": 8}, http.StatusCreated)
	return f
}

func (l *lane) hardware(hostname, bmcIP, mac string) {
	l.t.Helper()
	l.simCall("POST", "/_sim/hardware", map[string]any{"hostname": hostname, "bmc_ip": bmcIP, "pxe_mac": mac}, http.StatusCreated)
}

func (l *lane) onboard(f fixture, hostname, ip string) string {
	l.t.Helper()
	out := l.admin("POST", "/api/v1/admin/onboardings", map[string]any{
		"site_id": f.SiteID, "profile_id": f.ProfileID, "sku_id": f.SKUID, "hostname": hostname, "ipmi_ip": ip,
	}, http.StatusAccepted)
	return out["id"].(string)
}

// waitStatus polls a record until its status leaves pending and running.
func (l *lane) waitStatus(path string) map[string]any {
	l.t.Helper()
	return l.driver().waitStatus(path)
}

// requireClean fails on any denied call, failed start or bad event.
func (l *lane) requireClean() {
	l.t.Helper()
	if p := l.problems(); len(p) > 0 {
		l.t.Fatalf("the run was not clean:\n%s", strings.Join(p, "\n"))
	}
}

func TestOnboardingOnTheSynthesizedStack(t *testing.T) {
	l := runLane(t, freshTemplate(t))
	require.NoError(t, l.tryOnboarding(), l.functionLogs())
	l.requireClean()
	require.True(t, l.published("node.onboarding.started"))
	require.True(t, l.published("node.onboarding.completed"))
	calls, _ := l.aws.snapshot()
	// Every function the onboarding invoked ran as its own principal, and
	// the site's credentials were read only through the site-scoped role.
	byPrincipal := map[string]bool{}
	for _, c := range calls {
		byPrincipal[c.Principal] = true
		if strings.HasPrefix(c.Action, "secretsmanager:GetSecretValue") {
			require.True(t, strings.HasPrefix(c.Principal, "SiteSecretsRole"), "%s read a secret with its own role", c.Principal)
		}
	}
	for _, fn := range []string{"api", "validate-onboarding", "discover-machine", "deploy-machine", "finish-onboarding", "watch-sites", "reconcile"} {
		require.True(t, byPrincipal["maasflow-dev-"+fn], "no AWS call recorded for %s:\n%s", fn, describeCalls(calls))
	}

	// The closed run is the business metric, written by the function that
	// closed it as EMF on its log stream, with its stages' durations read
	// from the timeline under the function's own grants.
	// The function writes the record, then puts the event, then the metric:
	// the record reads completed an instant before.
	var runs, stages []map[string]any
	require.Eventually(t, func() bool {
		runs, stages = nil, nil
		for _, m := range l.emf("finish-onboarding") {
			switch {
			case m["Runs"] != nil:
				runs = append(runs, m)
			case m["StageDuration"] != nil:
				stages = append(stages, m)
			}
		}
		return len(runs) > 0
	}, terminalWait, 50*time.Millisecond, "the run's EMF line in finish-onboarding's log")
	require.Len(t, runs, 1, l.functionLogs())
	assert.Equal(t, "onboarding", runs[0]["Workflow"])
	assert.Equal(t, "completed", runs[0]["Outcome"])
	assert.NotEmpty(t, runs[0]["SiteId"])
	seen := map[any]bool{}
	for _, st := range stages {
		seen[st["Stage"]] = true
	}
	for _, stage := range []string{"discover", "commission", "deploy"} {
		assert.True(t, seen[stage], "a %s duration among %v", stage, stages)
	}
}

// emf is the embedded-metric-format lines a function wrote to its log.
func (l *lane) emf(fn string) []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(l.fns["maasflow-dev-"+fn].logs.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["_aws"] != nil {
			out = append(out, m)
		}
	}
	return out
}

// onboarded onboards a new host and returns the completed onboarding.
func (l *lane) onboarded(f fixture, host, ip, mac string, faults map[string]any) map[string]any {
	l.t.Helper()
	l.simCall("POST", "/_sim/hardware", map[string]any{"hostname": host, "bmc_ip": ip, "pxe_mac": mac, "faults": faults}, http.StatusCreated)
	return l.waitStatus("/api/v1/admin/onboardings/" + l.onboard(f, host, ip))
}

// TestLifecycleOnTheSynthesizedStack runs, on one deployment of the
// template: an onboarding, a recovery (rerun after a failed commissioning),
// a batch, a reconcile run and a full decommission.
func TestLifecycleOnTheSynthesizedStack(t *testing.T) {
	l := runLane(t, freshTemplate(t))
	f := l.setup()

	first := l.onboarded(f, "gpu-l1", "10.10.1.11", "52:54:00:10:01:01", nil)
	require.Equal(t, "completed", first["status"], first)

	// Recovery: commissioning fails once; the rerun completes on the same
	// MAAS machine.
	failed := l.onboarded(f, "gpu-l2", "10.10.1.12", "52:54:00:10:01:02", map[string]any{"commission_failures": 1})
	require.Contains(t, []any{"failed", "manual_intervention"}, failed["status"], failed)
	id := failed["id"].(string)
	rerun := l.admin("POST", "/api/v1/admin/onboardings/"+id+"/rerun", map[string]any{"reason": "reseated the DIMM"}, http.StatusOK)
	require.EqualValues(t, 2, rerun["attempt"])
	done := l.waitStatus("/api/v1/admin/onboardings/" + id)
	require.Equal(t, "completed", done["status"], done)
	require.Equal(t, failed["maas_system_id"], done["maas_system_id"])

	// A batch of two, each row its own child execution.
	var nodes []any
	for i := 1; i <= 2; i++ {
		host, ip := fmt.Sprintf("gpu-b%d", i), fmt.Sprintf("10.10.2.%d", i)
		l.hardware(host, ip, fmt.Sprintf("52:54:00:20:00:%02x", i))
		nodes = append(nodes, map[string]any{"hostname": host, "ipmi_ip": ip})
	}
	b := l.admin("POST", "/api/v1/admin/onboardings/batch", map[string]any{
		"site_id": f.SiteID, "profile_id": f.ProfileID, "sku_id": f.SKUID, "nodes": nodes}, http.StatusAccepted)
	b = l.waitStatus("/api/v1/admin/onboarding-batches/" + b["id"].(string))
	require.Equal(t, "completed", b["status"], b)
	require.Equal(t, map[string]any{"completed": 2.0}, b["counts"])
	// The batch's record is written by its last state, an instant before
	// its execution ends.
	require.Eventually(t, func() bool {
		return len(l.engine.ListExecutions(l.machines["maasflow-dev-batch-onboarding"], asl.StatusSucceeded)) > 0
	}, terminalWait, 50*time.Millisecond, "the batch's execution succeeded")

	// A reconcile run started through the API. The schedule's run may be
	// under way, begun before the batch's nodes were active: the request
	// then joins it (joined: true), so ask again once that run has ended.
	deadline := time.Now().Add(terminalWait)
	for {
		run := l.admin("POST", "/api/v1/admin/reconciliation/run", nil, http.StatusAccepted)
		var last map[string]any
		for {
			st := l.admin("GET", "/api/v1/admin/reconciliation/status", nil, http.StatusOK)
			if cur, ok := st["last"].(map[string]any); ok && cur["id"] == run["id"] {
				last = cur
				break
			}
			require.True(t, time.Now().Before(deadline), "reconcile run %v did not end: %v", run["id"], st)
			time.Sleep(100 * time.Millisecond)
		}
		require.Equal(t, "succeeded", last["status"], last)
		if run["joined"] == true {
			continue
		}
		require.EqualValues(t, 4, last["nodes_checked"], "every onboarded node checked")
		break
	}

	// A full decommission of the first node.
	d := l.admin("POST", "/api/v1/admin/nodes/"+first["node_id"].(string)+"/decommission",
		map[string]any{"mode": "full", "reason": "end of life"}, http.StatusAccepted)
	d = l.waitStatus("/api/v1/admin/decommissions/" + d["id"].(string))
	require.Equal(t, "completed", d["status"], "%v\n%s", d, l.functionLogs())
	// FinishDecommission writes the record, then puts the event: the
	// record can read completed an instant before the event is put.
	require.Eventually(t, func() bool { return l.published("node.decommission.completed") },
		terminalWait, 50*time.Millisecond, "node.decommission.completed put to EventBridge")
	l.requireClean()
	l.requireGrantsUsed()
}
