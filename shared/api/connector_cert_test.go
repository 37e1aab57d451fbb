package api

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/nodeid"
)

const (
	testAnchorARN   = "arn:aws:rolesanywhere:eu-west-1:111122223333:trust-anchor/a1"
	testProfileARN  = "arn:aws:rolesanywhere:eu-west-1:111122223333:profile/p1"
	testConnRoleARN = "arn:aws:iam::111122223333:role/maasflow-prod-connector"
	testQueuePrefix = "https://sqs.eu-west-1.amazonaws.com/111122223333/maasflow-prod-connector-"
)

// fakeQueues records what the API asks of the connector queues.
type fakeQueues struct {
	mu        sync.Mutex
	calls     []string
	ensureErr error
	removeErr error
}

func (f *fakeQueues) Ensure(_ context.Context, site string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "ensure "+site)
	return f.ensureErr
}

func (f *fakeQueues) Remove(_ context.Context, site string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "remove "+site)
	return f.removeErr
}

func (f *fakeQueues) taken() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.calls
	f.calls = nil
	return out
}

// connectorHarness is the harness with a connector CA (not the node CA)
// and recorded queues.
func connectorHarness(t *testing.T, withIssuer bool) (*harness, *fakeQueues, *nodeid.CA) {
	t.Helper()
	h := newHarness(t)
	q := &fakeQueues{}
	ca, err := nodeid.LoadOrCreateLocal(t.TempDir(), t0)
	require.NoError(t, err)
	ca = ca.WithTTL(nodeid.ConnectorCertTTL)
	deps := h.deps(testBundles)
	deps.Connectors = ConnectorDeps{Queues: q, TrustAnchorARN: testAnchorARN, ProfileARN: testProfileARN, RoleARN: testConnRoleARN,
		QueueURLPrefix: testQueuePrefix, Table: "maasflow-prod-connector"}
	if withIssuer {
		deps.Connectors.Issuer = ca
	}
	h.handler = New(Config{}, deps)
	return h, q, ca
}

func connectorCSR(t *testing.T, cn string) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn}}, key)
	require.NoError(t, err)
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))
}

func (h *harness) connectorSite(name string) string {
	h.t.Helper()
	site := h.mustAdmin(http.StatusCreated, http.MethodPost, "/api/v1/admin/maas-sites", map[string]any{
		"name": name, "maas_url": "http://localhost:5240/MAAS", "connectivity": "connector",
	})
	return site["id"].(string)
}

func TestConnectorCertificateNamesTheSiteWhateverTheCSRAsks(t *testing.T) {
	h, _, ca := connectorHarness(t, true)
	id := h.connectorSite("dc1")
	got := h.mustAdmin(http.StatusCreated, http.MethodPost, "/api/v1/admin/maas-sites/"+id+"/connector/certificate",
		map[string]any{"csr": connectorCSR(t, "some-other-site")})

	block, _ := pem.Decode([]byte(got["certificate_pem"].(string)))
	require.NotNil(t, block)
	cert, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	assert.Equal(t, id, cert.Subject.CommonName, "Roles Anywhere's x509Subject/CN tag scopes the session to this site")
	_, err = cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), CurrentTime: t0, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	require.NoError(t, err, "signed by the connector CA")
	assert.Equal(t, t0.Add(nodeid.ConnectorCertTTL), cert.NotAfter, "short-lived")
	assert.Equal(t, ca.CertPEM(), got["ca_pem"])
	assert.Equal(t, testAnchorARN, got["trust_anchor_arn"])
	assert.Equal(t, testProfileARN, got["profile_arn"])
	assert.Equal(t, testConnRoleARN, got["role_arn"])
	assert.Equal(t, testQueuePrefix+id, got["queue_url"])
	assert.Equal(t, "maasflow-prod-connector", got["table"])

	audit := h.auditFor("site.connector.certificate")
	require.Len(t, audit, 1)
	assert.Equal(t, "site:"+id, audit[0].Target)
	assert.Equal(t, "alice", audit[0].Actor)
	assert.NotContains(t, h.logs.String(), "BEGIN CERTIFICATE", "the log names the serial, not the certificate")
	assert.Contains(t, h.logs.String(), got["serial"].(string))
}

