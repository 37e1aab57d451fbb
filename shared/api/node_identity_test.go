package api

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
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/awslabs/aws-lambda-go-api-proxy/core"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/enroll"
	"github.com/maasflow/maasflow/shared/nodeid"
)

const testNodeAPIURL = "https://127.0.0.1:8443"

// nodeKey is a node's key pair and CSR, made on the node.
type nodeKey struct {
	key *ecdsa.PrivateKey
	csr string
}

func newNodeKey(t testing.TB) nodeKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "node"}}, key)
	require.NoError(t, err)
	return nodeKey{key: key, csr: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))}
}

type creds struct {
	CertificatePEM string    `json:"certificate_pem"`
	CAPEM          string    `json:"ca_pem"`
	NotAfter       time.Time `json:"certificate_not_after"`
	RecoveryToken  string    `json:"recovery_token"`
	NodeAPIURL     string    `json:"node_api_url"`
}

func decodeCreds(t testing.TB, r response) creds {
	t.Helper()
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	var c creds
	require.NoError(t, json.Unmarshal(r.body, &c))
	return c
}

func certOf(t testing.TB, certPEM string) *x509.Certificate {
	t.Helper()
	b, _ := pem.Decode([]byte(certPEM))
	require.NotNil(t, b)
	c, err := x509.ParseCertificate(b.Bytes)
	require.NoError(t, err)
	return c
}

// nodeCall sends a node endpoint request presenting cert (nil: none), as
// the TLS listener hands it to the handler.
func (h *harness) nodeCall(method, path string, body any, cert *x509.Certificate) response {
	h.t.Helper()
	var raw []byte
	if body != nil {
		var err error
		raw, err = json.Marshal(body)
		require.NoError(h.t, err)
	}
	req := httptest.NewRequestWithContext(h.t.Context(), method, path, bytes.NewReader(raw))
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.TLS = &tls.ConnectionState{}
	if cert != nil {
		req.TLS.PeerCertificates = []*x509.Certificate{cert}
	}
	rec := httptest.NewRecorder()
	h.handler.ServeHTTP(rec, req)
	_, _ = h.bodies.Write(rec.Body.Bytes())
	return response{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
}

func (h *harness) heartbeat(nodeID string, cert *x509.Certificate) response {
	h.t.Helper()
	return h.nodeCall("GET", "/node/v1/nodes/"+nodeID+"/tasks/wait?wait_seconds=0", nil, cert)
}

// enrolledNode enrolls a fresh node with a CSR.
// certNode is a node enrolled with a CSR, and its first-boot token.
type certNode struct {
	enrollable
	token string
}

func (h *harness) enrolledNode(host, taskToken string) (certNode, creds) {
	h.t.Helper()
	tok, err := enroll.NewToken()
	require.NoError(h.t, err)
	e := certNode{enrollable: h.enrollable(host, tok.Reveal(), time.Hour, taskToken), token: tok.Reveal()}
	k := newNodeKey(h.t)
	r := h.do(call{method: "POST", path: "/api/v1/nodes/" + e.nodeID + "/enroll", body: map[string]any{"token": e.token, "csr": k.csr}})
	return e, decodeCreds(h.t, r)
}

// auditActions are the actions of every audit entry.
func (h *harness) auditActions() []string {
	h.t.Helper()
	var out []string
	for _, it := range h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/audit", nil)["items"].([]any) {
		out = append(out, it.(map[string]any)["action"].(string))
	}
	return out
}

// closeOnboarding ends the node's onboarding as completed.
func (h *harness) closeOnboarding(e certNode) {
	h.t.Helper()
	_, err := h.store.UpdateOnboarding(context.Background(), e.onboardingID, func(o *domain.Onboarding) error {
		o.Status = domain.OnboardingCompleted
		return nil
	})
	require.NoError(h.t, err)
}

func errCode(t testing.TB, r response) string {
	t.Helper()
	var b errorBody
	require.NoError(t, json.Unmarshal(r.body, &b), "%s", r.body)
	return b.Error.Code
}

