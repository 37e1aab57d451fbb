package nodeid

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net/url"
	"strings"
	"time"
)

// DefaultCertTTL is a node certificate's life. It is short so that a
// stolen certificate is soon useless; the agent renews at two thirds of it.
const DefaultCertTTL = 24 * time.Hour

// uriPrefix is what NodeURI puts before the node id.
const uriPrefix = "spiffe://maasflow/node/"

// NodeURI is the URI SAN naming node id in its certificate.
func NodeURI(id string) string { return uriPrefix + id }

// CA is a deployment's node CA: its certificate and the signer of its key.
type CA struct {
	cert    *x509.Certificate
	certPEM string
	signer  crypto.Signer
	ttl     time.Duration
}

// NewCA pairs a CA certificate (PEM) with the signer of its key. It fails
// unless the certificate is a CA and the signer's public key is the
// certificate's.
func NewCA(certPEM string, signer crypto.Signer) (*CA, error) {
	cert, err := parseOneCert(certPEM)
	if err != nil {
		return nil, fmt.Errorf("node CA certificate: %w", err)
	}
	if !cert.IsCA {
		return nil, errors.New("node CA certificate: is not a CA certificate")
	}
	if !publicKeysEqual(cert.PublicKey, signer.Public()) {
		return nil, errors.New("node CA certificate: its public key is not the signer's")
	}
	return &CA{cert: cert, certPEM: certPEM, signer: signer, ttl: DefaultCertTTL}, nil
}

// WithTTL returns the CA issuing certificates that live ttl.
func (c *CA) WithTTL(ttl time.Duration) *CA {
	cp := *c
	cp.ttl = ttl
	return &cp
}

// CertPEM is the CA certificate nodes and the mutual TLS trust store trust.
func (c *CA) CertPEM() string { return c.certPEM }

// Pool is a pool holding the CA certificate alone.
func (c *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(c.cert)
	return p
}

