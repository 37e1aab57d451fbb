package stack

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// target is one deployment of the template that the scenarios drive: the
// lane in this process, or a stack deployed to LocalStack
// (MAASFLOW_STACK_TARGET=localstack, deployed_test.go). The scenarios only
// call the admin API and the MAAS simulator's control API, and read
// results from the admin API, so they run the same way on both.
type target struct {
	name   string
	apiURL string // the admin API's base URL, no trailing slash
	token  string // an operator's bearer token
	sim    *simSite
	// streamURL is the stream function's URL (the StreamUrl output) and
	// streamToken a token it accepts; the stream scenario needs both.
	streamURL, streamToken string
	// wait bounds a wait for one workflow to end (wall time): a net
	// against a hung run, not a speed assertion.
	wait time.Duration
	// poll is the pause between two reads of a running workflow.
	poll time.Duration
	// problems and logs are the lane's own account of a run (denied calls,
	// events off their schema, the functions' output); a deployed stack
	// has none to give.
	problems func() []string
	logs     func() string
}

// simSite is the MAAS simulator the target's functions reach.
type simSite struct {
	maasURL    string       // the MAAS URL as the functions reach it
	controlURL string       // the simulator's base URL as this test reaches it
	client     *http.Client // for the control API
	apiKey     string
	boot       bootstrapRef
	allowHTTP  bool // MAAS over plain http on a private address
}

// driver is the lane's own driver, which its tests call through.
func (l *lane) driver() *driver {
	return &driver{t: l.t, tg: &target{name: "the lane", apiURL: l.apiURL, token: laneAdminToken, wait: terminalWait,
		poll: 100 * time.Millisecond, problems: l.problems, logs: l.functionLogs,
		sim: &simSite{maasURL: l.simURL, controlURL: l.simSrv.URL, client: l.simSrv.Client(), apiKey: l.sim.APIKey(), boot: l.boot}}}
}

// driver runs scenarios on a target.
type driver struct {
	t  *testing.T
	tg *target
	// run makes names unique on a deployed stack that keeps earlier runs'
	// records.
	run string
}

func (d *driver) explain() string {
	var b strings.Builder
	if d.tg.problems != nil {
		fmt.Fprintf(&b, "problems: %v\n", d.tg.problems())
	}
	if d.tg.logs != nil {
		b.WriteString(d.tg.logs())
	}
	return b.String()
}

func (d *driver) do(method, path string, body any) (int, map[string]any) {
	d.t.Helper()
	return d.send(method, path, body, true)
}