func TestEnrollWithCSRIssuesACertificateAndTheFirstHeartbeatCompletesTheWait(t *testing.T) {
	h := newHarness(t)
	e, c := h.enrolledNode("gpu-01", "task-token-1")

	cert := certOf(t, c.CertificatePEM)
	id, ok := nodeid.NodeIDOf(cert)
	require.True(t, ok)
	assert.Equal(t, e.nodeID, id)
	assert.Equal(t, h.nodeCA.CertPEM(), c.CAPEM)
	assert.Equal(t, testNodeAPIURL, c.NodeAPIURL)
	assert.Equal(t, t0.Add(nodeid.DefaultCertTTL), c.NotAfter)
	require.NotEmpty(t, c.RecoveryToken)

	node, err := h.store.GetNode(context.Background(), e.nodeID)
	require.NoError(t, err)
	assert.Equal(t, enroll.HashToken(c.RecoveryToken), node.RecoveryTokenHash, "only the hash is kept")
	assert.Equal(t, cert.SerialNumber.Text(16), node.CertSerial)
	assert.Nil(t, node.AgentSeenAt)
	assert.Empty(t, h.completer.completions(), "the wait completes at the agent's first heartbeat, not at enrollment")

	r := h.heartbeat(e.nodeID, cert)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	assert.JSONEq(t, `{"tasks":[]}`, string(r.body))
	calls := h.completer.completions()
	require.Len(t, calls, 1)
	assert.Equal(t, "task-token-1", calls[0].taskToken)
	node, err = h.store.GetNode(context.Background(), e.nodeID)
	require.NoError(t, err)
	require.NotNil(t, node.AgentSeenAt)
	assert.Empty(t, node.AwaitsAgentOnboardingID)

	require.Equal(t, http.StatusOK, h.heartbeat(e.nodeID, cert).status)
	assert.Len(t, h.completer.completions(), 1, "later heartbeats complete nothing")

	// The node's record never shows the recovery token's hash.
	got := h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/nodes/"+e.nodeID, nil)
	assert.NotContains(t, got, "recovery_token_hash")
	assert.Equal(t, cert.SerialNumber.Text(16), got["cert_serial"])
	assert.NotEmpty(t, got["agent_seen_at"])
}

func TestEnrollRefusesABadCSRWithoutSpendingTheToken(t *testing.T) {
	h := newHarness(t)
	e := h.enrollable("gpu-01", seedEnrollToken, time.Hour, "")
	r := h.do(call{method: "POST", path: "/api/v1/nodes/" + e.nodeID + "/enroll", body: map[string]any{"token": seedEnrollToken, "csr": "not a csr"}})
	require.Equal(t, http.StatusBadRequest, r.status, "%s", r.body)
	assert.Contains(t, string(r.body), `"field":"csr"`)

	k := newNodeKey(t)
	r = h.do(call{method: "POST", path: "/api/v1/nodes/" + e.nodeID + "/enroll", body: map[string]any{"token": seedEnrollToken, "csr": k.csr}})
	decodeCreds(t, r)
}

