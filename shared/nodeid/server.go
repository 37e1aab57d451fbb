package nodeid

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"net"
	"time"
)

// ServerCertTTL is the life of a node listener's server certificate made
// at start (local mode makes a new one at every start).
const ServerCertTTL = 90 * 24 * time.Hour

// IssueServer makes a server certificate for the node listener at host (an
// IP address or a DNS name), with a fresh key kept in memory only. Nodes
// trust it through the node CA they got at enrollment (ca_pem), so the
// node endpoints need no other CA.
func (c *CA) IssueServer(host string, now time.Time) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("node listener key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: host, Organization: []string{"maasflow node listener"}},
		NotBefore:    now.Add(-5 * time.Minute),
		NotAfter:     now.Add(ServerCertTTL),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if ip := net.ParseIP(host); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	} else {
		tmpl.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &key.PublicKey, c.signer)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("sign node listener certificate: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// ServerTLSConfig is the node listener's TLS: it asks every client for a
// certificate but leaves the verdict to the handler (Verify), so that a
// missing, expired, foreign or another node's certificate each gets its
// own documented answer instead of a failed handshake.
func ServerTLSConfig(cert tls.Certificate) *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.RequestClientCert,
	}
}
