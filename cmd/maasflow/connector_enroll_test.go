package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/connector/rolesanywhere"
	"github.com/maasflow/maasflow/shared/nodeid"
)

// fakeCertAPI signs connector CSRs as the admin API does.
type fakeCertAPI struct {
	t    *testing.T
	ca   *nodeid.CA
	mu   sync.Mutex
	hits int
}

func (f *fakeCertAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	assert.Equal(f.t, "/api/v1/admin/maas-sites/site-a/connector/certificate", r.URL.Path)
	assert.Equal(f.t, "Bearer admin-token", r.Header.Get("Authorization"))
	var in struct {
		CSR string `json:"csr"`
	}
	if !assert.NoError(f.t, json.NewDecoder(r.Body).Decode(&in)) {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	issued, err := f.ca.IssueConnector(in.CSR, "site-a", time.Now())
	if !assert.NoError(f.t, err) {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.hits++
	f.mu.Unlock()
	writeCertificateAnswer(w, f.ca, issued)
}

func TestConnectorEnrollKeepsTheKeyAndWritesWhatTheConnectorReads(t *testing.T) {
	ca := newConnectorCA(t)
	srv := httptest.NewServer(&fakeCertAPI{t: t, ca: ca})
	defer srv.Close()

	dir := filepath.Join(t.TempDir(), "conn")
	env := map[string]string{"MAASFLOW_API_URL": srv.URL, "MAASFLOW_ADMIN_TOKEN": "admin-token"}
	o := &enrollOptions{site: "site-a", dir: dir}
	var out, errOut bytes.Buffer
	require.Equal(t, 0, o.run(context.Background(), func(k string) string { return env[k] }, &out, &errOut), errOut.String())
	first, err := rolesanywhere.LoadIdentity(filepath.Join(dir, enrollCertFile), filepath.Join(dir, enrollKeyFile))
	require.NoError(t, err, "the certificate is over the key made here")
	assert.Equal(t, "site-a", first.Cert.Subject.CommonName)
	st, err := os.Stat(filepath.Join(dir, enrollKeyFile))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "the key is the owner's alone")
	assert.NotContains(t, out.String(), "PRIVATE KEY")

	// Renewal: the same key, a new certificate.
	require.Equal(t, 0, o.run(context.Background(), func(k string) string { return env[k] }, &out, &errOut), errOut.String())
	second, err := rolesanywhere.LoadIdentity(filepath.Join(dir, enrollCertFile), filepath.Join(dir, enrollKeyFile))
	require.NoError(t, err)
	assert.True(t, first.Key.Equal(second.Key), "enroll again renews with the same key")
	assert.NotEqual(t, first.Cert.SerialNumber, second.Cert.SerialNumber)

	names, err := readConnectorNames(dir)
	require.NoError(t, err)
	assert.Equal(t, "site-a", names.SiteID)
	assert.Equal(t, "maasflow-prod-connector", names.Table)
	assert.Len(t, connectorAWSOptions(dir, &names), 2, "Roles Anywhere credentials and the anchor's region")

	var stderr bytes.Buffer
	code := runConnector(context.Background(), []string{"--credentials-dir", dir, "--site", "site-b", "--maas-url", "http://localhost:5240/MAAS"}, &out, &stderr)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr.String(), "names site site-a")

	o = &enrollOptions{dir: dir}
	stderr.Reset()
	assert.Equal(t, 2, o.run(context.Background(), func(string) string { return "" }, &out, &stderr))
	assert.Contains(t, stderr.String(), "--site is required")
	assert.Contains(t, stderr.String(), "MAASFLOW_ADMIN_TOKEN")
}

// newConnectorCA is a connector CA with a fresh key, as the stack's.
func newConnectorCA(t *testing.T) *nodeid.CA {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	caPEM, err := nodeid.SelfSign(caKey, "maasflow connector CA", time.Now())
	require.NoError(t, err)
	ca, err := nodeid.NewCA(caPEM, caKey)
	require.NoError(t, err)
	return ca
}

// writeCertificateAnswer answers a connector certificate request as the
// admin API does (connectorCertificate in shared/api).
func writeCertificateAnswer(w http.ResponseWriter, ca *nodeid.CA, issued nodeid.Issued) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(map[string]any{"site_id": "site-a", "certificate_pem": issued.CertPEM, "ca_pem": ca.CertPEM(),
		"serial": issued.Serial, "certificate_not_after": issued.NotAfter,
		"trust_anchor_arn": "arn:aws:rolesanywhere:eu-west-1:1:trust-anchor/a", "profile_arn": "arn:aws:rolesanywhere:eu-west-1:1:profile/p",
		"role_arn": "arn:aws:iam::1:role/r", "queue_url": "https://sqs.eu-west-1.amazonaws.com/1/maasflow-prod-connector-site-a",
		"table": "maasflow-prod-connector"})
}
