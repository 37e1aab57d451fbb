package maassim

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func (h *harness) control(t *testing.T, method, path, body string) apiResp {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, h.srv.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return apiResp{code: resp.StatusCode, body: b.Bytes(), header: resp.Header}
}

func TestControlHardware(t *testing.T) {
	h := newHarness(t)
	tests := []struct {
		name string
		body string
		code int
		part string
	}{
		{"added", `{"bmc_ip":"10.10.0.1","pxe_mac":"0C:C4:7A:00:00:01","hostname":"gpu-1","faults":{"commission_failures":1,"pxe_unlinked":true}}`,
			http.StatusCreated, `"pxe_mac":"0c:c4:7a:00:00:01"`},
		{"same BMC", `{"bmc_ip":"10.10.0.1","pxe_mac":"0c:c4:7a:00:00:02","faults":{}}`, http.StatusConflict, "bmc_ip 10.10.0.1"},
		{"same MAC", `{"bmc_ip":"10.10.0.2","pxe_mac":"0c:c4:7a:00:00:01","faults":{}}`, http.StatusConflict, "mac 0c:c4:7a:00:00:01"},
		{"no BMC", `{"pxe_mac":"0c:c4:7a:00:00:03"}`, http.StatusBadRequest, "invalid bmc_ip"},
		{"bad MAC", `{"bmc_ip":"10.10.0.3","pxe_mac":"nope"}`, http.StatusBadRequest, "invalid pxe_mac"},
		{"misspelt fault", `{"bmc_ip":"10.10.0.3","pxe_mac":"0c:c4:7a:00:00:03","faults":{"comission_failures":1}}`, http.StatusBadRequest, "comission_failures"},
		{"negative count", `{"bmc_ip":"10.10.0.3","pxe_mac":"0c:c4:7a:00:00:03","faults":{"erase_failures":-1}}`, http.StatusBadRequest, "invalid faults"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := h.control(t, http.MethodPost, "/_sim/hardware", tc.body)
			assert.Equal(t, tc.code, r.code)
			assert.Contains(t, string(r.body), tc.part)
		})
	}
	views := h.hardware(t)
	require.Len(t, views, 1)
	assert.Equal(t, 1, views[0].RemainingFaults.CommissionFailures)
	assert.Equal(t, 64, views[0].CPUCount)
	assert.Equal(t, "off", views[0].PowerState)
	assert.Equal(t, http.StatusNotFound, h.control(t, http.MethodGet, "/_sim/nothing", "").code)
	assert.Equal(t, http.StatusMethodNotAllowed, h.control(t, http.MethodDelete, "/_sim/hardware", "").code)
}

