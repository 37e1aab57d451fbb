package maassim

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPowerParametersFollowEveryChange reads machines/?op=power_parameters
// after each kind of change: each machine's encoded entry is kept between
// changes, and must never be stale (MAAS reads the parameters afresh on
// every call).
func TestPowerParametersFollowEveryChange(t *testing.T) {
	h := newHarness(t)
	all := func() map[string]map[string]string {
		t.Helper()
		r := h.call(t, http.MethodGet, "machines/", "power_parameters", nil)
		require.Equal(t, http.StatusOK, r.code, "body: %s", r.body)
		var pp map[string]map[string]string
		r.json(t, &pp)
		return pp
	}

	a := h.create(t, "gpu-a", h.host(t, 1, Faults{}), false)
	assert.Equal(t, "10.10.0.1", all()[a]["power_address"])
	assert.Equal(t, "10.10.0.1", all()[a]["power_address"], "asked again, unchanged")

	b := h.create(t, "gpu-b", h.host(t, 2, Faults{}), false)
	pp := all()
	assert.Len(t, pp, 2, "a new machine is listed")
	assert.Equal(t, "10.10.0.2", pp[b]["power_address"])

	r := h.call(t, http.MethodPut, "machines/"+a+"/", "", url.Values{"power_parameters_power_address": {"10.10.0.9"}})
	require.Equal(t, http.StatusOK, r.code, "body: %s", r.body)
	assert.Equal(t, "10.10.0.9", all()[a]["power_address"], "an edit is seen")

	// Commissioning without skip_bmc_config has MAAS set its own IPMI
	// user (maas-behaviour §7).
	r = h.call(t, http.MethodPost, "machines/"+b+"/", "commission", nil)
	require.Equal(t, http.StatusOK, r.code, "body: %s", r.body)
	assert.Equal(t, "admin", all()[b]["power_user"])
	h.clock.Advance(3 * time.Minute)
	require.Equal(t, "Ready", h.statusName(t, b))
	assert.Equal(t, "maas", all()[b]["power_user"], "commissioning's BMC user is seen")

	r = h.call(t, http.MethodDelete, "machines/"+a+"/", "", nil)
	require.Equal(t, http.StatusNoContent, r.code, "body: %s", r.body)
	pp = all()
	assert.NotContains(t, pp, a, "a deleted machine is gone")
	assert.Contains(t, pp, b)
}
