package awsenv

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/kms/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/config"
	"github.com/maasflow/maasflow/shared/nodeid"
)

// memKMS signs with an in-memory P-256 key as KMS does (DIGEST, ASN.1 DER).
type memKMS struct{ key *ecdsa.PrivateKey }

func (m memKMS) GetPublicKey(context.Context, *kms.GetPublicKeyInput, ...func(*kms.Options)) (*kms.GetPublicKeyOutput, error) {
	der, err := x509.MarshalPKIXPublicKey(&m.key.PublicKey)
	return &kms.GetPublicKeyOutput{PublicKey: der, KeySpec: types.KeySpecEccNistP256, KeyUsage: types.KeyUsageTypeSignVerify}, err
}

func (m memKMS) Sign(_ context.Context, in *kms.SignInput, _ ...func(*kms.Options)) (*kms.SignOutput, error) {
	sig, err := ecdsa.SignASN1(rand.Reader, m.key, in.Message)
	return &kms.SignOutput{Signature: sig}, err
}

func TestNodeCAFromTheEnvironment(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	fake := func() nodeid.KMSAPI { return memKMS{key: key} }
	env := func(vars map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	}

	ca, url, err := nodeCA(context.Background(), env(nil), fake)
	require.NoError(t, err)
	assert.Nil(t, ca, "no key named: no node CA")
	assert.Empty(t, url)

	ca, url, err = nodeCA(context.Background(), env(map[string]string{
		config.EnvNodeCAKeyID: "alias/node-ca", config.EnvNodeMTLSURL: "https://nodes.example"}), fake)
	require.NoError(t, err)
	assert.Equal(t, "https://nodes.example", url)
	csrKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "n"}}, csrKey)
	require.NoError(t, err)
	issued, err := ca.Issue(string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})), "n1", time.Now())
	require.NoError(t, err)

	// A later cold start self-signs another CA certificate for the same
	// key: it verifies the certificates the first one issued.
	again, _, err := nodeCA(context.Background(), env(map[string]string{config.EnvNodeCAKeyID: "alias/node-ca"}), fake)
	require.NoError(t, err)
	b, _ := pem.Decode([]byte(issued.CertPEM))
	cert, err := x509.ParseCertificate(b.Bytes)
	require.NoError(t, err)
	id, _, err := again.Verify([]*x509.Certificate{cert}, time.Now())
	require.NoError(t, err)
	assert.Equal(t, "n1", id)

	_, _, err = nodeCA(context.Background(), env(map[string]string{config.EnvNodeCAKeyID: "k", config.EnvNodeCACert: "junk"}), fake)
	require.Error(t, err)
	assert.Contains(t, err.Error(), config.EnvNodeCACert)
}
