package e2e

import (
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// refusedEnrollment plays the node agent trying its token twice and checks
// both tries are refused for reason, without echoing the token.
func refusedEnrollment(t *testing.T, e *env, b bundle, reason string) {
	t.Helper()
	for range 2 {
		status, body := e.enroll(b.NodeID, b.Token)
		require.Equal(t, http.StatusUnauthorized, status, body)
		assert.Contains(t, body, reason)
		assert.NotContains(t, body, b.Token)
	}
}

// TestEnrollmentAfterCancelIsRefused: a cancelled onboarding's token no
// longer enrolls its node, and the server can be onboarded again.
func TestEnrollmentAfterCancelIsRefused(t *testing.T) {
	t.Parallel()
	e := startStack(t)
	f := e.setup(nil, map[string]any{"enrollment_timeout_seconds": 86400})
	e.hardware("gpu-h1", "10.10.9.11", "52:54:00:00:91:01", map[string]any{"never_enrolls": true})
	id := e.onboard(f, "gpu-h1", "10.10.9.11")
	e.waitStage(id, "wait_enrollment")
	b := e.nodeBundle("gpu-h1")
	e.cancel(id, "wrong rack", "wait_enrollment")

	refusedEnrollment(t, e, b, "workflow_closed")
	assert.NotEqual(t, "active", e.node(b.NodeID)["status"], "no node left active")
	detail := e.onboarding(id)
	refusals := 0
	for _, r := range detail["timeline"].([]any) {
		if r.(map[string]any)["outcome"] == "refused" {
			refusals++
		}
	}
	assert.Equal(t, 1, refusals, "the refusal is on the timeline once")
	// The host is not left blocked by an active node.
	again := e.onboard(f, "gpu-h1", "10.10.9.11")
	assert.NotEqual(t, id, again)
}

// TestEnrollmentAfterTimeoutIsRefused: once the enrollment wait timed out
// (manual intervention), the run's token no longer enrolls the node.
func TestEnrollmentAfterTimeoutIsRefused(t *testing.T) {
	t.Parallel()
	e := startStack(t)
	f := e.setup(nil, map[string]any{"enrollment_timeout_seconds": 60})
	e.hardware("gpu-h2", "10.10.9.12", "52:54:00:00:91:02", map[string]any{"never_enrolls": true})
	id := e.onboard(f, "gpu-h2", "10.10.9.12")
	b := e.nodeBundle("gpu-h2")
	o := e.waitTerminal(id)
	require.Equal(t, "manual_intervention", o["status"], o["error"])
	refusedEnrollment(t, e, b, "workflow_closed")
	assert.NotEqual(t, "active", e.node(b.NodeID)["status"], "no node left active")
}

// TestOneServerTwoHostnames reproduces, over HTTP, a defect a security review found: two
// parallel onboardings of one BMC under two host names; one runs.
func TestOneServerTwoHostnames(t *testing.T) {
	t.Parallel()
	e := startStack(t)
	f := e.setup(nil, map[string]any{"enrollment_timeout_seconds": 86400})
	e.hardware("gpu-h3", "10.10.9.13", "52:54:00:00:91:03", map[string]any{"never_enrolls": true})
	statuses := make([]int, 2)
	var wg sync.WaitGroup
	for i, host := range []string{"gpu-h3", "gpu-h3-alias"} {
		wg.Go(func() {
			statuses[i], _ = e.raw("POST", e.stack.APIURL+"/api/v1/admin/onboardings", e.stack.AdminToken, map[string]any{
				"site_id": f.SiteID, "profile_id": f.ProfileID, "sku_id": f.SKUID, "hostname": host, "ipmi_ip": "10.10.9.13",
			})
		})
	}
	wg.Wait()
	assert.ElementsMatch(t, []int{http.StatusAccepted, http.StatusConflict}, statuses)
}
