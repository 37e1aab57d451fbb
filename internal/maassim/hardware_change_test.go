package maassim

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A host changed after onboarding shows the change only once it is
// commissioned again: MAAS records hardware from commissioning.
func TestChangedHostShowsAtNextCommissioning(t *testing.T) {
	h := newHarness(t)
	sid := h.gpuHost(t, 1, Hardware{})
	require.Len(t, h.devices(t, sid, url.Values{"hardware_type": {"gpu"}}), 8)

	r := h.control(t, http.MethodPut, "/_sim/hardware/gpu-1/faults", `{"missing_gpus": 2, "other_gpu_model": "h100-pcie"}`)
	require.Equal(t, http.StatusOK, r.code, "body: %s", r.body)
	assert.EqualValues(t, 2, r.obj(t)["remaining_faults"].(map[string]any)["missing_gpus"])
	assert.Len(t, h.devices(t, sid, url.Values{"hardware_type": {"gpu"}}), 8, "nothing changes before commissioning")

	r = h.call(t, http.MethodPost, "machines/"+sid+"/", "commission", url.Values{"skip_bmc_config": {"1"}})
	require.Equal(t, http.StatusOK, r.code, "body: %s", r.body)
	h.clock.Advance(3 * time.Minute)
	gpus := h.devices(t, sid, url.Values{"hardware_type": {"gpu"}})
	require.Len(t, gpus, 6)
	assert.Equal(t, "GH100 [H100 PCIe]", gpus[0]["product_name"])

	require.NoError(t, h.sim.SetFaults("gpu-1", Faults{}))
	r = h.call(t, http.MethodPost, "machines/"+sid+"/", "commission", url.Values{"skip_bmc_config": {"1"}})
	require.Equal(t, http.StatusOK, r.code, "body: %s", r.body)
	h.clock.Advance(3 * time.Minute)
	assert.Len(t, h.devices(t, sid, url.Values{"product_name": {"GH100 [H100 SXM5 80GB]"}}), 8, "repaired")
}

func TestSetFaultsRefusals(t *testing.T) {
	h := newHarness(t)
	h.gpuHost(t, 1, Hardware{})
	r := h.control(t, http.MethodPut, "/_sim/hardware/gpu-1/faults", `{"missing_nics": 3}`)
	assert.Equal(t, http.StatusBadRequest, r.code)
	assert.Contains(t, string(r.body), "faults.missing_nics")
	r = h.control(t, http.MethodPut, "/_sim/hardware/gpu-1/faults", `{"missing_gpu": 1}`)
	assert.Equal(t, http.StatusBadRequest, r.code, "a misspelt fault fails loudly")
	r = h.control(t, http.MethodPut, "/_sim/hardware/gpu-1/faults", `{"erase_failures": -1}`)
	assert.Equal(t, http.StatusBadRequest, r.code)
	r = h.control(t, http.MethodPut, "/_sim/hardware/nosuch/faults", `{}`)
	assert.Equal(t, http.StatusNotFound, r.code)
	r = h.control(t, http.MethodPost, "/_sim/hardware/gpu-1/faults", `{}`)
	assert.Equal(t, http.StatusMethodNotAllowed, r.code)
}