func TestNodeEndpointsRefuseEachBadCertificateWithItsOwnCode(t *testing.T) {
	h := newHarness(t)
	e1, c1 := h.enrolledNode("gpu-01", "")
	e2, c2 := h.enrolledNode("gpu-02", "")
	cert1, cert2 := certOf(t, c1.CertificatePEM), certOf(t, c2.CertificatePEM)

	other, err := nodeid.LoadOrCreateLocal(t.TempDir(), t0)
	require.NoError(t, err)
	foreign, err := other.Issue(newNodeKey(t).csr, e1.nodeID, t0)
	require.NoError(t, err)

	wait := "/node/v1/nodes/" + e1.nodeID + "/tasks/wait?wait_seconds=0"
	result := "/node/v1/nodes/" + e1.nodeID + "/tasks/t1/result"
	for _, tc := range []struct {
		name   string
		cert   *x509.Certificate
		status int
		code   string
	}{
		{"no certificate", nil, http.StatusUnauthorized, nodeid.CertMissing},
		{"another CA's certificate", certOf(t, foreign.CertPEM), http.StatusUnauthorized, nodeid.CertUnknownCA},
		{"another node's certificate", cert2, http.StatusForbidden, nodeid.CertWrongNode},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := h.nodeCall("GET", wait, nil, tc.cert)
			assert.Equal(t, tc.status, r.status, "%s", r.body)
			assert.Equal(t, tc.code, errCode(t, r))
			r = h.nodeCall("POST", result, map[string]any{"status": "ok"}, tc.cert)
			assert.Equal(t, tc.status, r.status, "%s", r.body)
			assert.Equal(t, tc.code, errCode(t, r))
		})
	}
	t.Run("the node's own certificate", func(t *testing.T) {
		assert.Equal(t, http.StatusOK, h.nodeCall("GET", wait, nil, cert1).status)
		r := h.nodeCall("POST", result, map[string]any{"status": "ok"}, cert1)
		assert.Equal(t, http.StatusNotFound, r.status)
		assert.Equal(t, CodeUnknownTask, errCode(t, r))
	})
	t.Run("the plain listener presents no certificate", func(t *testing.T) {
		r := h.do(call{method: "GET", path: wait})
		assert.Equal(t, http.StatusUnauthorized, r.status)
		assert.Equal(t, nodeid.CertMissing, errCode(t, r))
	})
	t.Run("retired: no runtime work, renewal allowed", func(t *testing.T) {
		h.mustAdmin(http.StatusOK, "POST", "/api/v1/admin/nodes/"+e2.nodeID+"/retire", nil)
		r := h.heartbeat(e2.nodeID, cert2)
		assert.Equal(t, http.StatusForbidden, r.status)
		assert.Equal(t, CodeNodeRetired, errCode(t, r))
		r = h.nodeCall("POST", "/node/v1/nodes/"+e2.nodeID+"/tasks/t1/result", map[string]any{"status": "ok"}, cert2)
		assert.Equal(t, CodeNodeRetired, errCode(t, r))
		c := decodeCreds(t, h.nodeCall("POST", "/node/v1/nodes/"+e2.nodeID+"/certificate", map[string]any{"csr": newNodeKey(t).csr}, cert2))
		cert2 = certOf(t, c.CertificatePEM)
	})
	t.Run("removed: refused everywhere", func(t *testing.T) {
		h.mustAdmin(http.StatusOK, "POST", "/api/v1/admin/nodes/"+e2.nodeID+"/remove", nil)
		for _, r := range []response{
			h.heartbeat(e2.nodeID, cert2),
			h.nodeCall("POST", "/node/v1/nodes/"+e2.nodeID+"/certificate", map[string]any{"csr": newNodeKey(t).csr}, cert2),
			h.nodeCall("POST", "/node/v1/nodes/"+e2.nodeID+"/tasks/t1/result", map[string]any{"status": "ok"}, cert2),
		} {
			assert.Equal(t, http.StatusForbidden, r.status, "%s", r.body)
			assert.Equal(t, CodeNodeRemoved, errCode(t, r))
		}
		r := h.do(call{method: "POST", path: "/api/v1/nodes/" + e2.nodeID + "/recover", body: map[string]any{"recovery_token": c2.RecoveryToken, "csr": newNodeKey(t).csr}})
		assert.Equal(t, http.StatusForbidden, r.status, "%s", r.body)
		assert.Equal(t, CodeNodeRemoved, errCode(t, r), "a removed node's recovery token is refused")
		node, err := h.store.GetNode(context.Background(), e2.nodeID)
		require.NoError(t, err)
		assert.Empty(t, node.RecoveryTokenHash, "removal revoked the recovery token")
		r = h.enroll(e2.nodeID, e2.token)
		assert.Equal(t, http.StatusUnauthorized, r.status)
	})
	t.Run("expired certificate", func(t *testing.T) {
		h.clock.Advance(nodeid.DefaultCertTTL + time.Minute)
		r := h.heartbeat(e1.nodeID, cert1)
		assert.Equal(t, http.StatusUnauthorized, r.status)
		assert.Equal(t, nodeid.CertExpired, errCode(t, r))
		r = h.nodeCall("POST", "/node/v1/nodes/"+e1.nodeID+"/certificate", map[string]any{"csr": newNodeKey(t).csr}, cert1)
		assert.Equal(t, nodeid.CertExpired, errCode(t, r), "an expired certificate cannot renew: it recovers")
	})
}

