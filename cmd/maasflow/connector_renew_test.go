package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/connector/rolesanywhere"
	"github.com/maasflow/maasflow/shared/nodeid"
)

// fakeRenewAPI renews as the API does: no token, the current certificate
// and a CSR over its key.
type fakeRenewAPI struct {
	t  *testing.T
	ca *nodeid.CA
	// otherKey: answer with a certificate over another key (a broken API).
	otherKey bool
}

func (f *fakeRenewAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	assert.Equal(f.t, "/api/v1/connectors/site-a/certificate", r.URL.Path)
	assert.Empty(f.t, r.Header.Get("Authorization"), "a renewal carries no admin token")
	var in struct {
		CertificatePEM string `json:"certificate_pem"`
		CSR            string `json:"csr"`
	}
	fail := func() { w.WriteHeader(http.StatusBadRequest) }
	if !assert.NoError(f.t, json.NewDecoder(r.Body).Decode(&in)) {
		fail()
		return
	}
	block, _ := pem.Decode([]byte(in.CertificatePEM))
	if !assert.NotNil(f.t, block, "the current certificate") {
		fail()
		return
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if !assert.NoError(f.t, err) {
		fail()
		return
	}
	csr, err := nodeid.ParseCSR(in.CSR)
	if !assert.NoError(f.t, err) {
		fail()
		return
	}
	assert.True(f.t, csr.PublicKey.(*ecdsa.PublicKey).Equal(cert.PublicKey), "the CSR is over the current certificate's key")
	if f.otherKey {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if !assert.NoError(f.t, err) {
			fail()
			return
		}
		der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
		if !assert.NoError(f.t, err) {
			fail()
			return
		}
		in.CSR = string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))
	}
	issued, err := f.ca.IssueConnector(in.CSR, "site-a", time.Now())
	if !assert.NoError(f.t, err) {
		fail()
		return
	}
	writeCertificateAnswer(w, f.ca, issued)
}

func TestConnectorRenewKeepsTheKeyAndNeedsNoToken(t *testing.T) {
	ca := newConnectorCA(t)
	enrollSrv := httptest.NewServer(&fakeCertAPI{t: t, ca: ca.WithTTL(time.Hour)})
	defer enrollSrv.Close()
	renewSrv := httptest.NewServer(&fakeRenewAPI{t: t, ca: ca.WithTTL(nodeid.ConnectorCertTTL)})
	defer renewSrv.Close()

	dir := filepath.Join(t.TempDir(), "conn")
	env := map[string]string{"MAASFLOW_API_URL": enrollSrv.URL, "MAASFLOW_ADMIN_TOKEN": "admin-token"}
	var out, errOut bytes.Buffer
	require.Equal(t, 0, (&enrollOptions{site: "site-a", dir: dir}).run(context.Background(), func(k string) string { return env[k] }, &out, &errOut), errOut.String())
	before, err := rolesanywhere.LoadIdentity(filepath.Join(dir, enrollCertFile), filepath.Join(dir, enrollKeyFile))
	require.NoError(t, err)
	keyBefore, err := os.ReadFile(filepath.Join(dir, enrollKeyFile))
	require.NoError(t, err)

	// No token in the environment: the renewal needs none.
	noToken := func(k string) string { return map[string]string{"MAASFLOW_API_URL": renewSrv.URL}[k] }
	o := &renewOptions{dir: dir, within: 72 * time.Hour}
	out.Reset()
	require.Equal(t, 0, o.run(context.Background(), noToken, time.Now, &out, &errOut), errOut.String())
	after, err := rolesanywhere.LoadIdentity(filepath.Join(dir, enrollCertFile), filepath.Join(dir, enrollKeyFile))
	require.NoError(t, err, "the new certificate is over the key on disk")
	assert.NotEqual(t, before.Cert.SerialNumber, after.Cert.SerialNumber, "a new certificate")
	assert.True(t, after.Cert.NotAfter.After(before.Cert.NotAfter), "a longer life")
	keyAfter, err := os.ReadFile(filepath.Join(dir, enrollKeyFile))
	require.NoError(t, err)
	assert.Equal(t, keyBefore, keyAfter, "the key stays")
	names, err := readConnectorNames(dir)
	require.NoError(t, err)
	assert.WithinDuration(t, after.Cert.NotAfter, names.NotAfter, time.Second, "connector.json follows the certificate")
	assert.Contains(t, out.String(), "renewed")

	// With more than --within left, nothing is sent.
	out.Reset()
	require.Equal(t, 0, o.run(context.Background(), func(string) string { return "http://127.0.0.1:1" }, time.Now, &out, &errOut), errOut.String())
	assert.Contains(t, out.String(), "not renewed")

	// Without a directory or an API URL it says what is missing.
	errOut.Reset()
	assert.Equal(t, 2, (&renewOptions{}).run(context.Background(), noToken, time.Now, &out, &errOut))
	assert.Contains(t, errOut.String(), "--dir is required")
}

