package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/kms/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/nodeid"
)

// memoryKMS is a KMS key held in memory: it answers GetPublicKey and signs
// digests, as KMS does for an ECC_NIST_P256 SIGN_VERIFY key.
type memoryKMS struct {
	key   *ecdsa.PrivateKey
	signs int
}

func (m *memoryKMS) GetPublicKey(_ context.Context, _ *kms.GetPublicKeyInput, _ ...func(*kms.Options)) (*kms.GetPublicKeyOutput, error) {
	der, err := x509.MarshalPKIXPublicKey(&m.key.PublicKey)
	if err != nil {
		return nil, err
	}
	return &kms.GetPublicKeyOutput{PublicKey: der, KeySpec: types.KeySpecEccNistP256, KeyUsage: types.KeyUsageTypeSignVerify}, nil
}

func (m *memoryKMS) Sign(_ context.Context, in *kms.SignInput, _ ...func(*kms.Options)) (*kms.SignOutput, error) {
	if in.MessageType != types.MessageTypeDigest {
		return nil, errors.New("want a digest")
	}
	m.signs++
	sig, err := ecdsa.SignASN1(rand.Reader, m.key, in.Message)
	return &kms.SignOutput{Signature: sig}, err
}

// TestNodeCAPrintsTheCertificateTheKeySigned: the printed certificate is a
// CA over the KMS key's public half, signed by KMS, and works as the node
// CA of that key.
func TestNodeCAPrintsTheCertificateTheKeySigned(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	mem := &memoryKMS{key: key}
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"-key", "alias/node-ca"}, &out, func() (nodeid.KMSAPI, error) { return mem, nil }))
	assert.Equal(t, 1, mem.signs, "KMS signed the certificate")
	signer, err := nodeid.NewKMSSigner(context.Background(), mem, "alias/node-ca")
	require.NoError(t, err)
	ca, err := nodeid.NewCA(out.String(), signer)
	require.NoError(t, err, "the certificate is a CA over the key")
	assert.Equal(t, out.String(), ca.CertPEM())
	_, err = ca.IssueServer("127.0.0.1", time.Now())
	require.NoError(t, err, "it issues")
}

func TestNodeCANeedsAKey(t *testing.T) {
	err := run(context.Background(), nil, &bytes.Buffer{}, func() (nodeid.KMSAPI, error) {
		t.Fatal("no KMS call without a key")
		return nil, nil //nolint:nilnil // unreachable
	})
	require.ErrorContains(t, err, "-key is required")
}
