package localstack_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The probe checks, over the site's own path and with the real client, that
// the region has every script the site's active profiles name: the
// simulator's missing_script fault makes it unhealthy, naming the script,
// until the region has it again.
func TestProbeNamesTheProfilesScriptsTheRegionLacks(t *testing.T) {
	s, site := startBenchStack(t, t.TempDir())
	mustAdmin(t, s, "PATCH", "/api/v1/admin/maas-sites/"+site.site+"/profiles/"+site.profile, map[string]any{
		"commissioning_scripts": []string{"firmware-update"}, "testing_scripts": []string{"gpu-burn"},
	}, http.StatusOK)
	probe := "/api/v1/admin/maas-sites/" + site.site + "/probe"
	require.Equal(t, true, mustAdmin(t, s, "POST", probe, nil, http.StatusOK)["healthy"], "the simulator has both scripts")

	s.Sim.SetMissingScripts([]string{"gpu-burn"})
	bad := mustAdmin(t, s, "POST", probe, nil, http.StatusOK)
	assert.Equal(t, false, bad["healthy"])
	assert.Equal(t, []any{"gpu-burn"}, bad["missing_scripts"])
	assert.Contains(t, bad["error"], "gpu-burn")

	s.Sim.SetMissingScripts(nil)
	assert.Equal(t, true, mustAdmin(t, s, "POST", probe, nil, http.StatusOK)["healthy"])
}
