package localstack_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/internal/localstack"
)

// A node agent keeps no idle connection to the admin API once enrolled, as
// a real node would not: with more agents alive than the API's connection
// limit, onboardings one after the other all complete, each at its agent's
// first heartbeat on the node listener. (An agent that kept its API
// connection open while it heartbeats made the later nodes' enrollments
// wait for a free connection until their enrollment timed out.)
func TestAgentsDoNotHoldTheAPIsConnections(t *testing.T) {
	limits := localstack.DefaultHTTPLimits
	limits.MaxConns = 6
	s, site := startSiteStack(t, localstack.Config{
		Listen: "127.0.0.1:0", SimListen: "127.0.0.1:0", TimeScale: benchTimeScale, DataDir: t.TempDir(), HTTP: limits,
	})
	hosts := addHosts(t, s, 12)
	for i, h := range hosts {
		o := mustAdmin(t, s, "POST", "/api/v1/admin/onboardings", map[string]any{
			"site_id": site.site, "profile_id": site.profile, "sku_id": site.sku, "hostname": h, "ipmi_ip": benchBMC(i),
		}, http.StatusAccepted)
		id := o["id"].(string)
		require.Eventually(t, func() bool {
			status, got := adminCall(t, s, "GET", "/api/v1/admin/onboardings/"+id, nil)
			if status == http.StatusOK && got["status"] != "running" && got["status"] != "pending" {
				o = got
				return true
			}
			return false
		}, 60*time.Second, 20*time.Millisecond, "onboarding of %s ends", h)
		require.Equal(t, "completed", o["status"], "onboarding %d of %d (%s): %v", i+1, len(hosts), h, o["error"])
	}
}
