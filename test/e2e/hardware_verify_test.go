package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/events"
)

// hwSKU adds an SKU that asks for 8 H100s and three NICs of 100 Gb/s, and
// points f at it.
func (e *env) hwSKU(f *fixture, extra map[string]any) {
	e.t.Helper()
	f.SKUID = "h100-8x-3nic-" + f.SiteID[:8]
	body := map[string]any{"id": f.SKUID, "gpu_model": "H100", "gpus_total": 8, "nic_count": 3, "min_nic_speed_mbps": 100000}
	for k, v := range extra {
		body[k] = v
	}
	e.admin("POST", "/api/v1/admin/skus", body, http.StatusCreated)
}

// hwHost adds a host with two extra NICs (three in all) and faults.
func (e *env) hwHost(hostname, bmcIP, mac string, extra []string, faults map[string]any) {
	e.t.Helper()
	e.sim("POST", "/_sim/hardware", map[string]any{
		"hostname": hostname, "bmc_ip": bmcIP, "pxe_mac": mac, "extra_macs": extra, "faults": faults,
	}, http.StatusCreated)
}

// diffFields lists the fields of the onboarding's hardware_diff.
func diffFields(o map[string]any) []string {
	var out []string
	diff, _ := o["hardware_diff"].([]any)
	for _, d := range diff {
		out = append(out, d.(map[string]any)["field"].(string))
	}
	return out
}

