package localstack_test

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/internal/localstack"
	"github.com/maasflow/maasflow/internal/maassim"
	"github.com/maasflow/maasflow/shared/nodeid"
)

// agentCertTTL is the node certificates' life in the agent tests: an hour
// of simulated time is six seconds of wall time at benchTimeScale, so the
// agents renew every four seconds and an expired certificate is soon seen.
const agentCertTTL = time.Hour

// agentWait bounds what an agent test waits for, in wall time.
const agentWait = 90 * time.Second

// lockedBuffer is a log sink safe for the stack's goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// secretSeen gathers the credentials the simulated nodes hold, as the
// test sees them, for the canary checks at the end.
type secretSeen map[string]string

func (c secretSeen) note(t *testing.T, s *localstack.Stack, host string) {
	t.Helper()
	raw, err := s.Sim.NodeBootstrap(host)
	require.NoError(t, err)
	c[host+" enrollment token"] = bundleToken(t, raw)
	files, err := s.Sim.NodeFiles(host)
	require.NoError(t, err)
	if files.RecoveryToken != "" {
		c[host+" recovery token "+files.RecoveryToken[:6]] = files.RecoveryToken
	}
	if len(files.KeyPEM) > 100 {
		c[host+" key "+files.KeyPEM[40:46]] = files.KeyPEM[40:100]
	}
}

