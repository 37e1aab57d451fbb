package enroll

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"sync"
	"time"
)

// devCA is generated at most once per process: local mode and tests share
// one self-signed CA so every bundle rendered in a run carries the same
// fingerprint. It is the only package-level state here, immutable once made.
var devCA = sync.OnceValues(func() (string, error) { return NewSelfSignedCA("maasflow local development CA") })

// DevCA returns the PEM of a self-signed ECDSA P-256 CA certificate made once
// per process, for local mode (the demo site's bootstrap policy) and tests.
// Its private key is discarded: nothing in local mode issues node
// certificates yet, and a key that never leaves memory cannot leak.
func DevCA() (certPEM string, err error) {
	return devCA()
}

// NewSelfSignedCA returns the PEM of a fresh self-signed ECDSA P-256 CA
// certificate named commonName, its key discarded as DevCA's is. DevCA is
// one made once per process; tests that need a CA other than it (a
// deployment's bundle beside a site's) make their own.
func NewSelfSignedCA(commonName string) (certPEM string, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", fmt.Errorf("self-signed CA: generate key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return "", fmt.Errorf("self-signed CA: serial: %w", err)
	}
	// The wall clock is right here: the certificate's validity is checked
	// by TLS stacks against real time, whatever clock the caller runs on.
	now := time.Now().UTC()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName, Organization: []string{"maasflow"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return "", fmt.Errorf("self-signed CA: create certificate: %w", err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), nil
}

// DevPackage is the node-agent package reference local mode and tests put in
// bundles. The simulator never pulls it; the digest is a fixed, well-formed
// value derived from the reference so it reads as what it is.
func DevPackage() Package {
	const ref = "registry.maasflow.local/gpuaas/node-agent:dev"
	sum := sha256.Sum256([]byte(ref))
	return Package{
		OCIRef:           ref,
		Digest:           "sha256:" + hex.EncodeToString(sum[:]),
		PullDeliveryMode: PullAnonymous,
		InstallRoot:      DefaultInstallRoot,
		EnvFilePath:      DefaultEnvFilePath,
		SystemdUnitName:  DefaultSystemdUnitName,
	}
}
