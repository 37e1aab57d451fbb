package nodeid

import (
	"context"
	"crypto"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/kms/types"
)

// KMSAPI is the part of the KMS client the signer uses.
type KMSAPI interface {
	GetPublicKey(ctx context.Context, in *kms.GetPublicKeyInput, optFns ...func(*kms.Options)) (*kms.GetPublicKeyOutput, error)
	Sign(ctx context.Context, in *kms.SignInput, optFns ...func(*kms.Options)) (*kms.SignOutput, error)
}

// kmsSignTimeout bounds one Sign call: crypto.Signer carries no context.
const kmsSignTimeout = 10 * time.Second

// KMSSigner is a crypto.Signer over a KMS asymmetric ECC_NIST_P256 key of
// usage SIGN_VERIFY: x509.CreateCertificate hands it the SHA-256 digest of
// the certificate body and KMS signs that digest (MessageType DIGEST), so
// the CA's private key never leaves KMS. KMS returns the ASN.1 DER ECDSA
// signature x509 expects.
type KMSSigner struct {
	api   KMSAPI
	keyID string
	pub   crypto.PublicKey
}

// NewKMSSigner reads the key's public half and checks it is a P-256
// signing key.
func NewKMSSigner(ctx context.Context, api KMSAPI, keyID string) (*KMSSigner, error) {
	out, err := api.GetPublicKey(ctx, &kms.GetPublicKeyInput{KeyId: aws.String(keyID)})
	if err != nil {
		return nil, fmt.Errorf("node CA key: get public key: %w", err)
	}
	if out.KeySpec != types.KeySpecEccNistP256 || out.KeyUsage != types.KeyUsageTypeSignVerify {
		return nil, fmt.Errorf("node CA key: is %s for %s, want %s for %s", out.KeySpec, out.KeyUsage, types.KeySpecEccNistP256, types.KeyUsageTypeSignVerify)
	}
	pub, err := x509.ParsePKIXPublicKey(out.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("node CA key: parse public key: %w", err)
	}
	return &KMSSigner{api: api, keyID: keyID, pub: pub}, nil
}

// Public is the key's public half.
func (s *KMSSigner) Public() crypto.PublicKey { return s.pub }

// Sign has KMS sign a SHA-256 digest.
func (s *KMSSigner) Sign(_ io.Reader, digest []byte, opts crypto.SignerOpts) ([]byte, error) {
	if opts.HashFunc() != crypto.SHA256 {
		return nil, errors.New("node CA key: KMS signs SHA-256 digests only")
	}
	ctx, cancel := context.WithTimeout(context.Background(), kmsSignTimeout)
	defer cancel()
	out, err := s.api.Sign(ctx, &kms.SignInput{
		KeyId:            aws.String(s.keyID),
		Message:          digest,
		MessageType:      types.MessageTypeDigest,
		SigningAlgorithm: types.SigningAlgorithmSpecEcdsaSha256,
	})
	if err != nil {
		return nil, fmt.Errorf("node CA key: sign: %w", err)
	}
	return out.Signature, nil
}
