package rolesanywhere_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/connector/rolesanywhere"
	"github.com/maasflow/maasflow/shared/nodeid"
)

const (
	anchorARN  = "arn:aws:rolesanywhere:eu-west-1:111122223333:trust-anchor/a1"
	profileARN = "arn:aws:rolesanywhere:eu-west-1:111122223333:profile/p1"
	roleARN    = "arn:aws:iam::111122223333:role/maasflow-prod-connector"
)

// connectorFiles issues site's connector certificate from a fresh
// connector CA and writes it and its key; it returns their paths.
func connectorFiles(t *testing.T, site string) (certFile, keyFile string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	caPEM, err := nodeid.SelfSign(caKey, "maasflow connector CA", time.Now())
	require.NoError(t, err)
	ca, err := nodeid.NewCA(caPEM, caKey)
	require.NoError(t, err)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "whatever"}}, key)
	require.NoError(t, err)
	issued, err := ca.IssueConnector(string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})), site, time.Now())
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "connector.crt"), filepath.Join(dir, "connector.key")
	require.NoError(t, os.WriteFile(certFile, []byte(issued.CertPEM), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600))
	return certFile, keyFile
}

// fakeRolesAnywhere checks each CreateSession's X.509 signature as Roles
// Anywhere documents it and answers credentials expiring after ttl.
type fakeRolesAnywhere struct {
	t   *testing.T
	ttl time.Duration

	mu       sync.Mutex
	sessions int
	bodies   []map[string]any
}

func (f *fakeRolesAnywhere) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	t := f.t
	body, _ := io.ReadAll(r.Body)
	assert.Equal(t, http.MethodPost, r.Method)
	assert.Equal(t, "/sessions", r.URL.Path)

	// The certificate stands for the access key.
	der, err := base64.StdEncoding.DecodeString(r.Header.Get("X-Amz-X509"))
	if !assert.NoError(t, err) {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	cert, err := x509.ParseCertificate(der)
	if !assert.NoError(t, err) {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	amzDate := r.Header.Get("X-Amz-Date")
	scope := amzDate[:8] + "/eu-west-1/rolesanywhere/aws4_request"
	auth := r.Header.Get("Authorization")
	prefix := "AWS4-X509-ECDSA-SHA256 Credential=" + cert.SerialNumber.String() + "/" + scope +
		", SignedHeaders=content-type;host;x-amz-date;x-amz-x509, Signature="
	if !assert.True(t, strings.HasPrefix(auth, prefix), "authorization %q", auth) {
		w.WriteHeader(http.StatusForbidden)
		return
	}
	sig, err := hex.DecodeString(strings.TrimPrefix(auth, prefix))
	if !assert.NoError(t, err) {
		w.WriteHeader(http.StatusForbidden)
		return
	}
	bodySum := sha256.Sum256(body)
	canonical := "POST\n/sessions\n\n" +
		"content-type:application/json\nhost:" + r.Host + "\nx-amz-date:" + amzDate + "\nx-amz-x509:" + r.Header.Get("X-Amz-X509") + "\n\n" +
		"content-type;host;x-amz-date;x-amz-x509\n" + hex.EncodeToString(bodySum[:])
	canonicalSum := sha256.Sum256([]byte(canonical))
	toSign := "AWS4-X509-ECDSA-SHA256\n" + amzDate + "\n" + scope + "\n" + hex.EncodeToString(canonicalSum[:])
	digest := sha256.Sum256([]byte(toSign))
	if !assert.True(t, ecdsa.VerifyASN1(cert.PublicKey.(*ecdsa.PublicKey), digest[:], sig), "the signature verifies with the certificate's key") {
		w.WriteHeader(http.StatusForbidden)
		return
	}
	var in map[string]any
	if !assert.NoError(t, json.Unmarshal(body, &in)) {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.sessions++
	n := f.sessions
	f.bodies = append(f.bodies, in)
	f.mu.Unlock()
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(map[string]any{"credentialSet": []any{map[string]any{"credentials": map[string]any{
		"accessKeyId": "ASIA" + strings.Repeat("X", n), "secretAccessKey": "secret", "sessionToken": "token",
		"expiration": time.Now().Add(f.ttl).UTC().Format(time.RFC3339),
	}}}, "subjectArn": "arn:aws:rolesanywhere:eu-west-1:111122223333:subject/s"})
}

func (f *fakeRolesAnywhere) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sessions
}

func provider(t *testing.T, url string) *rolesanywhere.Provider {
	t.Helper()
	certFile, keyFile := connectorFiles(t, "site-a")
	return &rolesanywhere.Provider{CertFile: certFile, KeyFile: keyFile,
		TrustAnchorARN: anchorARN, ProfileARN: profileARN, RoleARN: roleARN, Endpoint: url}
}

func TestCreateSessionIsSignedWithTheCertificate(t *testing.T) {
	fake := &fakeRolesAnywhere{t: t, ttl: time.Hour}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	creds, err := provider(t, srv.URL).Retrieve(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "ASIAX", creds.AccessKeyID)
	assert.Equal(t, "token", creds.SessionToken)
	assert.True(t, creds.CanExpire)
	assert.WithinDuration(t, time.Now().Add(time.Hour), creds.Expires, time.Minute)
	require.Len(t, fake.bodies, 1)
	assert.Equal(t, map[string]any{"durationSeconds": float64(3600), "profileArn": profileARN, "roleArn": roleARN, "trustAnchorArn": anchorARN},
		fake.bodies[0])
}

// The credentials cache asks for a new session once the credentials are
// within its expiry window, and not before.
func TestCredentialsAreRenewedBeforeTheyExpire(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ttl      time.Duration
		sessions int
	}{
		{"an hour left: the cached session serves", time.Hour, 1},
		{"inside the window: a new session", 2 * time.Minute, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := &fakeRolesAnywhere{t: t, ttl: tc.ttl}
			srv := httptest.NewServer(fake)
			defer srv.Close()
			cache := aws.NewCredentialsCache(provider(t, srv.URL), func(o *aws.CredentialsCacheOptions) { o.ExpiryWindow = 5 * time.Minute })
			for range 2 {
				_, err := cache.Retrieve(context.Background())
				require.NoError(t, err)
			}
			assert.Equal(t, tc.sessions, fake.count())
		})
	}
}

func TestRefusalsSayWhy(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, `{"message":"Untrusted certificate. Insufficient certificate"}`)
	}))
	defer srv.Close()
	_, err := provider(t, srv.URL).Retrieve(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "403")
	assert.Contains(t, err.Error(), "Untrusted certificate")

	p := provider(t, srv.URL)
	otherCert, _ := connectorFiles(t, "site-b")
	p.CertFile = otherCert
	_, err = p.Retrieve(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "is not the key of certificate")
	assert.NotContains(t, err.Error(), "PRIVATE KEY")
}

func TestIssuedConnectorCertificateNamesTheSite(t *testing.T) {
	certFile, keyFile := connectorFiles(t, "site-a")
	id, err := rolesanywhere.LoadIdentity(certFile, keyFile)
	require.NoError(t, err)
	assert.Equal(t, "site-a", id.Cert.Subject.CommonName, "Roles Anywhere's x509Subject/CN tag is the site")
}
