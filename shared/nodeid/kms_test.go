package nodeid

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeKMS answers the KMS JSON protocol (X-Amz-Target TrentService.*) for
// one P-256 signing key, as KMS does: GetPublicKey returns the SPKI DER,
// Sign with MessageType DIGEST signs the given digest and returns an ASN.1
// DER ECDSA signature.
type fakeKMS struct {
	key   *ecdsa.PrivateKey
	keyID string
	signs atomic.Int32
	spec  string
}

func (f *fakeKMS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var in map[string]any
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	if in["KeyId"] != f.keyID {
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]string{"__type": "NotFoundException", "message": "key not found"})
		return
	}
	switch r.Header.Get("X-Amz-Target") {
	case "TrentService.GetPublicKey":
		der, _ := x509.MarshalPKIXPublicKey(&f.key.PublicKey)
		_ = json.NewEncoder(w).Encode(map[string]any{"KeyId": f.keyID, "PublicKey": der, "KeySpec": f.spec,
			"KeyUsage": "SIGN_VERIFY", "SigningAlgorithms": []string{"ECDSA_SHA_256"}})
	case "TrentService.Sign":
		if in["MessageType"] != "DIGEST" || in["SigningAlgorithm"] != "ECDSA_SHA_256" {
			http.Error(w, "unexpected sign request", http.StatusBadRequest)
			return
		}
		msg, err := base64.StdEncoding.DecodeString(in["Message"].(string))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		sig, err := ecdsa.SignASN1(rand.Reader, f.key, msg)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		f.signs.Add(1)
		_ = json.NewEncoder(w).Encode(map[string]any{"KeyId": f.keyID, "Signature": sig, "SigningAlgorithm": "ECDSA_SHA_256"})
	default:
		http.Error(w, "unknown target", http.StatusBadRequest)
	}
}

func newFakeKMS(t *testing.T, spec string) (*fakeKMS, *kms.Client) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	f := &fakeKMS{key: key, keyID: "alias/maasflow-node-ca", spec: spec}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	client := kms.New(kms.Options{
		Region:       "eu-west-1",
		BaseEndpoint: aws.String(srv.URL),
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", ""),
	})
	return f, client
}

func TestKMSSignerIssuesNodeCertificatesWithoutTheKeyLeavingKMS(t *testing.T) {
	ctx := context.Background()
	f, client := newFakeKMS(t, "ECC_NIST_P256")
	signer, err := NewKMSSigner(ctx, client, f.keyID)
	require.NoError(t, err)
	assert.True(t, f.key.PublicKey.Equal(signer.Public()))

	caPEM, err := SelfSign(signer, "maasflow node CA", t0)
	require.NoError(t, err)
	ca, err := NewCA(caPEM, signer)
	require.NoError(t, err)
	csr, _ := newCSR(t, "n")
	issued, err := ca.Issue(csr, "node-7", t0)
	require.NoError(t, err)
	assert.Equal(t, int32(2), f.signs.Load(), "KMS signed the CA certificate and the node certificate")

	id, _, err := ca.Verify([]*x509.Certificate{parsePEMCert(t, issued.CertPEM)}, t0.Add(time.Minute))
	require.NoError(t, err)
	assert.Equal(t, "node-7", id)
}

func TestKMSSignerRefusesAKeyOfAnotherSpec(t *testing.T) {
	f, client := newFakeKMS(t, "RSA_2048")
	_, err := NewKMSSigner(context.Background(), client, f.keyID)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ECC_NIST_P256")
}

func TestKMSSignerSurfacesKMSErrors(t *testing.T) {
	_, client := newFakeKMS(t, "ECC_NIST_P256")
	_, err := NewKMSSigner(context.Background(), client, "alias/unknown")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "NotFoundException")
}
