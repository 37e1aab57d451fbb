package nodeid

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)

func newCSR(t *testing.T, cn string) (string, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn}}, key)
	require.NoError(t, err)
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})), key
}

func parsePEMCert(t *testing.T, s string) *x509.Certificate {
	t.Helper()
	b, _ := pem.Decode([]byte(s))
	require.NotNil(t, b)
	c, err := x509.ParseCertificate(b.Bytes)
	require.NoError(t, err)
	return c
}

func TestIssueNamesTheNodeNotWhatTheCSRAsks(t *testing.T) {
	ca, err := LoadOrCreateLocal(t.TempDir(), t0)
	require.NoError(t, err)
	csr, key := newCSR(t, "someone-else")
	got, err := ca.Issue(csr, "node-1", t0)
	require.NoError(t, err)
	cert := parsePEMCert(t, got.CertPEM)
	assert.Equal(t, "node-1", cert.Subject.CommonName)
	require.Len(t, cert.URIs, 1)
	assert.Equal(t, "spiffe://maasflow/node/node-1", cert.URIs[0].String())
	assert.Empty(t, cert.DNSNames)
	assert.Equal(t, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, cert.ExtKeyUsage)
	assert.True(t, key.PublicKey.Equal(cert.PublicKey), "the certificate certifies the CSR's key")
	assert.Equal(t, t0.Add(DefaultCertTTL), got.NotAfter)
	assert.Equal(t, cert.SerialNumber.Text(16), got.Serial)

	id, serial, err := ca.Verify([]*x509.Certificate{cert}, t0.Add(time.Hour))
	require.NoError(t, err)
	assert.Equal(t, "node-1", id)
	assert.Equal(t, got.Serial, serial)
}

func TestVerifyTellsEachRefusalApart(t *testing.T) {
	ca, err := LoadOrCreateLocal(t.TempDir(), t0)
	require.NoError(t, err)
	other, err := LoadOrCreateLocal(t.TempDir(), t0)
	require.NoError(t, err)
	csr, _ := newCSR(t, "n")
	mine, err := ca.Issue(csr, "n1", t0)
	require.NoError(t, err)
	theirs, err := other.Issue(csr, "n1", t0)
	require.NoError(t, err)

	code := func(chain []*x509.Certificate, at time.Time) string {
		_, _, err := ca.Verify(chain, at)
		var ce *CertError
		require.ErrorAs(t, err, &ce)
		return ce.Code
	}
	assert.Equal(t, CertMissing, code(nil, t0))
	assert.Equal(t, CertExpired, code([]*x509.Certificate{parsePEMCert(t, mine.CertPEM)}, t0.Add(DefaultCertTTL+time.Second)))
	assert.Equal(t, CertUnknownCA, code([]*x509.Certificate{parsePEMCert(t, theirs.CertPEM)}, t0))
	// Another CA's expired certificate is unknown, not expired: expiry is
	// only told of certificates this CA signed.
	assert.Equal(t, CertUnknownCA, code([]*x509.Certificate{parsePEMCert(t, theirs.CertPEM)}, t0.Add(48*time.Hour)))
}

func TestIssueRefusesBadCSRs(t *testing.T) {
	ca, err := LoadOrCreateLocal(t.TempDir(), t0)
	require.NoError(t, err)
	good, _ := newCSR(t, "n")
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	rsaDER, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, rsaKey)
	require.NoError(t, err)
	b, _ := pem.Decode([]byte(good))
	tampered := append([]byte(nil), b.Bytes...)
	tampered[len(tampered)-5] ^= 0xff

	for name, in := range map[string]string{
		"empty":         "",
		"certificate":   ca.CertPEM(),
		"trailing text": good + "extra",
		"garbage":       "-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n",
		"rsa key":       string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: rsaDER})),
		"bad signature": string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: tampered})),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ca.Issue(in, "n1", t0)
			var ce *CSRError
			require.ErrorAs(t, err, &ce)
		})
	}
}

func TestLocalCAIsKeptAcrossStarts(t *testing.T) {
	dir := t.TempDir()
	first, err := LoadOrCreateLocal(dir, t0)
	require.NoError(t, err)
	st, err := os.Stat(filepath.Join(dir, LocalKeyFile))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	again, err := LoadOrCreateLocal(dir, t0.Add(time.Hour))
	require.NoError(t, err)
	assert.Equal(t, first.CertPEM(), again.CertPEM())

	csr, _ := newCSR(t, "n")
	issued, err := first.Issue(csr, "n1", t0)
	require.NoError(t, err)
	_, _, err = again.Verify([]*x509.Certificate{parsePEMCert(t, issued.CertPEM)}, t0)
	assert.NoError(t, err, "a restart keeps the nodes' certificates valid")
}

func TestLocalCARefusesADamagedKeyWithWhatToDo(t *testing.T) {
	for name, damage := range map[string]func(b []byte) []byte{
		"emptied":     func([]byte) []byte { return []byte{} },
		"cut short":   func(b []byte) []byte { return b[:len(b)/2] },
		"overwritten": func(b []byte) []byte { return []byte("not a key\n") },
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			_, err := LoadOrCreateLocal(dir, t0)
			require.NoError(t, err)
			keyPath := filepath.Join(dir, LocalKeyFile)
			b, err := os.ReadFile(keyPath)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(keyPath, damage(b), 0o600))

			_, err = LoadOrCreateLocal(dir, t0)
			var le *LocalCAError
			require.ErrorAs(t, err, &le)
			assert.Contains(t, err.Error(), "restore")
			assert.Contains(t, err.Error(), "reissued bootstrap bundle")
			after, rerr := os.ReadFile(keyPath)
			require.NoError(t, rerr)
			assert.Equal(t, damage(b), after, "a damaged key is never replaced")
			assert.NotContains(t, err.Error(), string(b[30:60]), "the key is never quoted")
		})
	}
	t.Run("key missing beside its certificate", func(t *testing.T) {
		dir := t.TempDir()
		_, err := LoadOrCreateLocal(dir, t0)
		require.NoError(t, err)
		require.NoError(t, os.Remove(filepath.Join(dir, LocalKeyFile)))
		_, err = LoadOrCreateLocal(dir, t0)
		var le *LocalCAError
		require.ErrorAs(t, err, &le)
	})
	t.Run("another CA's key", func(t *testing.T) {
		dir, other := t.TempDir(), t.TempDir()
		_, err := LoadOrCreateLocal(dir, t0)
		require.NoError(t, err)
		_, err = LoadOrCreateLocal(other, t0)
		require.NoError(t, err)
		b, err := os.ReadFile(filepath.Join(other, LocalKeyFile))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, LocalKeyFile), b, 0o600))
		_, err = LoadOrCreateLocal(dir, t0)
		var le *LocalCAError
		require.ErrorAs(t, err, &le)
	})
}
