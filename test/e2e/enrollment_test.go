package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bundle is the part of the node bootstrap bundle a node agent enrolls with.
type bundle struct {
	NodeID string `json:"GPUAAS_NODE_ID"`
	Token  string `json:"GPUAAS_ENROLLMENT_TOKEN"`
	APIURL string `json:"GPUAAS_API_URL"`
}

// nodeBundle reads the bootstrap bundle from the simulated node's disk,
// waiting until its deployment has written one.
func (e *env) nodeBundle(hostname string) bundle {
	e.t.Helper()
	base := strings.TrimSuffix(e.stack.SimURL, "/MAAS")
	deadline := time.Now().Add(terminalWait)
	for {
		status, body := e.raw("GET", base+"/_sim/hardware/"+hostname+"/bootstrap", "", nil)
		if status == http.StatusOK {
			var b bundle
			require.NoError(e.t, json.Unmarshal(body, &b))
			require.NotEmpty(e.t, b.Token)
			return b
		}
		require.Equal(e.t, http.StatusNotFound, status, string(body))
		if time.Now().After(deadline) {
			e.t.Fatalf("%s never received a bootstrap bundle", hostname)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// enroll plays the node agent: POST the token to the node-facing API.
func (e *env) enroll(nodeID, token string) (int, string) {
	e.t.Helper()
	status, body := e.raw("POST", e.stack.APIURL+"/api/v1/nodes/"+nodeID+"/enroll", "", map[string]any{"token": token})
	return status, string(body)
}

// TestEnrollmentTokens is requirements runbook's negative validation: a token works
// once, for its own node, before it expires.
func TestEnrollmentTokens(t *testing.T) {
	t.Parallel()
	e := startStack(t)
	f := e.setup(nil, map[string]any{"enrollment_timeout_seconds": 86400})
	e.hardware("gpu-t1", "10.10.2.11", "52:54:00:00:21:01", map[string]any{"never_enrolls": true})
	e.hardware("gpu-t2", "10.10.2.12", "52:54:00:00:21:02", map[string]any{"never_enrolls": true})
	idA := e.onboard(f, "gpu-t1", "10.10.2.11")
	e.onboard(f, "gpu-t2", "10.10.2.12")
	a, b := e.nodeBundle("gpu-t1"), e.nodeBundle("gpu-t2")
	require.NotEqual(t, a.NodeID, b.NodeID)
	assert.Equal(t, e.stack.APIURL, a.APIURL)

	status, body := e.enroll(b.NodeID, a.Token)
	assert.Equal(t, http.StatusUnauthorized, status, "a token for another node")
	assert.Contains(t, body, "wrong_node")

	status, body = e.enroll(a.NodeID, a.Token)
	require.Equal(t, http.StatusOK, status, body)
	assert.Contains(t, body, `"active"`)
	assert.Equal(t, "completed", e.waitTerminal(idA)["status"], "enrollment completes the onboarding")

	status, body = e.enroll(a.NodeID, a.Token)
	assert.Equal(t, http.StatusUnauthorized, status, "a replayed token")
	assert.Contains(t, body, "consumed")

	status, body = e.enroll(a.NodeID, "not-a-token")
	assert.Equal(t, http.StatusUnauthorized, status)
	assert.NotContains(t, body, a.Token)

	o := e.onboarding(idA)
	detail, err := json.Marshal(o)
	require.NoError(t, err)
	for _, tok := range []string{a.Token, b.Token} {
		assert.NotContains(t, e.logs.String(), tok, "logs")
		assert.NotContains(t, string(detail), tok, "onboarding detail and timeline")
	}
}

func TestExpiredEnrollmentTokenIsRejected(t *testing.T) {
	t.Parallel()
	e := startStack(t)
	// The token lives a minute; the deployment takes eight, so it has
	// expired by the time the node could use it.
	f := e.setup(nil, map[string]any{"token_ttl_seconds": 60, "enrollment_timeout_seconds": 86400})
	e.hardware("gpu-x1", "10.10.3.11", "52:54:00:00:31:01", map[string]any{"never_enrolls": true})
	e.onboard(f, "gpu-x1", "10.10.3.11")
	a := e.nodeBundle("gpu-x1")

	status, body := e.enroll(a.NodeID, a.Token)
	assert.Equal(t, http.StatusUnauthorized, status)
	assert.Contains(t, body, "expired")
}
