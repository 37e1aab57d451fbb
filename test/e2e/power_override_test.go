package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A host whose BMC user differs from the site's cannot be powered with the
// site's credentials; an override for it (by hostname, or by BMC address)
// onboards it, and the override is never echoed or logged.
func TestPowerOverrideOnboardsAHostTheSiteCredentialCannot(t *testing.T) {
	t.Parallel()
	e := startStack(t)
	f := e.setup(nil, nil)
	const pass = "own-bmc-Pa55-e2e"
	for _, h := range []struct{ name, bmc, mac string }{
		{"gpu-po1", "10.10.24.71", "52:54:00:24:71:01"},
		{"gpu-po2", "10.10.24.72", "52:54:00:24:72:01"},
		{"gpu-po3", "10.10.24.73", "52:54:00:24:73:01"},
	} {
		e.sim("POST", "/_sim/hardware", map[string]any{"hostname": h.name, "bmc_ip": h.bmc, "pxe_mac": h.mac,
			"bmc_username": "vendor-admin", "bmc_password": pass}, http.StatusCreated)
	}

	without := e.waitTerminal(e.onboard(f, "gpu-po1", "10.10.24.71"))
	require.NotEqual(t, "completed", without["status"], "the site's BMC credential cannot power this host: %v", without)

	site := "/api/v1/admin/maas-sites/" + f.SiteID + "/power-overrides"
	byHost := e.admin("POST", site, map[string]any{"hostname": "gpu-po2", "bmc_username": "vendor-admin", "bmc_password": pass}, http.StatusOK)
	assert.Equal(t, map[string]any{"site_id": f.SiteID, "hostname": "gpu-po2", "set": true}, byHost, "nothing secret echoed")
	e.admin("POST", site, map[string]any{"bmc_address": "10.10.24.73", "bmc_username": "vendor-admin", "bmc_password": pass}, http.StatusOK)

	for _, host := range []struct{ name, bmc, says string }{
		{"gpu-po2", "10.10.24.72", "the override for host gpu-po2"},
		{"gpu-po3", "10.10.24.73", "the override for BMC 10.10.24.73"},
	} {
		id := e.onboard(f, host.name, host.bmc)
		o := e.waitTerminal(id)
		require.Equal(t, "completed", o["status"], "%s: %v", host.name, o["error"])
		notes := strings.Join(e.timelineNotes(id, "discovery"), "\n")
		assert.Contains(t, notes, host.says)
	}
	assert.NotContains(t, e.logs.String(), pass, "the override is never logged")
	assert.True(t, e.siteAudited("site.power_override.write", f.SiteID))
}

// siteAudited reports whether a successful audit entry of action targets
// the site.
func (e *env) siteAudited(action, siteID string) bool {
	e.t.Helper()
	for _, row := range e.audit(100)["items"].([]any) {
		m := row.(map[string]any)
		if m["action"] == action && m["target"] == "site:"+siteID && m["result"] == "success" {
			return true
		}
	}
	return false
}