func TestRenewalIssuesANewCertificateAndRecoveryToken(t *testing.T) {
	h := newHarness(t)
	e, c := h.enrolledNode("gpu-01", "")
	h.clock.Advance(16 * time.Hour)
	k := newNodeKey(t)
	r := h.nodeCall("POST", "/node/v1/nodes/"+e.nodeID+"/certificate", map[string]any{"csr": k.csr}, certOf(t, c.CertificatePEM))
	renewed := decodeCreds(t, r)
	cert := certOf(t, renewed.CertificatePEM)
	assert.True(t, k.key.PublicKey.Equal(cert.PublicKey))
	assert.Equal(t, t0.Add(16*time.Hour+nodeid.DefaultCertTTL), renewed.NotAfter)
	assert.NotEqual(t, c.RecoveryToken, renewed.RecoveryToken)
	node, err := h.store.GetNode(context.Background(), e.nodeID)
	require.NoError(t, err)
	assert.Equal(t, enroll.HashToken(renewed.RecoveryToken), node.RecoveryTokenHash, "renewal replaces the recovery token")
	assert.Equal(t, cert.SerialNumber.Text(16), node.CertSerial)
	assert.Equal(t, http.StatusOK, h.heartbeat(e.nodeID, cert).status)

	assert.Contains(t, h.auditActions(), "node.certificate.renew")
}

func TestExpiredCertificateRecoveryIsSingleUseAndEndsWithAReissuedBundle(t *testing.T) {
	h := newHarness(t)
	e, c := h.enrolledNode("gpu-01", "")
	h.clock.Advance(nodeid.DefaultCertTTL + time.Hour)
	recoverWith := func(token string) response {
		return h.do(call{method: "POST", path: "/api/v1/nodes/" + e.nodeID + "/recover", body: map[string]any{"recovery_token": token, "csr": newNodeKey(t).csr}})
	}

	// The spent first-boot token is no way back in.
	assert.Equal(t, http.StatusUnauthorized, h.enroll(e.nodeID, e.token).status)
	r := recoverWith(e.token)
	assert.Equal(t, CodeRecoveryTokenRejected, errCode(t, r))

	rec := decodeCreds(t, recoverWith(c.RecoveryToken))
	assert.Equal(t, http.StatusOK, h.heartbeat(e.nodeID, certOf(t, rec.CertificatePEM)).status)
	r = recoverWith(c.RecoveryToken)
	assert.Equal(t, http.StatusUnauthorized, r.status)
	assert.Equal(t, CodeRecoveryTokenRejected, errCode(t, r), "a recovery token is single use")

	// A reissued bundle revokes the recovery token, audited as a reissue.
	h.closeOnboarding(e)
	h.mustAdmin(http.StatusCreated, "POST", "/api/v1/admin/nodes/"+e.nodeID+"/bootstrap-bundle", nil)
	r = recoverWith(rec.RecoveryToken)
	assert.Equal(t, CodeRecoveryTokenRejected, errCode(t, r), "the reissue revoked it")
	assert.Contains(t, h.auditActions(), "node.bootstrap_bundle.reissue")
	assert.Contains(t, h.auditActions(), "node.certificate.recover")

	r = h.do(call{method: "POST", path: "/api/v1/nodes/unknown-node/recover", body: map[string]any{"recovery_token": c.RecoveryToken, "csr": newNodeKey(t).csr}})
	assert.Equal(t, CodeRecoveryTokenRejected, errCode(t, r))
	r = h.do(call{method: "POST", path: "/api/v1/nodes/" + e.nodeID + "/recover", body: map[string]any{"recovery_token": "x", "csr": "nope"}})
	assert.Equal(t, http.StatusBadRequest, r.status)
	assert.Contains(t, string(r.body), `"field":"csr"`)
}

