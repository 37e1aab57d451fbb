package localstack_test

import (
	"crypto/tls"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/internal/localstack"
	"github.com/maasflow/maasflow/internal/maassim"
	"github.com/maasflow/maasflow/shared/enroll"
	"github.com/maasflow/maasflow/shared/enroll/enrolltest"
	"github.com/maasflow/maasflow/shared/nodeid"
)

// TestFirstBootScriptEnrollsOnTheLocalStack runs the first-boot payload
// maasflow rendered for a deployed host, as cloud-init would (bash,
// python3, openssl and curl in a temporary node root), against the local
// stack: the node bootstrap makes the key, enrolls with a CSR and the
// token on the API, installs the (stub) agent package and heartbeats over
// mutual TLS on the node listener, which completes the onboarding. The
// host's simulated agent stays silent (never_enrolls).
func TestFirstBootScriptEnrollsOnTheLocalStack(t *testing.T) {
	s, site := startSiteStack(t, localstack.Config{
		Listen: "127.0.0.1:0", SimListen: "127.0.0.1:0", TimeScale: benchTimeScale, DataDir: t.TempDir(), ReconcileInterval: -1,
	})
	mustAdmin(t, s, "PATCH", "/api/v1/admin/maas-sites/"+site.site, map[string]any{
		"policy": map[string]any{"bootstrap": s.SiteBootstrap, "enrollment_timeout_seconds": 86400},
	}, http.StatusOK)
	const host = "gpu-firstboot"
	require.NoError(t, s.Sim.AddHardware(maassim.Hardware{Hostname: host, BMCIP: benchBMC(0), PXEMAC: "52:54:00:00:bb:01",
		Faults: maassim.Faults{NeverEnrolls: true}}))
	o := mustAdmin(t, s, "POST", "/api/v1/admin/onboardings", map[string]any{
		"site_id": site.site, "profile_id": site.profile, "sku_id": site.sku, "hostname": host, "ipmi_ip": benchBMC(0),
	}, http.StatusAccepted)
	id, _ := o["id"].(string)
	var userData []byte
	require.Eventually(t, func() bool {
		var err error
		userData, err = s.Sim.NodeUserData(host)
		return err == nil
	}, agentWait, 50*time.Millisecond, "the machine is deployed with its first-boot payload")

	n := enrolltest.NewNode(t, 0, 0)
	res := n.Boot(t, userData, nil)
	require.Equal(t, 0, res[0].Status, "site bootstrap: %+v", res[0])
	require.Equal(t, 0, res[1].Status, "node bootstrap: %+v", res[1])
	assert.Equal(t, "maasflow: node-bootstrap "+enroll.BundleVersion+" ok\n", res[1].Stdout)

	got := map[string]any{}
	require.Eventually(t, func() bool {
		_, got = adminCall(t, s, "GET", "/api/v1/admin/onboardings/"+id, nil)
		return got["status"] == "completed"
	}, agentWait, 50*time.Millisecond, "the script's heartbeat completes the onboarding")
	nodeID, _ := got["node_id"].(string)
	node := mustAdmin(t, s, "GET", "/api/v1/admin/nodes/"+nodeID, nil, http.StatusOK)
	assert.NotEmpty(t, node["agent_seen_at"], "the heartbeat came over mutual TLS with the node's certificate")

	pair, err := tls.LoadX509KeyPair(n.Path(enroll.DefaultCertPath), n.Path(enroll.DefaultKeyPath))
	require.NoError(t, err, "the certificate is over the key made on the node")
	named, ok := nodeid.NodeIDOf(pair.Leaf)
	require.True(t, ok)
	assert.Equal(t, nodeID, named)
	assert.Equal(t, "-rw-------", n.Mode(t, enroll.DefaultKeyPath).String())
	assert.Equal(t, s.NodeCA.CertPEM(), readFile(t, n.Path(enroll.DefaultNodeCertCABundlePath)))
	raw, err := s.Sim.NodeBootstrap(host)
	require.NoError(t, err)
	var token, recovery, nodeURL string
	for _, line := range n.Lines(t, enroll.DefaultEnvFilePath) {
		k, v, _ := strings.Cut(line, "=")
		switch k {
		case "GPUAAS_ENROLLMENT_TOKEN":
			recovery = v
		case "GPUAAS_NODE_API_URL":
			nodeURL = v
		}
	}
	token = bundleToken(t, raw)
	assert.NotEmpty(t, recovery)
	assert.NotEqual(t, token, recovery, "the env file holds the recovery token, not the spent first-boot token")
	assert.Equal(t, s.NodeAPIURL, nodeURL)
	for i, r := range res {
		assert.NotContains(t, r.Stdout+r.Stderr, token, "runcmd %d printed the token", i)
		assert.NotContains(t, r.Stdout+r.Stderr, recovery, "runcmd %d printed the recovery token", i)
	}

	// The spent first-boot token enrolls nothing again.
	status, _ := adminCall(t, s, "POST", "/api/v1/nodes/"+nodeID+"/enroll", map[string]any{"token": token})
	assert.Equal(t, http.StatusUnauthorized, status)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

func bundleToken(t *testing.T, raw []byte) string {
	t.Helper()
	return bundleField(t, raw, "GPUAAS_ENROLLMENT_TOKEN")
}

// bundleField is a field of a node bootstrap bundle (JSON).
func bundleField(t *testing.T, raw []byte, key string) string {
	t.Helper()
	var b map[string]any
	require.NoError(t, json.Unmarshal(raw, &b))
	v, _ := b[key].(string)
	require.NotEmpty(t, v, key)
	return v
}
