package api

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSKUHardwareConstraintsAreStored(t *testing.T) {
	h := newHarness(t)
	h.mustAdmin(http.StatusCreated, "POST", "/api/v1/admin/skus", map[string]any{
		"id": "h100-8x", "gpu_model": "H100 SXM5", "gpus_total": 8, "gpu_pci_ids": []string{"10de:2330"},
		"min_memory_mib": 2000000, "min_cpu_cores": 96, "nic_count": 8, "min_nic_speed_mbps": 400000,
		"disk_count": 2, "min_disk_bytes": 3 << 40, "region": "us-east-1",
	})
	got := h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/skus/h100-8x", nil)
	assert.Equal(t, []any{"10de:2330"}, got["gpu_pci_ids"])
	assert.InDelta(t, 2000000, got["min_memory_mib"], 0)
	assert.InDelta(t, 96, got["min_cpu_cores"], 0)
	assert.InDelta(t, 8, got["nic_count"], 0)
	assert.InDelta(t, 400000, got["min_nic_speed_mbps"], 0)
	assert.InDelta(t, 2, got["disk_count"], 0)
	assert.InDelta(t, float64(int64(3)<<40), got["min_disk_bytes"], 0)
	assert.Equal(t, "us-east-1", got["region"])
}

func TestSKUHardwareConstraintsAreValidated(t *testing.T) {
	cases := []struct {
		field string
		extra map[string]any
	}{
		{"gpu_pci_ids", map[string]any{"gpu_pci_ids": []string{"10DE:2330"}}},
		{"gpu_pci_ids", map[string]any{"gpu_pci_ids": []string{"10de-2330"}}},
		{"gpu_pci_ids", map[string]any{"gpu_pci_ids": []string{"10de:2330", "10de:2330"}}},
		{"min_memory_mib", map[string]any{"min_memory_mib": -1}},
		{"min_cpu_cores", map[string]any{"min_cpu_cores": 100000}},
		{"nic_count", map[string]any{"nic_count": -2}},
		{"nic_count", map[string]any{"min_nic_speed_mbps": 100000}},
		{"min_nic_speed_mbps", map[string]any{"nic_count": 2, "min_nic_speed_mbps": 9_000_000}},
		{"disk_count", map[string]any{"min_disk_bytes": 1 << 40}},
		{"min_disk_bytes", map[string]any{"disk_count": 1, "min_disk_bytes": int64(1) << 52}},
		{"region", map[string]any{"region": "US East"}},
	}
	for _, c := range cases {
		t.Run(c.field, func(t *testing.T) {
			h := newHarness(t)
			body := map[string]any{"id": "s1", "gpu_model": "H100", "gpus_total": 8}
			for k, v := range c.extra {
				body[k] = v
			}
			r := h.admin("POST", "/api/v1/admin/skus", body)
			require.Equal(t, http.StatusBadRequest, r.status, "%v", c.extra)
			assert.Contains(t, string(r.body), c.field, "the error names the field")
			assert.Equal(t, http.StatusNotFound, h.admin("GET", "/api/v1/admin/skus/s1", nil).status, "nothing written")
		})
	}
}