// Canaries: the recovery token is in exactly the answer that hands it
// over; no log line, audit entry or other answer carries it, nor the CSR.
func TestNodeCredentialsNeverReachALogOrAnotherAnswer(t *testing.T) {
	h := newHarness(t)
	e, c := h.enrolledNode("gpu-01", "task-token-1")
	cert := certOf(t, c.CertificatePEM)
	k := newNodeKey(t)
	renewed := decodeCreds(t, h.nodeCall("POST", "/node/v1/nodes/"+e.nodeID+"/certificate", map[string]any{"csr": k.csr}, cert))
	h.heartbeat(e.nodeID, cert)
	h.do(call{method: "POST", path: "/api/v1/nodes/" + e.nodeID + "/recover", body: map[string]any{"recovery_token": c.RecoveryToken, "csr": k.csr}})
	audit := h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/audit", nil)
	node := h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/nodes/"+e.nodeID, nil)
	side, err := json.Marshal([]any{audit, node})
	require.NoError(t, err)

	csrBody := pemBody(t, k.csr)
	for _, secret := range []string{c.RecoveryToken, renewed.RecoveryToken, enroll.HashToken(renewed.RecoveryToken), e.token} {
		assert.NotContains(t, h.logs.String(), secret)
		assert.NotContains(t, string(side), secret)
	}
	assert.NotContains(t, h.logs.String(), csrBody)
	assert.NotContains(t, string(side), csrBody)
	assert.Equal(t, 1, bytes.Count([]byte(h.bodies.String()), []byte(renewed.RecoveryToken)), "handed over once")
}

func pemBody(t testing.TB, s string) string {
	t.Helper()
	b, _ := pem.Decode([]byte(s))
	require.NotNil(t, b)
	return string(pem.EncodeToMemory(b))[40:80]
}

// Behind API Gateway's mutual TLS the certificate arrives in the request
// context, not on a TLS connection.
func TestNodeEndpointsReadTheGatewaysClientCertificate(t *testing.T) {
	h := newHarness(t)
	e, c := h.enrolledNode("gpu-01", "")
	call := func(certPEM string) response {
		ev := events.APIGatewayV2HTTPRequest{
			RawPath: "/node/v1/nodes/" + e.nodeID + "/tasks/wait", RawQueryString: "wait_seconds=0",
			RequestContext: events.APIGatewayV2HTTPRequestContext{
				HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "GET", Path: "/node/v1/nodes/" + e.nodeID + "/tasks/wait"},
				Authentication: events.APIGatewayV2HTTPRequestContextAuthentication{
					ClientCert: events.APIGatewayV2HTTPRequestContextAuthenticationClientCert{ClientCertPem: certPEM},
				},
			},
		}
		var acc core.RequestAccessorV2
		req, err := acc.EventToRequestWithContext(context.Background(), ev)
		require.NoError(t, err)
		rec := httptest.NewRecorder()
		h.handler.ServeHTTP(rec, req)
		return response{status: rec.Code, body: rec.Body.Bytes()}
	}
	r := call(c.CertificatePEM)
	assert.Equal(t, http.StatusOK, r.status, "%s", r.body)
	r = call("")
	assert.Equal(t, http.StatusUnauthorized, r.status)
	assert.Equal(t, nodeid.CertMissing, errCode(t, r))
}