// send calls the admin API, as an operator when auth.
func (d *driver) send(method, path string, body any, auth bool) (int, map[string]any) {
	d.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(d.t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, d.tg.apiURL+path, rd) //nolint:noctx // a test request
	require.NoError(d.t, err)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if auth {
		req.Header.Set("Authorization", "Bearer "+d.tg.token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(d.t, err)
	defer func() { _ = resp.Body.Close() }()
	out, _ := io.ReadAll(resp.Body)
	var v map[string]any
	_ = json.Unmarshal(out, &v)
	if v == nil {
		v = map[string]any{"raw": string(out)}
	}
	return resp.StatusCode, v
}

func (d *driver) admin(method, path string, body any, want int) map[string]any {
	d.t.Helper()
	status, v := d.do(method, path, body)
	if status != want {
		d.t.Fatalf("%s %s on %s: status %d, want %d: %v\n%s", method, path, d.tg.name, status, want, v, d.explain())
	}
	return v
}

func (d *driver) simCall(method, path string, body any, want int) {
	d.t.Helper()
	b, _ := json.Marshal(body)
	req, err := http.NewRequest(method, d.tg.sim.controlURL+path, bytes.NewReader(b)) //nolint:noctx // a test request
	require.NoError(d.t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := d.tg.sim.client.Do(req)
	require.NoError(d.t, err)
	out, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.Equalf(d.t, want, resp.StatusCode, "%s %s: %s", method, path, out)
}

// waitStatus polls a record until its status leaves the running ones.
func (d *driver) waitStatus(path string) map[string]any {
	d.t.Helper()
	deadline := time.Now().Add(d.tg.wait)
	for {
		o := d.admin("GET", path, nil, http.StatusOK)
		switch o["status"] {
		case "pending", "running", "draining", "releasing":
		default:
			return o
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("%s on %s still %v at stage %v\n%s", path, d.tg.name, o["status"], o["stage"], d.explain())
		}
		time.Sleep(d.tg.poll)
	}
}

// setup registers the simulator as a probed site with credentials, a
// profile and an SKU, through the admin API.
func (d *driver) setup() fixture {
	d.t.Helper()
	s := d.tg.sim
	body := map[string]any{
		"name": "scenario-site-" + d.run, "maas_url": s.maasURL,
		"policy": map[string]any{"bootstrap": map[string]any{"url": s.boot.URL, "version": s.boot.Version, "sha256": s.boot.SHA256,
			"ca_bundle_pem": s.boot.CABundle}},
	}
	if s.allowHTTP {
		body["allow_http"] = true
	}
	site := d.admin("POST", "/api/v1/admin/maas-sites", body, http.StatusCreated)
	id := site["id"].(string)
	d.admin("POST", "/api/v1/admin/maas-sites/"+id+"/credentials", map[string]any{
		"maas_api_key": s.apiKey, "bmc_username": "maasflow", "bmc_password": "scenario-bmc-password",
	}, http.StatusOK)
	probe := d.admin("POST", "/api/v1/admin/maas-sites/"+id+"/probe", nil, http.StatusOK)
	require.Equal(d.t, true, probe["healthy"], probe)
	prof := d.admin("POST", "/api/v1/admin/maas-sites/"+id+"/profiles", map[string]any{
		"name": "gpu-jammy", "architecture": "amd64/generic", "distro_series": "jammy",
	}, http.StatusCreated)
	f := fixture{SiteID: id, ProfileID: prof["id"].(string), SKUID: "h100-" + d.run}
	d.admin("POST", "/api/v1/admin/skus", map[string]any{"id": f.SKUID, "gpu_model": "H100", "gpus_total": 8}, http.StatusCreated)
	return f
}

// onboarded adds a host to the simulator, onboards it and returns the
// ended onboarding.
func (d *driver) onboarded(f fixture, host, ip, mac string, faults map[string]any) map[string]any {
	d.t.Helper()
	d.simCall("POST", "/_sim/hardware", map[string]any{"hostname": host, "bmc_ip": ip, "pxe_mac": mac, "faults": faults}, http.StatusCreated)
	o := d.admin("POST", "/api/v1/admin/onboardings", map[string]any{
		"site_id": f.SiteID, "profile_id": f.ProfileID, "sku_id": f.SKUID, "hostname": host, "ipmi_ip": ip,
	}, http.StatusAccepted)
	return d.waitStatus("/api/v1/admin/onboardings/" + o["id"].(string))
}

// runScenarios runs, on one target and through its admin API only: an
// onboarding, a recovery (a rerun after a failed commissioning), a batch,
// a reconcile run and a full decommission, against the simulator.
func runScenarios(t *testing.T, tg *target, run string) {
	t.Helper()
	d := &driver{t: t, tg: tg, run: run}
	f := d.setup()
	host := func(n string) string { return "gpu-" + n + "-" + run }

	var first map[string]any
	t.Run("onboarding", func(t *testing.T) {
		d.t = t
		first = d.onboarded(f, host("o1"), "10.10.5.11", "52:54:00:50:01:01", nil)
		require.Equal(t, "completed", first["status"], first)
		require.NotEmpty(t, first["node_id"], first)
		node := d.admin("GET", "/api/v1/admin/nodes/"+first["node_id"].(string), nil, http.StatusOK)
		require.Equal(t, first["maas_system_id"], node["maas_system_id"], node)
	})
	require.NotNil(t, first, "the onboarding scenario failed; the others need its node")

	t.Run("recovery", func(t *testing.T) {
		d.t = t
		failed := d.onboarded(f, host("o2"), "10.10.5.12", "52:54:00:50:01:02", map[string]any{"commission_failures": 1})
		require.Contains(t, []any{"failed", "manual_intervention"}, failed["status"], failed)
		id := failed["id"].(string)
		rerun := d.admin("POST", "/api/v1/admin/onboardings/"+id+"/rerun", map[string]any{"reason": "reseated the DIMM"}, http.StatusOK)
		require.EqualValues(t, 2, rerun["attempt"])
		done := d.waitStatus("/api/v1/admin/onboardings/" + id)
		require.Equal(t, "completed", done["status"], done)
		require.Equal(t, failed["maas_system_id"], done["maas_system_id"], "the rerun completes on the same MAAS machine")
	})

	t.Run("batch", func(t *testing.T) {
		d.t = t
		var nodes []any
		for i := 1; i <= 2; i++ {
			h, ip := host(fmt.Sprintf("b%d", i)), fmt.Sprintf("10.10.6.%d", i)
			d.simCall("POST", "/_sim/hardware", map[string]any{"hostname": h, "bmc_ip": ip, "pxe_mac": fmt.Sprintf("52:54:00:60:00:%02x", i)},
				http.StatusCreated)
			nodes = append(nodes, map[string]any{"hostname": h, "ipmi_ip": ip})
		}
		b := d.admin("POST", "/api/v1/admin/onboardings/batch", map[string]any{
			"site_id": f.SiteID, "profile_id": f.ProfileID, "sku_id": f.SKUID, "nodes": nodes}, http.StatusAccepted)
		b = d.waitStatus("/api/v1/admin/onboarding-batches/" + b["id"].(string))
		require.Equal(t, "completed", b["status"], b)
		require.Equal(t, map[string]any{"completed": 2.0}, b["counts"])
	})

	t.Run("reconcile", func(t *testing.T) {
		d.t = t
		// A run the schedule began before these nodes were active may be
		// under way: the request joins it, so ask again once it has ended.
		deadline := time.Now().Add(tg.wait)
		for {
			run := d.admin("POST", "/api/v1/admin/reconciliation/run", nil, http.StatusAccepted)
			var last map[string]any
			for {
				st := d.admin("GET", "/api/v1/admin/reconciliation/status", nil, http.StatusOK)
				if cur, ok := st["last"].(map[string]any); ok && cur["id"] == run["id"] {
					last = cur
					break
				}
				require.True(t, time.Now().Before(deadline), "reconcile run %v did not end: %v", run["id"], st)
				time.Sleep(tg.poll)
			}
			require.Equal(t, "succeeded", last["status"], last)
			if run["joined"] == true {
				continue
			}
			// At least this run's four nodes: a deployed stack keeps the
			// nodes of earlier runs.
			checked, _ := last["nodes_checked"].(float64)
			require.GreaterOrEqual(t, checked, 4.0, "every onboarded node checked: %v", last)
			break
		}
	})

	t.Run("stream", func(t *testing.T) {
		d.t = t
		require.NotEmpty(t, tg.streamURL, "the stack has a StreamUrl output")
		h, ip := host("s1"), "10.10.5.21"
		d.simCall("POST", "/_sim/hardware", map[string]any{"hostname": h, "bmc_ip": ip, "pxe_mac": "52:54:00:50:02:01"}, http.StatusCreated)
		o := d.admin("POST", "/api/v1/admin/onboardings", map[string]any{
			"site_id": f.SiteID, "profile_id": f.ProfileID, "sku_id": f.SKUID, "hostname": h, "ipmi_ip": ip,
		}, http.StatusAccepted)
		followOnboarding(t, tg.streamURL, tg.streamToken, o["id"].(string), tg.wait, d.explain)
	})

	t.Run("decommission", func(t *testing.T) {
		d.t = t
		dc := d.admin("POST", "/api/v1/admin/nodes/"+first["node_id"].(string)+"/decommission",
			map[string]any{"mode": "full", "reason": "end of life"}, http.StatusAccepted)
		dc = d.waitStatus("/api/v1/admin/decommissions/" + dc["id"].(string))
		require.Equal(t, "completed", dc["status"], "%v\n%s", dc, d.explain())
	})
}
