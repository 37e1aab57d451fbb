package api

import (
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"time"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/logfield"
	"github.com/maasflow/maasflow/shared/nodeid"
)

// A connector renews its own certificate (docs/decisions.md, "A connector
// renews its certificate with its key"): it presents its current
// certificate and a CSR for the same key. The CSR's self-signature proves
// it holds the certificate's key, so no admin token is needed; a replayed
// request yields only a certificate for a key the replayer does not hold.

// connectorRenewRequest is what a connector sends to renew.
type connectorRenewRequest struct {
	CertificatePEM string `json:"certificate_pem"`
	CSR            string `json:"csr"`
}

// renewConnectorCertificate signs a new certificate for the connector of
// site {id} that holds a current one.
func (s *server) renewConnectorCertificate(rq *request) (int, any, error) {
	var in connectorRenewRequest
	if err := decodeBody(rq, &in); err != nil {
		return 0, nil, err
	}
	c := s.connectors
	if c.Issuer == nil {
		return 0, nil, &StatusError{Status: http.StatusServiceUnavailable, Code: CodeUnavailable,
			Message: "this deployment has no connector CA: connectors run with maasflow local's site token"}
	}
	if in.CertificatePEM == "" {
		return 0, nil, fieldError("certificate_pem", "is required: the connector's current certificate (connector.crt)")
	}
	if in.CSR == "" {
		return 0, nil, fieldError("csr", "is required: a PEM certificate signing request over the current certificate's key")
	}
	id := rq.r.PathValue("id")
	now := s.clock.Now().UTC()
	cert, err := currentConnectorCert(in.CertificatePEM, c.Issuer.CertPEM(), id, now)
	if err != nil {
		return 0, nil, &StatusError{Status: http.StatusUnauthorized, Code: CodeUnauthorized, Field: "certificate_pem",
			Message: err.Error() + ": renew with `maasflow connector enroll` and an admin token"}
	}
	csr, err := nodeid.ParseCSR(in.CSR)
	if err != nil {
		return 0, nil, csrFieldError(err)
	}
	if !sameKey(csr.PublicKey, cert.PublicKey) {
		return 0, nil, &StatusError{Status: http.StatusUnauthorized, Code: CodeUnauthorized, Field: "csr",
			Message: "the CSR's key is not the current certificate's: a renewal keeps the connector's key (a new key needs `maasflow connector enroll`)"}
	}
	rq.authenticated = true
	site, err := s.store.GetSite(rq.ctx(), id)
	if err != nil {
		return 0, nil, err
	}
	if !site.ThroughConnector() {
		return 0, nil, conflictError("connectivity", "site %s reaches MAAS over the VPC path: its connector gets no certificate", id)
	}
	if site.Status != domain.StatusActive {
		return 0, nil, conflictError("status", "site %s is %s: its connector gets no certificate", id, site.Status)
	}
	issued, err := c.Issuer.IssueConnector(in.CSR, site.ID, now)
	if err != nil {
		return 0, nil, csrFieldError(err)
	}
	rq.log.InfoContext(rq.ctx(), "connector certificate renewed", logfield.SiteID, site.ID,
		"serial", issued.Serial, "previous_serial", fmt.Sprintf("%x", cert.SerialNumber), "not_after", issued.NotAfter)
	return http.StatusCreated, s.connectorCertificateOf(site, issued), nil
}

// currentConnectorCert parses certPEM and checks that it is a certificate
// the connector CA (caPEM) signed for site's connector and that it is valid
// at now.
func currentConnectorCert(certPEM, caPEM, site string, now time.Time) (*x509.Certificate, error) {
	block, _ := pem.Decode([]byte(certPEM))
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("not one PEM CERTIFICATE")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("not a certificate: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM([]byte(caPEM)) {
		return nil, fmt.Errorf("the connector CA's certificate does not parse")
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: now,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		return nil, fmt.Errorf("not a current certificate of the connector CA: %w", err)
	}
	if cert.Subject.CommonName != site {
		return nil, fmt.Errorf("the certificate names site %q, not %q", cert.Subject.CommonName, site)
	}
	return cert, nil
}

// sameKey reports whether two public keys are the same key.
func sameKey(a, b crypto.PublicKey) bool {
	k, ok := a.(interface{ Equal(x crypto.PublicKey) bool })
	return ok && k.Equal(b)
}
