package client

import (
	"context"
	"net/http"
	"time"
)

// ConnectorCertificateRequest carries the CSR made on a connector host.
type ConnectorCertificateRequest struct {
	CSR string `json:"csr"`
}

// ConnectorCertificate is a site connector's certificate (CN = the site
// ID) and the IAM Roles Anywhere and transport names it runs with.
type ConnectorCertificate struct {
	SiteID         string    `json:"site_id"`
	CertificatePEM string    `json:"certificate_pem"`
	CAPEM          string    `json:"ca_pem"`
	Serial         string    `json:"serial"`
	NotAfter       time.Time `json:"certificate_not_after"`
	TrustAnchorARN string    `json:"trust_anchor_arn"`
	ProfileARN     string    `json:"profile_arn"`
	RoleARN        string    `json:"role_arn"`
	QueueURL       string    `json:"queue_url,omitempty"`
	Table          string    `json:"table,omitempty"`
}

// IssueConnectorCertificate has the connector CA sign the certificate of
// a connector site's connector over csrPEM.
func (c *Client) IssueConnectorCertificate(ctx context.Context, siteID, csrPEM string, opts ...CallOption) (ConnectorCertificate, error) {
	return call[ConnectorCertificate](ctx, c, http.MethodPost, Path(SitesPath, siteID, "connector", "certificate"), nil,
		ConnectorCertificateRequest{CSR: csrPEM}, opts)
}

// ConnectorRenewalRequest is a connector's current certificate and a CSR
// over the same key.
type ConnectorRenewalRequest struct {
	CertificatePEM string `json:"certificate_pem"`
	CSR            string `json:"csr"`
}

// RenewConnectorCertificate has the connector CA sign a new certificate
// for the connector of siteID that holds certPEM, still valid, and the key
// of csrPEM, which must be that certificate's; it needs no token.
func (c *Client) RenewConnectorCertificate(ctx context.Context, siteID, certPEM, csrPEM string, opts ...CallOption) (ConnectorCertificate, error) {
	return call[ConnectorCertificate](ctx, c, http.MethodPost, Path("/api/v1/connectors", siteID, "certificate"), nil,
		ConnectorRenewalRequest{CertificatePEM: certPEM, CSR: csrPEM}, opts)
}
