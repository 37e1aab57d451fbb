package api

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSKUDiskBusIsStoredAndValidated(t *testing.T) {
	h := newHarness(t)
	h.mustAdmin(http.StatusCreated, "POST", "/api/v1/admin/skus", map[string]any{
		"id": "h100-8x", "gpu_model": "H100", "gpus_total": 8, "disk_count": 2, "min_disk_bytes": 3 << 40, "disk_bus": "nvme",
	})
	got := h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/skus/h100-8x", nil)
	assert.Equal(t, "nvme", got["disk_bus"])

	for field, extra := range map[string]map[string]any{
		"disk_bus":   {"disk_count": 1, "disk_bus": "scsi"},
		"disk_count": {"disk_bus": "sata"},
	} {
		body := map[string]any{"id": "s1", "gpu_model": "H100", "gpus_total": 8}
		for k, v := range extra {
			body[k] = v
		}
		r := h.admin("POST", "/api/v1/admin/skus", body)
		require.Equal(t, http.StatusBadRequest, r.status, "%v", extra)
		assert.Contains(t, string(r.body), field, "the error names the field")
	}
	assert.Equal(t, http.StatusNotFound, h.admin("GET", "/api/v1/admin/skus/s1", nil).status, "nothing written")
}