// TestNodeAgentIdentityEndToEnd runs the simulator's node agents against
// the local stack: each makes its key, reads its own design, enrolls with
// a CSR, completes its onboarding with its first heartbeat over mutual
// TLS and renews on time; one whose certificate expired while it was down
// recovers once with its recovery token, and the spent token is refused
// when replayed; a retired node's agent gets no work, and a removed node's
// is refused and stops. No token or key reaches a log, an event, an
// execution history or an answer.
func TestNodeAgentIdentityEndToEnd(t *testing.T) {
	logs := &lockedBuffer{}
	s, site := startSiteStack(t, localstack.Config{
		Listen: "127.0.0.1:0", SimListen: "127.0.0.1:0", TimeScale: benchTimeScale, DataDir: t.TempDir(),
		NodeCertTTL: agentCertTTL, ReconcileInterval: -1,
		Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	// A node down past its certificate's life enrolls long before it
	// heartbeats: the enrollment wait allows a day.
	mustAdmin(t, s, "PATCH", "/api/v1/admin/maas-sites/"+site.site, map[string]any{
		"policy": map[string]any{"bootstrap": s.SiteBootstrap, "enrollment_timeout_seconds": 86400},
	}, http.StatusOK)
	hosts := map[string]maassim.Faults{
		"gpu-agent-1": {},
		"gpu-agent-2": {ExpiredCert: true, ReplaysRecoveryToken: true},
		"gpu-agent-3": {},
	}
	var answers bytes.Buffer
	nodes := map[string]string{}
	for i, host := range []string{"gpu-agent-1", "gpu-agent-2", "gpu-agent-3"} {
		bmc := benchBMC(i)
		require.NoError(t, s.Sim.AddHardware(maassim.Hardware{Hostname: host, BMCIP: bmc,
			PXEMAC: fmt.Sprintf("52:54:00:00:aa:%02x", i+1), Faults: hosts[host]}))
		o := mustAdmin(t, s, "POST", "/api/v1/admin/onboardings", map[string]any{
			"site_id": site.site, "profile_id": site.profile, "sku_id": site.sku, "hostname": host, "ipmi_ip": bmc,
		}, http.StatusAccepted)
		id, _ := o["id"].(string)
		var got map[string]any
		ok := assert.Eventually(t, func() bool {
			_, got = adminCall(t, s, "GET", "/api/v1/admin/onboardings/"+id, nil)
			nodes[host], _ = got["node_id"].(string)
			return got["status"] == "completed"
		}, agentWait, 50*time.Millisecond, "%s completes: its agent's first heartbeat is the completion gate", host)
		if !ok {
			st, err := s.Sim.NodeAgent(host)
			t.Fatalf("onboarding %v; agent %+v (%v)", got, st, err)
		}
	}
	// A host onboarded from the site's design reads that design at first
	// boot: its own effective node, with its enrollment token.
	const designed = "gpu-agent-4"
	require.NoError(t, s.Sim.AddHardware(maassim.Hardware{Hostname: designed, BMCIP: benchBMC(3), PXEMAC: "52:54:00:00:aa:04"}))
	docs := []map[string]any{{
		"name":          "site.yaml",
		"host_profiles": []any{map[string]any{"name": "gpu"}},
		"nodes":         []any{map[string]any{"hostname": designed, "bmc_address": benchBMC(3), "host_profile": "gpu"}},
	}}
	designPath := "/api/v1/admin/maas-sites/" + site.site + "/design"
	plan := mustAdmin(t, s, "POST", designPath+"/plan", map[string]any{"documents": docs}, http.StatusOK)
	applied := mustAdmin(t, s, "POST", designPath+"/apply", map[string]any{"documents": docs, "plan_hash": plan["hash"],
		"onboard": map[string]any{"profile_id": site.profile, "sku_id": site.sku}}, http.StatusOK)
	writeJSON(t, &answers, applied)
	var own maassim.AgentState
	require.Eventually(t, func() bool {
		var err error
		own, err = s.Sim.NodeAgent(designed)
		return err == nil && own.Heartbeats >= 1
	}, agentWait, 50*time.Millisecond, "the designed host's agent runs")
	assert.Equal(t, http.StatusOK, own.DesignStatus)
	assert.Equal(t, designed, own.DesignHostname, "the node read its own design")
	assert.Equal(t, http.StatusOK, own.DesignCertStatus, "and again once enrolled, with its certificate")
	// Another node's certificate reads nothing of it.
	raw, err := s.Sim.NodeBootstrap(designed)
	require.NoError(t, err)
	files, err := s.Sim.NodeFiles("gpu-agent-1")
	require.NoError(t, err)
	other, err := tls.X509KeyPair([]byte(files.CertPEM), []byte(files.KeyPEM))
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM([]byte(s.NodeCA.CertPEM())))
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: pool, Certificates: []tls.Certificate{other}, MinVersion: tls.VersionTLS12}}}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, s.NodeAPIURL+"/api/v1/nodes/"+bundleField(t, raw, "GPUAAS_NODE_ID")+"/design", nil)
	require.NoError(t, err)
	resp, err := hc.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "a node reads only its own design")
	hosts[designed] = maassim.Faults{}

	seen := secretSeen{}
	for host := range hosts {
		seen.note(t, s, host)
	}

	// The first agent renews at two thirds of each certificate's life and
	// keeps heartbeating with the renewed one.
	var first maassim.AgentState
	require.Eventually(t, func() bool {
		seen.note(t, s, "gpu-agent-1")
		var err error
		first, err = s.Sim.NodeAgent("gpu-agent-1")
		require.NoError(t, err)
		return first.Renewals >= 2 && first.Heartbeats >= 2
	}, agentWait, 50*time.Millisecond, "renewals and heartbeats")
	assert.Empty(t, first.Refusals)
	assert.Empty(t, first.Stopped)
	assert.Equal(t, http.StatusNotFound, first.DesignStatus, "the site has no design: the node's own read is answered, not refused")
	files, err = s.Sim.NodeFiles("gpu-agent-1")
	require.NoError(t, err)
	pair, err := tls.X509KeyPair([]byte(files.CertPEM), []byte(files.KeyPEM))
	require.NoError(t, err, "the certificate is over the key the node made")
	leaf := pair.Leaf
	require.NotNil(t, leaf)
	id, ok := nodeid.NodeIDOf(leaf)
	require.True(t, ok)
	assert.Equal(t, nodes["gpu-agent-1"], id)
	node := mustAdmin(t, s, "GET", "/api/v1/admin/nodes/"+id, nil, http.StatusOK)
	assert.NotEmpty(t, node["agent_seen_at"])
	writeJSON(t, &answers, node)

	// The second came up with an expired certificate: it recovered once,
	// and the spent recovery token was refused when replayed.
	var second maassim.AgentState
	require.Eventually(t, func() bool {
		seen.note(t, s, "gpu-agent-2")
		second, err = s.Sim.NodeAgent("gpu-agent-2")
		require.NoError(t, err)
		return second.Recoveries == 1 && len(second.Refusals) >= 2 && second.Heartbeats >= 1
	}, agentWait, 50*time.Millisecond, "recovery after an expired certificate")
	assert.Equal(t, []string{nodeid.CertExpired, "recovery_token_rejected"}, second.Refusals)
	assert.Empty(t, second.Stopped)

	// Retired: no runtime work, identity kept. Removed: refused, stopped.
	third := nodes["gpu-agent-3"]
	writeJSON(t, &answers, mustAdmin(t, s, "POST", "/api/v1/admin/nodes/"+third+"/retire", nil, http.StatusOK))
	var st maassim.AgentState
	require.Eventually(t, func() bool {
		st, err = s.Sim.NodeAgent("gpu-agent-3")
		require.NoError(t, err)
		return slices.Contains(st.Refusals, "node_retired")
	}, agentWait, 50*time.Millisecond, "the retired node's agent is told it gets no work")
	writeJSON(t, &answers, mustAdmin(t, s, "POST", "/api/v1/admin/nodes/"+third+"/remove", nil, http.StatusOK))
	require.Eventually(t, func() bool {
		st, err = s.Sim.NodeAgent("gpu-agent-3")
		require.NoError(t, err)
		return st.Stopped != ""
	}, agentWait, 50*time.Millisecond, "the removed node's agent stops")
	assert.Equal(t, "node_removed", st.Refusals[len(st.Refusals)-1], "refused as removed: %v", st.Refusals)
	assert.Contains(t, st.Stopped, "node_removed")

	// Canaries.
	events, err := s.Bus.ReadAll()
	require.NoError(t, err)
	writeJSON(t, &answers, events)
	arn := s.Engine.StateMachineARN("onboarding")
	var history bytes.Buffer
	for _, ex := range s.Engine.ListExecutions(arn, "") {
		h, err := s.Engine.History(ex.ExecutionARN)
		require.NoError(t, err)
		writeJSON(t, &history, h)
	}
	require.NotEmpty(t, seen)
	for name, secret := range seen {
		require.NotEmpty(t, secret, name)
		assert.NotContains(t, logs.String(), secret, "%s in a log", name)
		assert.NotContains(t, answers.String(), secret, "%s in an answer or an event", name)
		assert.NotContains(t, history.String(), secret, "%s in an execution history", name)
	}
	assert.Contains(t, logs.String(), "node agent refused", "the refusals are logged (by code)")
}

func writeJSON(t *testing.T, b *bytes.Buffer, v any) {
	t.Helper()
	require.NoError(t, json.NewEncoder(b).Encode(v))
}
