package e2e

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/nodeid"
)

// agentKey is a node's key, made on the node; only its CSR leaves.
type agentKey struct {
	key    *ecdsa.PrivateKey
	csr    string
	keyPEM string
}

func newAgentKey(t *testing.T) agentKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "node"}}, key)
	require.NoError(t, err)
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	return agentKey{key: key, csr: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})),
		keyPEM: string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}))}
}

// nodeCreds is what enrollment, renewal and recovery answer.
type nodeCreds struct {
	CertificatePEM string `json:"certificate_pem"`
	CAPEM          string `json:"ca_pem"`
	RecoveryToken  string `json:"recovery_token"`
	NodeAPIURL     string `json:"node_api_url"`
}

func (e *env) credsCall(path string, body any) nodeCreds {
	e.t.Helper()
	status, out := e.raw("POST", e.stack.APIURL+path, "", body)
	require.Equal(e.t, http.StatusOK, status, string(out))
	var c nodeCreds
	require.NoError(e.t, json.Unmarshal(out, &c))
	return c
}

// nodeClient is the agent's mutual TLS client: it trusts the node CA for
// the server and presents cert (none when certPEM is empty).
func (e *env) nodeClient(certPEM string, key agentKey) *http.Client {
	e.t.Helper()
	pool := x509.NewCertPool()
	require.True(e.t, pool.AppendCertsFromPEM([]byte(e.stack.NodeCA.CertPEM())))
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if certPEM != "" {
		pair, err := tls.X509KeyPair([]byte(certPEM), []byte(key.keyPEM))
		require.NoError(e.t, err)
		cfg.Certificates = []tls.Certificate{pair}
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}, Timeout: 30 * time.Second}
}

// nodeCall calls a node endpoint over mutual TLS; it answers the status
// and the error code (or the body when there is none).
func (e *env) nodeCall(c *http.Client, method, path string, body any) (int, string) {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(e.t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, e.stack.NodeAPIURL+path, rd)
	require.NoError(e.t, err)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	require.NoError(e.t, err)
	defer func() { _ = resp.Body.Close() }()
	out, err := io.ReadAll(resp.Body)
	require.NoError(e.t, err)
	e.mu.Lock()
	e.bodies = append(e.bodies, string(out))
	e.mu.Unlock()
	var eb struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(out, &eb) == nil && eb.Error.Code != "" {
		return resp.StatusCode, eb.Error.Code
	}
	return resp.StatusCode, string(out)
}

func heartbeatPath(nodeID string) string {
	return "/node/v1/nodes/" + nodeID + "/tasks/wait?wait_seconds=0"
}