func TestConnectorCertificateRefusals(t *testing.T) {
	h, _, _ := connectorHarness(t, true)
	conn := h.connectorSite("dc1")
	vpc := h.mustAdmin(http.StatusCreated, http.MethodPost, "/api/v1/admin/maas-sites", map[string]any{
		"name": "dc2", "maas_url": "https://maas.dc2:5443/MAAS"})["id"].(string)
	off := h.connectorSite("dc3")
	h.mustAdmin(http.StatusOK, http.MethodDelete, "/api/v1/admin/maas-sites/"+off, nil)
	path := func(id string) string { return "/api/v1/admin/maas-sites/" + id + "/connector/certificate" }

	for _, tc := range []struct {
		name   string
		site   string
		body   any
		status int
		field  string
	}{
		{"no csr", conn, map[string]any{}, http.StatusBadRequest, "csr"},
		{"not PEM", conn, map[string]any{"csr": "hello"}, http.StatusBadRequest, "csr"},
		{"a certificate, not a request", conn, map[string]any{"csr": "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"}, http.StatusBadRequest, "csr"},
		{"unknown field", conn, map[string]any{"csr": connectorCSR(t, "x"), "cn": "x"}, http.StatusBadRequest, ""},
		{"a vpc site", vpc, map[string]any{"csr": connectorCSR(t, "x")}, http.StatusConflict, "connectivity"},
		{"a disabled site", off, map[string]any{"csr": connectorCSR(t, "x")}, http.StatusConflict, "status"},
		{"no such site", "nope", map[string]any{"csr": connectorCSR(t, "x")}, http.StatusNotFound, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := h.admin(http.MethodPost, path(tc.site), tc.body)
			require.Equal(t, tc.status, r.status, "%s", r.body)
			if tc.field != "" {
				e := r.json(t)["error"].(map[string]any)
				assert.Equal(t, tc.field, e["field"], "%s", r.body)
			}
		})
	}
	t.Run("an operator who is not an admin", func(t *testing.T) {
		r := h.do(call{method: http.MethodPost, path: path(conn), body: map[string]any{"csr": connectorCSR(t, "x")}, token: userToken})
		assert.Equal(t, http.StatusForbidden, r.status)
	})
	for _, e := range h.auditFor("site.connector.certificate") {
		assert.NotEqual(t, resultSuccess, e.Result, "no refused request is audited as a success")
	}

	t.Run("no connector CA", func(t *testing.T) {
		h, _, _ := connectorHarness(t, false)
		id := h.connectorSite("dc1")
		r := h.admin(http.MethodPost, path(id), map[string]any{"csr": connectorCSR(t, "x")})
		assert.Equal(t, http.StatusServiceUnavailable, r.status, "%s", r.body)
	})
}

func TestConnectorSiteQueuesFollowTheSite(t *testing.T) {
	h, q, _ := connectorHarness(t, true)
	sites := "/api/v1/admin/maas-sites/"

	vpc := h.mustAdmin(http.StatusCreated, http.MethodPost, "/api/v1/admin/maas-sites", map[string]any{"name": "dc0", "maas_url": "https://maas.dc0:5443/MAAS"})["id"].(string)
	assert.Empty(t, q.taken(), "a vpc site has no queues")

	id := h.connectorSite("dc1")
	assert.Equal(t, []string{"ensure " + id}, q.taken(), "a connector site gets its queues when it is created")

	h.mustAdmin(http.StatusOK, http.MethodPatch, sites+id, map[string]any{"description": "rack 4"})
	assert.Empty(t, q.taken(), "a patch that keeps the path touches no queue")

	h.mustAdmin(http.StatusOK, http.MethodPatch, sites+id, map[string]any{"connectivity": "vpc"})
	assert.Equal(t, []string{"remove " + id}, q.taken(), "leaving the connector path deletes the queues")

	h.mustAdmin(http.StatusOK, http.MethodPatch, sites+vpc, map[string]any{"connectivity": "connector"})
	assert.Equal(t, []string{"ensure " + vpc}, q.taken(), "switching to the connector path makes the queues, no redeploy")

	h.mustAdmin(http.StatusOK, http.MethodDelete, sites+vpc, nil)
	assert.Equal(t, []string{"remove " + vpc}, q.taken(), "disabling the site deletes its queues")

	h.mustAdmin(http.StatusOK, http.MethodPatch, sites+vpc, map[string]any{"status": "active"})
	assert.Equal(t, []string{"ensure " + vpc}, q.taken(), "enabling it again makes them again")

	t.Run("queues that cannot be made leave no site", func(t *testing.T) {
		q.ensureErr = errors.New("AccessDenied")
		defer func() { q.ensureErr = nil }()
		r := h.admin(http.MethodPost, "/api/v1/admin/maas-sites", map[string]any{"name": "dc9", "maas_url": "http://localhost:5240/MAAS", "connectivity": "connector"})
		assert.Equal(t, http.StatusServiceUnavailable, r.status, "%s", r.body)
		q.taken()
		for _, s := range h.mustAdmin(http.StatusOK, http.MethodGet, "/api/v1/admin/maas-sites", nil)["items"].([]any) {
			assert.NotEqual(t, "dc9", s.(map[string]any)["name"])
		}
	})
	t.Run("queues that cannot be deleted are a warning to retry", func(t *testing.T) {
		q.removeErr = errors.New("throttled")
		defer func() { q.removeErr = nil }()
		got := h.mustAdmin(http.StatusOK, http.MethodDelete, sites+vpc, nil)
		assert.Equal(t, "disabled", got["status"])
		assert.Contains(t, got["warnings"], "the connector queues of this site were not deleted (throttled): repeat the request to retry")
	})
	t.Run("a patch that left the connector path deletes them when repeated", func(t *testing.T) {
		id := h.connectorSite("dc7")
		q.taken()
		q.removeErr = errors.New("throttled")
		got := h.mustAdmin(http.StatusOK, http.MethodPatch, sites+id, map[string]any{"connectivity": "vpc"})
		q.removeErr = nil
		assert.Contains(t, got["warnings"], "the connector queues of this site were not deleted (throttled): repeat the request to retry")
		assert.Equal(t, []string{"remove " + id}, q.taken())

		// As the warning says: the same request again.
		got = h.mustAdmin(http.StatusOK, http.MethodPatch, sites+id, map[string]any{"connectivity": "vpc"})
		assert.NotContains(t, got["warnings"], "the connector queues of this site were not deleted (throttled): repeat the request to retry")
		assert.Equal(t, []string{"remove " + id}, q.taken(), "the repeated request deletes the queues")
	})
}
