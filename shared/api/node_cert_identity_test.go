package api

import (
	"crypto/tls"
	"crypto/x509"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/clock"
	"github.com/maasflow/maasflow/shared/nodeid"
)

// TestNodeCertIdentity: a verified node certificate names its node; no
// certificate names none (the enrollment token is tried next); an expired
// or foreign certificate is an error.
func TestNodeCertIdentity(t *testing.T) {
	ca, err := nodeid.LoadOrCreateLocal(t.TempDir(), t0)
	require.NoError(t, err)
	other, err := nodeid.LoadOrCreateLocal(t.TempDir(), t0)
	require.NoError(t, err)
	id := CertIdentity(ca, clock.NewFake(t0.Add(time.Hour)))
	issue := func(c *nodeid.CA, at time.Time) *x509.Certificate {
		is, err := c.Issue(newNodeKey(t).csr, "node-7", at)
		require.NoError(t, err)
		return certOf(t, is.CertPEM)
	}
	request := func(cert *x509.Certificate) (string, bool, error) {
		r := httptest.NewRequestWithContext(t.Context(), "GET", "/api/v1/nodes/node-7/design", nil)
		r.TLS = &tls.ConnectionState{}
		if cert != nil {
			r.TLS.PeerCertificates = []*x509.Certificate{cert}
		}
		return id.NodeOf(r)
	}

	node, ok, err := request(issue(ca, t0))
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, "node-7", node)

	_, ok, err = request(nil)
	require.NoError(t, err)
	assert.False(t, ok, "no certificate: the enrollment token decides")

	for name, cert := range map[string]*x509.Certificate{
		"expired": issue(ca, t0.Add(-72*time.Hour)),
		"foreign": issue(other, t0),
	} {
		_, ok, err = request(cert)
		require.Error(t, err, name)
		assert.False(t, ok, name)
	}
}