func TestControlMachines(t *testing.T) {
	tests := []struct {
		status string
		want   string
		owner  any
		after  time.Duration
		later  string
	}{
		{"", "New", nil, 0, "New"},
		{"new", "New", nil, 0, "New"},
		{"ready", "Ready", nil, 0, "Ready"},
		{"allocated", "Allocated", "admin", 0, "Allocated"},
		{"deployed", "Deployed", "admin", 0, "Deployed"},
		{"failed_deployment", "Failed deployment", "admin", 0, "Failed deployment"},
		{"broken", "Broken", nil, 0, "Broken"},
		{"failed_releasing", "Releasing failed", "admin", 0, "Releasing failed"},
		{"failed_commissioning", "Failed commissioning", nil, 0, "Failed commissioning"},
		{"failed_testing", "Failed testing", nil, 0, "Failed testing"},
		{"commissioning", "Commissioning", "admin", 3 * time.Minute, "Ready"},
		{"deploying", "Deploying", "admin", 8 * time.Minute, "Deployed"},
		{"disk_erasing", "Disk erasing", "admin", 3*time.Minute + 30*time.Second, "Ready"},
		{"releasing", "Releasing", "admin", 30 * time.Second, "Ready"},
		{"testing", "Testing", nil, time.Minute, "Ready"},
		{"entering_rescue_mode", "Entering rescue mode", nil, time.Minute, "Rescue mode"},
	}
	for _, tc := range tests {
		t.Run("status "+tc.status, func(t *testing.T) {
			h := newHarness(t)
			r := h.control(t, http.MethodPost, "/_sim/machines", `{"hostname":"gpu-1","bmc_ip":"10.10.0.1","pxe_mac":"0c:c4:7a:00:00:01","status":"`+tc.status+`"}`)
			require.Equal(t, http.StatusCreated, r.code, "body: %s", r.body)
			sid := r.obj(t)["system_id"].(string)
			m := h.machine(t, sid)
			assert.Equal(t, tc.want, m["status_name"])
			assert.Equal(t, tc.owner, m["owner"])
			h.clock.Advance(tc.after)
			assert.Equal(t, tc.later, h.statusName(t, sid))
		})
	}
	t.Run("records without a host", func(t *testing.T) {
		h := newHarness(t)
		for _, st := range []string{"testing", "deployed", "commissioning", "deploying"} {
			sid, err := h.sim.AddMachine(MachineSeed{Hostname: "x-" + st, PXEMAC: "0c:c4:7a:00:01:01", Status: st})
			require.NoError(t, err)
			m := h.machine(t, sid)
			assert.Equal(t, "unknown", m["power_state"], st)
		}
		h.clock.Advance(10 * time.Minute)
		var list []map[string]any
		h.call(t, http.MethodGet, "machines/", "", nil).json(t, &list)
		got := map[string]any{}
		for _, m := range list {
			got[m["hostname"].(string)] = m["status_name"]
		}
		assert.Equal(t, map[string]any{"x-testing": "Ready", "x-deployed": "Deployed", "x-commissioning": "New", "x-deploying": "Allocated"}, got,
			"without a BMC, power-on fails and the phase is reverted")
	})
	t.Run("bad status and mismatched MAC", func(t *testing.T) {
		h := newHarness(t)
		r := h.control(t, http.MethodPost, "/_sim/machines", `{"hostname":"x","status":"Ready!"}`)
		assert.Equal(t, http.StatusBadRequest, r.code)
		assert.Contains(t, string(r.body), "not a MAAS status name")
		h.host(t, 1, Faults{})
		r = h.control(t, http.MethodPost, "/_sim/machines", `{"hostname":"x","bmc_ip":"10.10.0.1","pxe_mac":"0c:c4:7a:00:00:99"}`)
		assert.Contains(t, string(r.body), "does not match the host at bmc_ip")
	})
	t.Run("two records with one hostname make an ambiguity", func(t *testing.T) {
		h := newHarness(t)
		_, err := h.sim.AddMachine(MachineSeed{Hostname: "gpu-dup", BMCIP: "10.10.0.1", Status: "ready"})
		require.NoError(t, err)
		_, err = h.sim.AddMachine(MachineSeed{Hostname: "gpu-dup", BMCIP: "10.10.0.2", Status: "new"})
		require.NoError(t, err)
		_, err = h.sim.AddMachine(MachineSeed{Hostname: "gpu-other", BMCIP: "10.10.0.2", Status: "new"})
		require.NoError(t, err)
		var list []map[string]any
		h.call(t, http.MethodGet, "machines/", "", url.Values{"hostname": {"gpu-dup"}}).json(t, &list)
		assert.Len(t, list, 2)
		r := h.call(t, http.MethodGet, "machines/", "power_parameters", nil)
		var pp map[string]map[string]string
		r.json(t, &pp)
		same := 0
		for _, p := range pp {
			if p["power_address"] == "10.10.0.2" {
				same++
			}
		}
		assert.Equal(t, 2, same, "two records share one BMC")
		views := h.hardware(t)
		require.Len(t, views, 2)
		assert.Len(t, views[1].SystemIDs, 2)
	})
}