// SelfSign makes a CA certificate named commonName for signer's key, valid
// for ten years from now. The signer signs it, so a KMS key makes its own
// certificate without its private half leaving KMS.
func SelfSign(signer crypto.Signer, commonName string, now time.Time) (string, error) {
	serial, err := newSerial()
	if err != nil {
		return "", err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName, Organization: []string{"maasflow"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, signer.Public(), signer)
	if err != nil {
		return "", fmt.Errorf("node CA: self-sign: %w", err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), nil
}

// Issued is a node certificate as handed to the node.
type Issued struct {
	CertPEM  string
	Serial   string // lower-case hex
	NotAfter time.Time
}

// CSRError says why a CSR was refused; it never quotes the CSR.
type CSRError struct{ Reason string }

func (e *CSRError) Error() string { return "certificate signing request " + e.Reason }

// Issue signs a certificate for nodeID over the public key of csrPEM. The
// CSR's own subject and SANs are ignored: the node is named by maasflow,
// never by what it asks for. The CSR must be signed by its key (proof the
// node holds it) and the key must be ECDSA P-256 or P-384.
func (c *CA) Issue(csrPEM, nodeID string, now time.Time) (Issued, error) {
	return c.issue(csrPEM, pkix.Name{CommonName: nodeID, Organization: []string{"maasflow node"}}, NodeURI(nodeID), now)
}

// issue signs a client certificate named subject and uri over the public
// key of csrPEM, living the CA's TTL.
func (c *CA) issue(csrPEM string, subject pkix.Name, uriSAN string, now time.Time) (Issued, error) {
	csr, err := ParseCSR(csrPEM)
	if err != nil {
		return Issued{}, err
	}
	uri, err := url.Parse(uriSAN)
	if err != nil {
		return Issued{}, fmt.Errorf("certificate URI: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return Issued{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      subject,
		URIs:         []*url.URL{uri},
		// A little back-dating absorbs clock skew between maasflow and the holder.
		NotBefore:   now.Add(-5 * time.Minute),
		NotAfter:    now.Add(c.ttl),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, csr.PublicKey, c.signer)
	if err != nil {
		return Issued{}, fmt.Errorf("sign certificate: %w", err)
	}
	return Issued{
		CertPEM:  string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		Serial:   serial.Text(16),
		NotAfter: tmpl.NotAfter,
	}, nil
}

// ParseCSR parses and checks a PEM CSR: one CERTIFICATE REQUEST block,
// signed by its own ECDSA P-256 or P-384 key.
func ParseCSR(csrPEM string) (*x509.CertificateRequest, error) {
	block, rest := pem.Decode([]byte(csrPEM))
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, &CSRError{Reason: "must be one PEM CERTIFICATE REQUEST block"}
	}
	if len(bytes.TrimSpace(rest)) != 0 {
		return nil, &CSRError{Reason: "must hold nothing after its PEM block"}
	}
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, &CSRError{Reason: "is not a valid PKCS #10 request"}
	}
	if err := csr.CheckSignature(); err != nil {
		return nil, &CSRError{Reason: "is not signed by its own key"}
	}
	key, ok := csr.PublicKey.(*ecdsa.PublicKey)
	if !ok || (key.Curve != elliptic.P256() && key.Curve != elliptic.P384()) {
		return nil, &CSRError{Reason: "must carry an ECDSA P-256 or P-384 public key"}
	}
	return csr, nil
}

// Refusal codes of a presented node certificate; the node endpoints answer
// them as they are (docs/api.md "Node endpoints").
const (
	CertMissing   = "node_cert_missing"
	CertExpired   = "node_cert_expired"
	CertUnknownCA = "node_cert_unknown_ca"
	CertWrongNode = "node_cert_wrong_node"
)

// CertError is a refused node certificate: Code is one of the Cert* codes.
type CertError struct {
	Code   string
	Reason string
}

func (e *CertError) Error() string { return e.Code + ": " + e.Reason }

// Verify checks a presented chain (leaf first) against the CA at now and
// returns the node id its URI SAN names. Expiry is told apart from an
// unknown CA so an agent knows to recover rather than give up.
func (c *CA) Verify(chain []*x509.Certificate, now time.Time) (nodeID string, serial string, err error) {
	if len(chain) == 0 {
		return "", "", &CertError{Code: CertMissing, Reason: "no client certificate was presented"}
	}
	leaf := chain[0]
	inter := x509.NewCertPool()
	for _, ic := range chain[1:] {
		inter.AddCert(ic)
	}
	opts := x509.VerifyOptions{Roots: c.Pool(), Intermediates: inter, CurrentTime: now,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if _, verr := leaf.Verify(opts); verr != nil {
		var inv x509.CertificateInvalidError
		if errors.As(verr, &inv) && inv.Reason == x509.Expired {
			// Only a certificate this CA signed is told it expired.
			if leaf.CheckSignatureFrom(c.cert) == nil {
				return "", "", &CertError{Code: CertExpired, Reason: "the client certificate is expired or not yet valid"}
			}
		}
		return "", "", &CertError{Code: CertUnknownCA, Reason: "the client certificate is not issued by this deployment's node CA"}
	}
	id, ok := NodeIDOf(leaf)
	if !ok {
		return "", "", &CertError{Code: CertUnknownCA, Reason: "the client certificate names no node"}
	}
	return id, leaf.SerialNumber.Text(16), nil
}

// NodeIDOf is the node id the certificate's single node URI SAN names.
func NodeIDOf(cert *x509.Certificate) (string, bool) {
	var id string
	for _, u := range cert.URIs {
		if s := u.String(); strings.HasPrefix(s, uriPrefix) {
			if id != "" {
				return "", false
			}
			id = strings.TrimPrefix(s, uriPrefix)
		}
	}
	return id, id != ""
}

func parseOneCert(certPEM string) (*x509.Certificate, error) {
	block, _ := pem.Decode([]byte(certPEM))
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("is not a PEM CERTIFICATE block")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, errors.New("does not parse as X.509")
	}
	return cert, nil
}

func publicKeysEqual(a, b crypto.PublicKey) bool {
	ak, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && ak.Equal(b)
}

func newSerial() (*big.Int, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("certificate serial: %w", err)
	}
	return serial.Add(serial, big.NewInt(1)), nil
}