// TestNodeIdentityRunbookValidations plays the node agent through the
// runbook: enrollment with a CSR, the first heartbeat over mutual TLS
// completing the onboarding, every negative validation of the node
// endpoints, renewal, expired-certificate recovery and removal.
func TestNodeIdentityRunbookValidations(t *testing.T) {
	t.Parallel()
	e := startStack(t)
	f := e.setup(nil, map[string]any{"enrollment_timeout_seconds": 86400})
	e.hardware("gpu-i1", "10.10.7.11", "52:54:00:00:71:01", map[string]any{"never_enrolls": true})
	e.hardware("gpu-i2", "10.10.7.12", "52:54:00:00:71:02", map[string]any{"never_enrolls": true})
	idA := e.onboard(f, "gpu-i1", "10.10.7.11")
	idB := e.onboard(f, "gpu-i2", "10.10.7.12")
	a, b := e.nodeBundle("gpu-i1"), e.nodeBundle("gpu-i2")
	keyA, keyB := newAgentKey(t), newAgentKey(t)

	// Wrong node: a's token for b.
	status, body := e.raw("POST", e.stack.APIURL+"/api/v1/nodes/"+b.NodeID+"/enroll", "", map[string]any{"token": a.Token, "csr": keyB.csr})
	assert.Equal(t, http.StatusUnauthorized, status)
	assert.Contains(t, string(body), "wrong_node")

	credA := e.credsCall("/api/v1/nodes/"+a.NodeID+"/enroll", map[string]any{"token": a.Token, "csr": keyA.csr})
	credB := e.credsCall("/api/v1/nodes/"+b.NodeID+"/enroll", map[string]any{"token": b.Token, "csr": keyB.csr})
	assert.Equal(t, e.stack.NodeAPIURL, credA.NodeAPIURL)
	assert.Equal(t, e.stack.NodeCA.CertPEM(), credA.CAPEM)

	// Replay after success.
	status, body = e.raw("POST", e.stack.APIURL+"/api/v1/nodes/"+a.NodeID+"/enroll", "", map[string]any{"token": a.Token, "csr": keyA.csr})
	assert.Equal(t, http.StatusUnauthorized, status)
	assert.Contains(t, string(body), "consumed")

	// The first authenticated heartbeat completes each onboarding.
	agentA, agentB := e.nodeClient(credA.CertificatePEM, keyA), e.nodeClient(credB.CertificatePEM, keyB)
	require.Eventually(t, func() bool {
		s, _ := e.nodeCall(agentA, "GET", heartbeatPath(a.NodeID), nil)
		return s == http.StatusOK && e.onboarding(idA)["status"] == "completed"
	}, terminalWait, 50*time.Millisecond, "the heartbeat completes the onboarding")
	status, _ = e.nodeCall(agentB, "GET", heartbeatPath(b.NodeID), nil)
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, "completed", e.waitTerminal(idB)["status"])
	node := e.admin("GET", "/api/v1/admin/nodes/"+a.NodeID, nil, http.StatusOK)
	assert.NotEmpty(t, node["agent_seen_at"])

	// No certificate, another CA's, another node's, an expired one.
	other, err := nodeid.LoadOrCreateLocal(t.TempDir(), time.Now())
	require.NoError(t, err)
	foreign, err := other.Issue(keyA.csr, a.NodeID, time.Now())
	require.NoError(t, err)
	expired, err := e.stack.NodeCA.Issue(keyA.csr, a.NodeID, time.Now().Add(-72*time.Hour))
	require.NoError(t, err)
	for _, tc := range []struct {
		name   string
		client *http.Client
		status int
		code   string
	}{
		{"no certificate", e.nodeClient("", keyA), http.StatusUnauthorized, nodeid.CertMissing},
		{"another CA", e.nodeClient(foreign.CertPEM, keyA), http.StatusUnauthorized, nodeid.CertUnknownCA},
		{"another node", agentB, http.StatusForbidden, nodeid.CertWrongNode},
		{"expired", e.nodeClient(expired.CertPEM, keyA), http.StatusUnauthorized, nodeid.CertExpired},
	} {
		s, code := e.nodeCall(tc.client, "GET", heartbeatPath(a.NodeID), nil)
		assert.Equal(t, tc.status, s, "wait: %s", tc.name)
		assert.Equal(t, tc.code, code, "wait: %s", tc.name)
		s, code = e.nodeCall(tc.client, "POST", "/node/v1/nodes/"+a.NodeID+"/tasks/t1/result", map[string]any{"status": "ok"})
		assert.Equal(t, tc.status, s, "result: %s", tc.name)
		assert.Equal(t, tc.code, code, "result: %s", tc.name)
	}

	// Renewal with the valid certificate, then recovery of an expired one
	// with the single-use recovery token.
	keyA2 := newAgentKey(t)
	renewed := e.credsCall2(agentA, "/node/v1/nodes/"+a.NodeID+"/certificate", map[string]any{"csr": keyA2.csr})
	agentA = e.nodeClient(renewed.CertificatePEM, keyA2)
	status, _ = e.nodeCall(agentA, "GET", heartbeatPath(a.NodeID), nil)
	assert.Equal(t, http.StatusOK, status, "the renewed certificate works")
	keyA3 := newAgentKey(t)
	recovered := e.credsCall("/api/v1/nodes/"+a.NodeID+"/recover", map[string]any{"recovery_token": renewed.RecoveryToken, "csr": keyA3.csr})
	status, _ = e.nodeCall(e.nodeClient(recovered.CertificatePEM, keyA3), "GET", heartbeatPath(a.NodeID), nil)
	assert.Equal(t, http.StatusOK, status, "the recovered certificate works")
	status, body = e.raw("POST", e.stack.APIURL+"/api/v1/nodes/"+a.NodeID+"/recover", "", map[string]any{"recovery_token": renewed.RecoveryToken, "csr": keyA3.csr})
	assert.Equal(t, http.StatusUnauthorized, status)
	assert.Contains(t, string(body), "recovery_token_rejected", "a recovery token is single use")
	status, body = e.raw("POST", e.stack.APIURL+"/api/v1/nodes/"+a.NodeID+"/recover", "", map[string]any{"recovery_token": a.Token, "csr": keyA3.csr})
	assert.Equal(t, http.StatusUnauthorized, status)
	assert.Contains(t, string(body), "recovery_token_rejected", "the first-boot token is no recovery token")

	// Removed: the identity ends everywhere.
	e.nodeOp(b.NodeID, "retire")
	status, code := e.nodeCall(agentB, "GET", heartbeatPath(b.NodeID), nil)
	assert.Equal(t, http.StatusForbidden, status)
	assert.Equal(t, "node_retired", code)
	e.nodeOp(b.NodeID, "remove")
	for _, call := range []func() (int, string){
		func() (int, string) { return e.nodeCall(agentB, "GET", heartbeatPath(b.NodeID), nil) },
		func() (int, string) {
			return e.nodeCall(agentB, "POST", "/node/v1/nodes/"+b.NodeID+"/certificate", map[string]any{"csr": keyB.csr})
		},
	} {
		s, code := call()
		assert.Equal(t, http.StatusForbidden, s)
		assert.Equal(t, "node_removed", code)
	}
	status, body = e.raw("POST", e.stack.APIURL+"/api/v1/nodes/"+b.NodeID+"/recover", "", map[string]any{"recovery_token": credB.RecoveryToken, "csr": keyB.csr})
	assert.Equal(t, http.StatusForbidden, status)
	assert.Contains(t, string(body), "node_removed")

	// Canaries: no token or private key in a log, an event, the
	// execution history, or an answer other than the one handing it over.
	history := e.onboardingHistories()
	envs, err := e.stack.Bus.ReadAll()
	require.NoError(t, err)
	evs, err := json.Marshal(envs)
	require.NoError(t, err)
	secrets := map[string]string{"first-boot token": a.Token, "recovery token": credA.RecoveryToken,
		"renewed recovery token": renewed.RecoveryToken, "node key": pemMiddle(keyA.keyPEM), "renewed node key": pemMiddle(keyA2.keyPEM)}
	for name, secret := range secrets {
		assert.NotContains(t, e.logs.String(), secret, "%s in a log", name)
		assert.NotContains(t, string(evs), secret, "%s in an event", name)
		assert.NotContains(t, history, secret, "%s in an execution history", name)
	}
	e.mu.Lock()
	all := e.bodies
	e.mu.Unlock()
	joined := ""
	for _, b := range all {
		joined += b
	}
	assert.NotContains(t, joined, pemMiddle(keyA.keyPEM), "no node key in any answer")
	assert.Equal(t, 1, countOf(joined, renewed.RecoveryToken), "the recovery token is answered once")
}

// credsCall2 is credsCall on the node listener with the agent's client.
func (e *env) credsCall2(c *http.Client, path string, body any) nodeCreds {
	e.t.Helper()
	status, out := e.nodeCall(c, "POST", path, body)
	require.Equal(e.t, http.StatusOK, status, out)
	var cr nodeCreds
	require.NoError(e.t, json.Unmarshal([]byte(out), &cr))
	return cr
}

func (e *env) onboardingHistories() string {
	e.t.Helper()
	var buf bytes.Buffer
	arn := e.stack.Engine.StateMachineARN("onboarding")
	execs := e.stack.Engine.ListExecutions(arn, "")
	require.NotEmpty(e.t, execs)
	for _, ex := range execs {
		h, err := e.stack.Engine.History(ex.ExecutionARN)
		require.NoError(e.t, err)
		require.NoError(e.t, json.NewEncoder(&buf).Encode(h))
	}
	return buf.String()
}

// pemMiddle is a stretch of a PEM block's base64, enough to recognise it.
func pemMiddle(s string) string { return s[40:100] }

func countOf(s, sub string) int { return bytes.Count([]byte(s), []byte(sub)) }