func TestControlCallsAndReset(t *testing.T) {
	h := newHarness(t)
	sid := h.ready(t, "gpu-1", 1, Faults{})
	h.call(t, http.MethodGet, "machines/"+sid+"/", "", nil)
	h.callAs(t, "", http.MethodGet, "users/", "whoami", nil)
	r := h.control(t, http.MethodGet, "/_sim/calls", "")
	require.Equal(t, http.StatusOK, r.code)
	var stats CallStats
	r.json(t, &stats)
	count := func(method, path, op string) int {
		for _, c := range stats.Calls {
			if c.Method == method && c.Path == path && c.Op == op {
				return c.Count
			}
		}
		return 0
	}
	assert.Equal(t, 1, count("POST", "/MAAS/api/2.0/machines/", ""))
	assert.Equal(t, 1, count("POST", "/MAAS/api/2.0/machines/{system_id}/", "commission"))
	assert.Equal(t, 2, count("GET", "/MAAS/api/2.0/machines/{system_id}/", ""))
	assert.Equal(t, 1, count("GET", "/MAAS/api/2.0/users/", "whoami"), "refused calls count too")
	total := 0
	for _, c := range stats.Calls {
		total += c.Count
	}
	assert.Equal(t, stats.Total, total)
	assert.Equal(t, stats, h.sim.Calls())

	r = h.control(t, http.MethodPost, "/_sim/reset", "")
	assert.Equal(t, http.StatusNoContent, r.code)
	assert.Zero(t, h.sim.Calls().Total)
	var list []map[string]any
	h.call(t, http.MethodGet, "machines/", "", nil).json(t, &list)
	assert.Empty(t, list)
	assert.Empty(t, h.hardware(t))
	again := h.ready(t, "gpu-1", 1, Faults{})
	assert.Equal(t, sid, again, "reset reseeds: the same calls give the same ids")
}

func TestHostFaults(t *testing.T) {
	t.Run("testing failure", func(t *testing.T) {
		h := newHarness(t)
		sid := h.create(t, "gpu-1", h.host(t, 1, Faults{TestingFailures: 1}), true)
		h.clock.Advance(3 * time.Minute)
		m := h.machine(t, sid)
		assert.Equal(t, "Failed testing", m["status_name"])
		assert.Equal(t, "Failed", m["testing_status_name"])
	})
	t.Run("power failure on explicit power actions is a 503", func(t *testing.T) {
		h := newHarness(t)
		sid, err := h.sim.AddMachine(MachineSeed{Hostname: "gpu-1", BMCIP: "10.10.0.1", Status: "deployed"})
		require.NoError(t, err)
		require.NoError(t, h.sim.AddHardware(Hardware{BMCIP: "10.10.0.9", PXEMAC: "0c:c4:7a:00:00:09", Faults: Faults{PowerFails: true}}))
		seeded := h.machine(t, sid)
		assert.Equal(t, "on", seeded["power_state"])
		sid2, err := h.sim.AddMachine(MachineSeed{Hostname: "gpu-9", BMCIP: "10.10.0.9", Status: "deployed"})
		require.NoError(t, err)
		r := h.call(t, http.MethodPost, "machines/"+sid2+"/", "power_off", nil)
		assert.Equal(t, http.StatusServiceUnavailable, r.code)
		assert.Equal(t, "No rack controllers can access the BMC of node gpu-9", string(r.body))
		assert.Equal(t, "error", h.machine(t, sid2)["power_state"])
		r = h.call(t, http.MethodPost, "machines/"+sid2+"/", "release", nil)
		require.Equal(t, http.StatusOK, r.code)
		h.clock.Advance(5 * time.Minute)
		m := h.machine(t, sid2)
		assert.EqualValues(t, 13, m["status"])
		assert.Equal(t, "Releasing failed", m["status_name"])
		assert.Equal(t, "Node operation 'Releasing' timed out after 5 minutes.", m["error_description"])
	})
	t.Run("counts are consumed per attempt", func(t *testing.T) {
		h := newHarness(t)
		sid := h.create(t, "gpu-1", h.host(t, 1, Faults{CommissionFailures: 2}), true)
		for _, want := range []string{"Failed commissioning", "Failed commissioning", "Ready"} {
			h.clock.Advance(3 * time.Minute)
			require.Equal(t, want, h.statusName(t, sid))
			if want != "Ready" {
				require.Equal(t, http.StatusOK, h.call(t, http.MethodPost, "machines/"+sid+"/", "commission", nil).code)
			}
		}
		assert.Zero(t, h.hardware(t)[0].RemainingFaults.CommissionFailures)
	})
	t.Run("IP exhaustion is MAAS's 503", func(t *testing.T) {
		h := newHarness(t)
		for n := 1; n <= 210; n++ {
			_, err := h.sim.AddMachine(MachineSeed{Hostname: "d" + itoa(n), BMCIP: "10.11.0." + itoa(n%250) + "." + itoa(n), Status: "deployed"})
			require.NoError(t, err)
		}
		sid := h.ready(t, "gpu-1", 1, Faults{})
		r := h.call(t, http.MethodPost, "machines/"+sid+"/", "deploy", nil)
		assert.Equal(t, http.StatusServiceUnavailable, r.code)
		assert.Equal(t, sid+": Unable to allocate static IP due to address exhaustion.", string(r.body))
		assert.Equal(t, "Ready", h.statusName(t, sid), "the request is rolled back")
	})
}

