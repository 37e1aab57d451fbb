package api

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/nodeid"
)

// connectorKey is a connector host's key with a CSR over it.
type connectorKey struct {
	key *ecdsa.PrivateKey
	csr string
}

func newConnectorKey(t *testing.T) connectorKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "connector"}}, key)
	require.NoError(t, err)
	return connectorKey{key: key, csr: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))}
}

// enrolled is the certificate an admin's enroll gives the connector of id.
func (h *harness) enrolled(id string, k connectorKey) string {
	h.t.Helper()
	got := h.mustAdmin(http.StatusCreated, http.MethodPost, "/api/v1/admin/maas-sites/"+id+"/connector/certificate", map[string]any{"csr": k.csr})
	return got["certificate_pem"].(string)
}

func renewPath(id string) string { return "/api/v1/connectors/" + id + "/certificate" }

func TestConnectorRenewsWithItsCurrentCertificate(t *testing.T) {
	h, _, ca := connectorHarness(t, true)
	id := h.connectorSite("dc1")
	k := newConnectorKey(t)
	cert := h.enrolled(id, k)

	h.clock.Advance(5 * 24 * 60 * 60 * 1e9) // day 5 of 7
	r := h.do(call{method: http.MethodPost, path: renewPath(id), body: map[string]any{"certificate_pem": cert, "csr": k.csr}})
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	got := r.json(t)
	block, _ := pem.Decode([]byte(got["certificate_pem"].(string)))
	require.NotNil(t, block)
	renewed, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	assert.Equal(t, id, renewed.Subject.CommonName)
	assert.True(t, k.key.PublicKey.Equal(renewed.PublicKey), "the same key")
	assert.Equal(t, h.clock.Now().Add(nodeid.ConnectorCertTTL).UTC(), renewed.NotAfter.UTC(), "a full life from now")
	_, err = renewed.Verify(x509.VerifyOptions{Roots: ca.Pool(), CurrentTime: h.clock.Now(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	require.NoError(t, err)
	assert.Equal(t, testAnchorARN, got["trust_anchor_arn"])
	assert.Equal(t, testQueuePrefix+id, got["queue_url"])

	audit := h.auditFor("site.connector.certificate.renew")
	require.Len(t, audit, 1)
	assert.Equal(t, "connector:"+id, audit[0].Actor)
	assert.Equal(t, "site:"+id, audit[0].Target)
	assert.Equal(t, resultSuccess, audit[0].Result)

	// The renewed certificate renews in turn: no admin is ever needed
	// while the connector keeps it current.
	h.clock.Advance(5 * 24 * 60 * 60 * 1e9)
	r = h.do(call{method: http.MethodPost, path: renewPath(id), body: map[string]any{"certificate_pem": got["certificate_pem"], "csr": k.csr}})
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
}

func TestConnectorRenewalRefusals(t *testing.T) {
	h, _, _ := connectorHarness(t, true)
	id := h.connectorSite("dc1")
	other := h.connectorSite("dc2")
	k := newConnectorKey(t)
	cert := h.enrolled(id, k)
	otherCert := h.enrolled(other, newConnectorKey(t))
	off := h.connectorSite("dc3")
	offKey := newConnectorKey(t)
	offCert := h.enrolled(off, offKey)
	h.mustAdmin(http.StatusOK, http.MethodDelete, "/api/v1/admin/maas-sites/"+off, nil)

	// A certificate of another CA (the node CA of another deployment).
	foreign, err := nodeid.LoadOrCreateLocal(t.TempDir(), t0)
	require.NoError(t, err)
	issued, err := foreign.WithTTL(nodeid.ConnectorCertTTL).IssueConnector(k.csr, id, t0)
	require.NoError(t, err)

	for _, tc := range []struct {
		name   string
		site   string
		body   any
		status int
		field  string
	}{
		{"no certificate", id, map[string]any{"csr": k.csr}, http.StatusBadRequest, "certificate_pem"},
		{"no csr", id, map[string]any{"certificate_pem": cert}, http.StatusBadRequest, "csr"},
		{"not a certificate", id, map[string]any{"certificate_pem": "hello", "csr": k.csr}, http.StatusUnauthorized, "certificate_pem"},
		{"another CA's certificate", id, map[string]any{"certificate_pem": issued.CertPEM, "csr": k.csr}, http.StatusUnauthorized, "certificate_pem"},
		{"another site's certificate", id, map[string]any{"certificate_pem": otherCert, "csr": k.csr}, http.StatusUnauthorized, "certificate_pem"},
		{"a CSR over another key", id, map[string]any{"certificate_pem": cert, "csr": newConnectorKey(t).csr}, http.StatusUnauthorized, "csr"},
		{"a bad CSR", id, map[string]any{"certificate_pem": cert, "csr": "hello"}, http.StatusBadRequest, "csr"},
		{"a disabled site", off, map[string]any{"certificate_pem": offCert, "csr": offKey.csr}, http.StatusConflict, "status"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := h.do(call{method: http.MethodPost, path: renewPath(tc.site), body: tc.body})
			require.Equal(t, tc.status, r.status, "%s", r.body)
			e := r.json(t)["error"].(map[string]any)
			assert.Equal(t, tc.field, e["field"], "%s", r.body)
		})
	}

	t.Run("an expired certificate", func(t *testing.T) {
		h.clock.Advance(nodeid.ConnectorCertTTL + 1e9)
		r := h.do(call{method: http.MethodPost, path: renewPath(id), body: map[string]any{"certificate_pem": cert, "csr": k.csr}})
		require.Equal(t, http.StatusUnauthorized, r.status, "%s", r.body)
		assert.Contains(t, string(r.body), "maasflow connector enroll", "says how to get a certificate again")
	})
	for _, e := range h.auditFor("site.connector.certificate.renew") {
		assert.NotEqual(t, resultSuccess, e.Result, "no refused renewal is audited as a success")
	}

	t.Run("no connector CA", func(t *testing.T) {
		h, _, _ := connectorHarness(t, false)
		id := h.connectorSite("dc1")
		r := h.do(call{method: http.MethodPost, path: renewPath(id), body: map[string]any{"certificate_pem": cert, "csr": k.csr}})
		assert.Equal(t, http.StatusServiceUnavailable, r.status, "%s", r.body)
	})
}
