package nodeid

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// File names of the local node CA in the data directory.
const (
	LocalKeyFile  = "node-ca.key"
	LocalCertFile = "node-ca.crt"
)

// LocalCAError is a local node CA that cannot be used as it is; the
// message says what to do. It never quotes the key file.
type LocalCAError struct {
	Path   string
	Reason string
}

func (e *LocalCAError) Error() string {
	return fmt.Sprintf("node CA %s %s: restore %s and %s from a backup, or move both aside to make a new node CA (every enrolled node must then be given a reissued bootstrap bundle)",
		e.Path, e.Reason, LocalKeyFile, LocalCertFile)
}

// LoadOrCreateLocal loads the node CA of local mode from dir, making it on
// first use: an ECDSA P-256 key (PKCS #8 PEM, mode 0600) and a self-signed
// certificate beside it. A key file that is empty, cut short or not the
// certificate's key is refused, never replaced: replacing it would silently
// disown every node it certified.
func LoadOrCreateLocal(dir string, now time.Time) (*CA, error) {
	keyPath := filepath.Join(dir, LocalKeyFile)
	certPath := filepath.Join(dir, LocalCertFile)
	keyPEM, kerr := os.ReadFile(keyPath)   //nolint:gosec // G304: a file in the stack's data directory
	certPEM, cerr := os.ReadFile(certPath) //nolint:gosec // G304: a file in the stack's data directory
	switch {
	case errors.Is(kerr, fs.ErrNotExist) && errors.Is(cerr, fs.ErrNotExist):
		return createLocal(keyPath, certPath, now)
	case kerr != nil && !errors.Is(kerr, fs.ErrNotExist):
		return nil, fmt.Errorf("read node CA key: %w", kerr)
	case cerr != nil && !errors.Is(cerr, fs.ErrNotExist):
		return nil, fmt.Errorf("read node CA certificate: %w", cerr)
	case kerr != nil:
		return nil, &LocalCAError{Path: keyPath, Reason: "is missing while its certificate exists"}
	case cerr != nil:
		return nil, &LocalCAError{Path: certPath, Reason: "is missing while its key exists"}
	}
	block, rest := pem.Decode(keyPEM)
	if block == nil || block.Type != "PRIVATE KEY" || len(rest) != 0 && len(trimSpace(rest)) != 0 {
		return nil, &LocalCAError{Path: keyPath, Reason: fmt.Sprintf("holds %d bytes that are not one PEM PRIVATE KEY block: it was emptied, cut short or overwritten", len(keyPEM))}
	}
	parsed, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, &LocalCAError{Path: keyPath, Reason: "does not parse as a PKCS #8 key: it is damaged"}
	}
	key, ok := parsed.(*ecdsa.PrivateKey)
	if !ok {
		return nil, &LocalCAError{Path: keyPath, Reason: "is not an ECDSA key"}
	}
	ca, err := NewCA(string(certPEM), key)
	if err != nil {
		return nil, &LocalCAError{Path: certPath, Reason: "does not match its key or is damaged (" + err.Error() + ")"}
	}
	return ca, nil
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\n' || b[0] == '\r' || b[0] == '\t') {
		b = b[1:]
	}
	return b
}

func createLocal(keyPath, certPath string, now time.Time) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("node CA: generate key: %w", err)
	}
	certPEM, err := SelfSign(key, "maasflow local node CA", now)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("node CA: encode key: %w", err)
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	// The certificate goes first: a crash between the two writes leaves a
	// certificate without a key, refused at the next start with what to do,
	// never a key without the certificate that names it.
	if err := writeFileAtomic(certPath, []byte(certPEM), 0o644); err != nil {
		return nil, err
	}
	if err := writeFileAtomic(keyPath, keyPEM, 0o600); err != nil {
		return nil, err
	}
	return NewCA(certPEM, key)
}

func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	if err := tmp.Chmod(mode); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	return nil
}