func TestGlobalFaults(t *testing.T) {
	t.Run("error rate", func(t *testing.T) {
		h := newHarness(t, func(o *Options) { o.ErrorRate = 1 })
		r := h.call(t, http.MethodGet, "users/", "whoami", nil)
		assert.Equal(t, http.StatusServiceUnavailable, r.code)
		assert.Empty(t, r.header.Get("Retry-After"))
		assert.Equal(t, 1, h.sim.Calls().Total)
	})
	t.Run("a fraction of calls", func(t *testing.T) {
		h := newHarness(t, func(o *Options) { o.ErrorRate = 0.5 })
		failed := 0
		for n := 0; n < 200; n++ {
			if h.call(t, http.MethodGet, "version/", "", nil).code == http.StatusServiceUnavailable {
				failed++
			}
		}
		assert.InDelta(t, 100, failed, 30)
	})
	t.Run("slow answers wait on the clock", func(t *testing.T) {
		h := newHarness(t, func(o *Options) { o.SlowRate = 1; o.SlowDelay = 20 * time.Second })
		done := make(chan int, 1)
		go func() {
			req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, h.srv.URL+apiPrefix+"version/", nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				done <- 0
				return
			}
			_ = resp.Body.Close()
			done <- resp.StatusCode
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, h.clock.BlockUntilContext(ctx, 1))
		select {
		case <-done:
			t.Fatal("answered before the delay passed")
		default:
		}
		h.clock.Advance(20 * time.Second)
		select {
		case code := <-done:
			assert.Equal(t, http.StatusOK, code)
		case <-ctx.Done():
			t.Fatal("no answer after the delay")
		}
	})
}

func TestAddMachineErrorsAreTyped(t *testing.T) {
	h := newHarness(t)
	_, err := h.sim.AddMachine(MachineSeed{Status: "sleeping"})
	var ie *SimulatorInputError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, "status", ie.Field)
	require.NoError(t, h.sim.AddHardware(Hardware{BMCIP: "10.0.0.1", PXEMAC: "00:00:00:00:00:01"}))
	err = h.sim.AddHardware(Hardware{BMCIP: "10.0.0.1", PXEMAC: "00:00:00:00:00:02"})
	var ce *SimulatorConflictError
	require.ErrorAs(t, err, &ce)
	b, _ := json.Marshal(ce)
	assert.Contains(t, string(b), "10.0.0.1")
}
