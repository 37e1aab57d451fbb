package enroll

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"github.com/maasflow/maasflow/shared/nodeid"
)

// devCA is generated at most once per process: local mode and tests share
// one self-signed CA so every bundle rendered in a run carries the same
// fingerprint. It is the only package-level state here, immutable once made.
var devCA = sync.OnceValues(func() (string, error) { return NewSelfSignedCA("maasflow local development CA") })

// DevCA returns the PEM of a self-signed ECDSA P-256 CA certificate made once
// per process, for local mode (the demo site's bootstrap policy) and tests.
// Its private key is discarded: node certificates come from the node CA
// (shared/nodeid), never from this one, and a key that never leaves memory
// cannot leak.
func DevCA() (certPEM string, err error) {
	return devCA()
}

// NewSelfSignedCA returns the PEM of a fresh self-signed ECDSA P-256 CA
// certificate named commonName, its key discarded as DevCA's is. DevCA is
// one made once per process; tests that need a CA other than it (a
// deployment's bundle beside a site's) make their own. The certificate is
// nodeid.SelfSign's, the one CA template of the module.
func NewSelfSignedCA(commonName string) (certPEM string, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", fmt.Errorf("self-signed CA: generate key: %w", err)
	}
	// The wall clock is right here: the certificate's validity is checked
	// by TLS stacks against real time, whatever clock the caller runs on.
	return nodeid.SelfSign(key, commonName, time.Now().UTC())
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