// An answer whose certificate is not over the connector's key is refused
// before anything is written: written, it would leave the connector with a
// certificate it cannot use nor renew.
func TestConnectorRenewRefusesACertificateOverAnotherKey(t *testing.T) {
	ca := newConnectorCA(t)
	enrollSrv := httptest.NewServer(&fakeCertAPI{t: t, ca: ca.WithTTL(nodeid.ConnectorCertTTL)})
	defer enrollSrv.Close()
	renewSrv := httptest.NewServer(&fakeRenewAPI{t: t, ca: ca.WithTTL(nodeid.ConnectorCertTTL), otherKey: true})
	defer renewSrv.Close()
	dir := filepath.Join(t.TempDir(), "conn")
	env := map[string]string{"MAASFLOW_API_URL": enrollSrv.URL, "MAASFLOW_ADMIN_TOKEN": "admin-token"}
	var out, errOut bytes.Buffer
	require.Equal(t, 0, (&enrollOptions{site: "site-a", dir: dir}).run(context.Background(), func(k string) string { return env[k] }, &out, &errOut), errOut.String())
	certBefore, err := os.ReadFile(filepath.Join(dir, enrollCertFile))
	require.NoError(t, err)

	errOut.Reset()
	o := &renewOptions{dir: dir, apiURL: renewSrv.URL}
	assert.Equal(t, 1, o.run(context.Background(), func(string) string { return "" }, time.Now, &out, &errOut))
	assert.Contains(t, errOut.String(), "not over the connector's key")
	certAfter, err := os.ReadFile(filepath.Join(dir, enrollCertFile))
	require.NoError(t, err)
	assert.Equal(t, string(certBefore), string(certAfter), "the working certificate stays")
	_, err = rolesanywhere.LoadIdentity(filepath.Join(dir, enrollCertFile), filepath.Join(dir, enrollKeyFile))
	require.NoError(t, err)
}

func TestRunningConnectorRenewsWhenDue(t *testing.T) {
	ca := newConnectorCA(t)
	enrollSrv := httptest.NewServer(&fakeCertAPI{t: t, ca: ca.WithTTL(nodeid.ConnectorCertTTL)})
	defer enrollSrv.Close()
	renewSrv := httptest.NewServer(&fakeRenewAPI{t: t, ca: ca.WithTTL(nodeid.ConnectorCertTTL)})
	defer renewSrv.Close()
	dir := filepath.Join(t.TempDir(), "conn")
	env := map[string]string{"MAASFLOW_API_URL": enrollSrv.URL, "MAASFLOW_ADMIN_TOKEN": "admin-token"}
	var out, errOut bytes.Buffer
	require.Equal(t, 0, (&enrollOptions{site: "site-a", dir: dir}).run(context.Background(), func(k string) string { return env[k] }, &out, &errOut), errOut.String())
	serial := func() string {
		id, err := rolesanywhere.LoadIdentity(filepath.Join(dir, enrollCertFile), filepath.Join(dir, enrollKeyFile))
		require.NoError(t, err)
		return id.Cert.SerialNumber.String()
	}
	first := serial()

	// Four days into the certificate's seven: not due yet, nothing sent.
	logs := &lockedBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, nil))
	o := &renewOptions{dir: dir, apiURL: renewSrv.URL, within: renewBefore}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { o.loop(ctx, logger, time.Hour, time.Now); close(done) }()
	cancel()
	<-done
	assert.Equal(t, first, serial(), "more than three days left: not renewed")

	// Five days in: renewed at once, and logged.
	fiveDays := func() time.Time { return time.Now().Add(5 * 24 * time.Hour) }
	ctx, cancel = context.WithCancel(context.Background())
	done = make(chan struct{})
	go func() { o.loop(ctx, logger, time.Hour, fiveDays); close(done) }()
	require.Eventually(t, func() bool { return serial() != first }, 10*time.Second, 10*time.Millisecond, "renewed when due")
	cancel()
	<-done
	assert.Contains(t, logs.String(), "renewed")

	// An API that refuses is logged and tried again, the certificate left as it was.
	renewed := serial()
	bad := &renewOptions{dir: dir, apiURL: "http://127.0.0.1:1", within: renewBefore}
	ctx, cancel = context.WithCancel(context.Background())
	done = make(chan struct{})
	go func() {
		bad.loop(ctx, logger, time.Hour, func() time.Time { return time.Now().Add(7 * 24 * time.Hour) })
		close(done)
	}()
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "not renewed: tried again") }, 10*time.Second, 10*time.Millisecond)
	cancel()
	<-done
	assert.Equal(t, renewed, serial())
}

func TestRenewAPIURLNeedsTheCredentialsDir(t *testing.T) {
	var out, errOut bytes.Buffer
	code := runConnector(context.Background(), []string{"--site", "s", "--maas-url", "http://m", "--queue-url", "q", "--table", "t",
		"--renew-api-url", "https://api.example.com"}, &out, &errOut)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut.String(), "--renew-api-url renews the certificate in --credentials-dir")
}

// lockedBuffer is a log sink the test reads while the loop writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