// manualEventDiff waits for the onboarding's manual_intervention_required
// event and returns its hardware_diff fields.
func (e *env) manualEventDiff(id string) []string {
	e.t.Helper()
	deadline := time.Now().Add(terminalWait)
	for {
		envs, err := e.stack.Bus.ReadAll()
		require.NoError(e.t, err)
		for _, ev := range envs {
			if ev.DetailType != events.OnboardingManualInterventionRequired {
				continue
			}
			var d events.OnboardingDetail
			require.NoError(e.t, json.Unmarshal(ev.Detail, &d))
			if d.OnboardingID == id {
				var fields []string
				for _, m := range d.HardwareDiff {
					fields = append(fields, m.Field)
				}
				return fields
			}
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("no manual_intervention_required event for %s", id)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestHostWithTheSKUsHardwareCompletes(t *testing.T) {
	t.Parallel()
	e := startStack(t)
	f := e.setup(nil, nil)
	e.hwSKU(&f, map[string]any{"min_memory_mib": 262144, "min_cpu_cores": 32})
	e.hwHost("gpu-hv1", "10.10.24.11", "52:54:00:24:01:01", []string{"52:54:00:24:01:02", "52:54:00:24:01:03"}, nil)

	o := e.waitTerminal(e.onboard(f, "gpu-hv1", "10.10.24.11"))

	require.Equal(t, "completed", o["status"], o)
	assert.Equal(t, "ok", stageOutcomes(o)["verify_hardware"])
	assert.Empty(t, o["hardware_diff"])
	n := e.node(o["node_id"].(string))
	built, ok := n["as_built"].(map[string]any)
	require.True(t, ok, "the node keeps its as-built inventory: %v", n)
	gpus := built["gpus"].([]any)
	require.Len(t, gpus, 8)
	assert.Equal(t, "0000:18:00.0", gpus[0].(map[string]any)["pci_address"])
	assert.Contains(t, gpus[0].(map[string]any), "numa_node")
	nics := built["nics"].([]any)
	require.Len(t, nics, 3)
	macs := map[string]bool{}
	for _, nic := range nics {
		m := nic.(map[string]any)
		assert.NotEmpty(t, m["pci_address"])
		assert.NotEmpty(t, m["name"])
		macs[m["mac_address"].(string)] = true
	}
	assert.True(t, macs["52:54:00:24:01:03"], "NIC PCI address → MAC → name: %v", nics)
	assert.NotEmpty(t, built["disks"])
	assert.NotEmpty(t, n["as_built_at"])
	assert.Equal(t, 1, e.simCalls()["GET /MAAS/api/2.0/nodes/{system_id}/devices/"], "one node devices read")
}

func TestHardwareMismatchStopsBeforeDeploy(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		faults map[string]any
		fields []string
	}{
		{name: "fewer GPUs", faults: map[string]any{"missing_gpus": 2}, fields: []string{"gpus_total"}},
		{name: "another GPU model", faults: map[string]any{"other_gpu_model": "a100-sxm4"}, fields: []string{"gpu_model"}},
		{name: "a missing NIC", faults: map[string]any{"missing_nics": 1}, fields: []string{"nic_count"}},
		{name: "a slow link", faults: map[string]any{"slow_link_mbps": 25000}, fields: []string{"nic_count"}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := startStack(t)
			f := e.setup(nil, nil)
			e.hwSKU(&f, nil)
			mac := func(k int) string { return fmt.Sprintf("52:54:00:24:1%d:0%d", i, k) }
			e.hwHost("gpu-hm1", "10.10.24.21", mac(1), []string{mac(2), mac(3)}, tc.faults)

			id := e.onboard(f, "gpu-hm1", "10.10.24.21")
			o := e.waitTerminal(id)

			require.Equal(t, "manual_intervention", o["status"], o)
			assert.Equal(t, "verify_hardware", o["stage"])
			assert.Equal(t, "HardwareMismatchError", errorCode(o))
			assert.Equal(t, tc.fields, diffFields(o), "designed vs built on the record: %v", o["hardware_diff"])
			assert.Equal(t, tc.fields, e.manualEventDiff(id), "and on the event")
			assert.Contains(t, o["allowed_operations"], "retry")
			calls := e.simCalls()
			assert.Zero(t, callsWithOp(calls, "deploy"), "nothing deployed")
			assert.Zero(t, callsWithOp(calls, "set_storage_layout"), "storage untouched")
			var diag bool
			for _, r := range o["timeline"].([]any) {
				row := r.(map[string]any)
				if row["kind"] == "diagnostic" && row["source"] == "hardware" {
					diag = true
				}
			}
			assert.True(t, diag, "the diff is on the timeline")
		})
	}
}

// A retry after the hardware was repaired commissions the machine again
// (MAAS records hardware only when it commissions), verifies and goes on.
func TestRetryAfterHardwareRepairCompletes(t *testing.T) {
	t.Parallel()
	e := startStack(t)
	f := e.setup(nil, nil)
	e.hwSKU(&f, nil)
	e.hwHost("gpu-hr1", "10.10.24.31", "52:54:00:24:31:01", []string{"52:54:00:24:31:02", "52:54:00:24:31:03"}, map[string]any{"missing_gpus": 1})
	id := e.onboard(f, "gpu-hr1", "10.10.24.31")
	first := e.waitTerminal(id)
	require.Equal(t, "manual_intervention", first["status"], first)

	e.sim("PUT", "/_sim/hardware/gpu-hr1/faults", map[string]any{}, http.StatusOK)
	e.recoverOnboarding(id, domain.OpRetry, map[string]any{"reason": "reseated GPU 8"})
	o := e.waitTerminal(id)

	require.Equal(t, "completed", o["status"], "error: %v", o["error"])
	assert.Empty(t, o["hardware_diff"], "the diff is cleared once the hardware matches")
	assert.Equal(t, 2, callsWithOp(e.simCalls(), "commission"), "commissioned again before verifying")
	assert.Len(t, e.node(o["node_id"].(string))["as_built"].(map[string]any)["gpus"], 8)
}

// A machine that lost a GPU while deployed is caught when it is reimaged:
// the reimage commissions it again and its verification stops it.
func TestReimageOfAChangedMachineIsCaught(t *testing.T) {
	t.Parallel()
	e := startStack(t)
	f := e.setup(nil, nil)
	e.hwSKU(&f, nil)
	e.hwHost("gpu-hc1", "10.10.24.41", "52:54:00:24:41:01", []string{"52:54:00:24:41:02", "52:54:00:24:41:03"}, nil)
	o := e.waitTerminal(e.onboard(f, "gpu-hc1", "10.10.24.41"))
	require.Equal(t, "completed", o["status"], o)
	nodeID := o["node_id"].(string)

	e.sim("PUT", "/_sim/hardware/gpu-hc1/faults", map[string]any{"missing_gpus": 1}, http.StatusOK)
	d := e.waitDecommission(e.decommission(nodeID, "reimage"))

	obID, _ := d["onboarding_id"].(string)
	require.NotEmpty(t, obID, d)
	re := e.waitTerminal(obID)
	require.Equal(t, "manual_intervention", re["status"], re)
	assert.Equal(t, "verify_hardware", re["stage"])
	assert.Equal(t, []string{"gpus_total"}, diffFields(re))
	assert.NotEqual(t, "completed", d["status"], "the reimage did not complete: %v", d)
	assert.Equal(t, 1, callsWithOp(e.simCalls(), "deploy"), "only the first onboarding deployed")
}

// An SKU bound to a region onboards only at a site of that region: the
// request is refused naming sku_id until the site says it is in it.
func TestSKURegionMustMatchTheSite(t *testing.T) {
	t.Parallel()
	e := startStack(t)
	f := e.setup(nil, nil)
	e.hwSKU(&f, map[string]any{"region": "fra-2"})
	e.hwHost("gpu-hg1", "10.10.24.51", "52:54:00:24:51:01", []string{"52:54:00:24:51:02", "52:54:00:24:51:03"}, nil)
	body := map[string]any{"site_id": f.SiteID, "profile_id": f.ProfileID, "sku_id": f.SKUID, "hostname": "gpu-hg1", "ipmi_ip": "10.10.24.51"}

	refused, _ := e.admin("POST", "/api/v1/admin/onboardings", body, http.StatusUnprocessableEntity)["error"].(map[string]any)
	assert.Equal(t, "sku_id", refused["field"], refused)
	assert.Contains(t, refused["message"], "fra-2")
	assert.Zero(t, mutatingCalls(e.simCalls()), "nothing reached MAAS")

	e.admin("PATCH", "/api/v1/admin/maas-sites/"+f.SiteID, map[string]any{"region": "fra-2"}, http.StatusOK)
	o := e.waitTerminal(e.onboard(f, "gpu-hg1", "10.10.24.51"))

	require.Equal(t, "completed", o["status"], o)
	assert.Equal(t, "fra-2", e.node(o["node_id"].(string))["as_built"].(map[string]any)["region"])
}
