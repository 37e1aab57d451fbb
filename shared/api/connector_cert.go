package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/logfield"
	"github.com/maasflow/maasflow/shared/nodeid"
)

// Connector sites on AWS (docs/decisions.md, "Connector sites through the
// API, on Roles Anywhere sessions"): a site on the connector path gets its
// request queues when it is created or switched, loses them when it is
// disabled, and its connector gets a short-lived certificate naming the
// site, with which it takes IAM Roles Anywhere sessions.

// ConnectorIssuer signs connector certificates (nodeid.CA over the
// connector CA, never the node CA).
type ConnectorIssuer interface {
	IssueConnector(csrPEM, siteID string, now time.Time) (nodeid.Issued, error)
	CertPEM() string
}

// ConnectorQueues makes and removes a site's request queue and its
// dead-letter queue (sqsrelay.Queues). Ensure is idempotent.
type ConnectorQueues interface {
	Ensure(ctx context.Context, siteID string) error
	Remove(ctx context.Context, siteID string) error
}

// ConnectorDeps are the connector sites' ports on AWS. Without Queues the
// queues are the stack's (or local mode's long poll needs none); without
// Issuer a certificate request answers 503.
type ConnectorDeps struct {
	Queues ConnectorQueues
	Issuer ConnectorIssuer
	// What a connector's session and transport name, handed out with its
	// certificate.
	TrustAnchorARN, ProfileARN, RoleARN string
	QueueURLPrefix, Table               string
}

// connectorCertRequest carries the connector host's CSR: the key never
// leaves that host.
type connectorCertRequest struct {
	CSR string `json:"csr"`
}

// connectorCertificate is what a connector needs to run: its certificate,
// the CA, and the Roles Anywhere and transport names.
type connectorCertificate struct {
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

// issueConnectorCertificate signs the certificate of a connector site's
// connector; its CN is the site ID whatever the CSR asks.
func (s *server) issueConnectorCertificate(rq *request) (int, any, error) {
	var in connectorCertRequest
	if err := decodeBody(rq, &in); err != nil {
		return 0, nil, err
	}
	c := s.connectors
	if c.Issuer == nil {
		return 0, nil, &StatusError{Status: http.StatusServiceUnavailable, Code: CodeUnavailable,
			Message: "this deployment has no connector CA: connectors run with maasflow local's site token"}
	}
	if in.CSR == "" {
		return 0, nil, fieldError("csr", "is required: the PEM certificate signing request made on the connector host")
	}
	if _, err := nodeid.ParseCSR(in.CSR); err != nil {
		return 0, nil, csrFieldError(err)
	}
	id := rq.r.PathValue("id")
	site, err := s.store.GetSite(rq.ctx(), id)
	if err != nil {
		return 0, nil, err
	}
	if !site.ThroughConnector() {
		return 0, nil, conflictError("connectivity", "site %s reaches MAAS over the VPC path: switch it to %q first", id, domain.ConnectivityConnector)
	}
	if site.Status != domain.StatusActive {
		return 0, nil, conflictError("status", "site %s is %s: enable it first", id, site.Status)
	}
	issued, err := c.Issuer.IssueConnector(in.CSR, site.ID, s.clock.Now().UTC())
	if err != nil {
		return 0, nil, csrFieldError(err)
	}
	// The serial, not the certificate: enough to match CloudTrail's
	// Roles Anywhere events to this issuance.
	rq.log.InfoContext(rq.ctx(), "connector certificate issued", logfield.SiteID, site.ID,
		"serial", issued.Serial, "not_after", issued.NotAfter)
	return http.StatusCreated, s.connectorCertificateOf(site, issued), nil
}

// connectorCertificateOf is the answer with site's issued certificate.
func (s *server) connectorCertificateOf(site domain.Site, issued nodeid.Issued) connectorCertificate {
	c := s.connectors
	out := connectorCertificate{
		SiteID: site.ID, CertificatePEM: issued.CertPEM, CAPEM: c.Issuer.CertPEM(), Serial: issued.Serial, NotAfter: issued.NotAfter,
		TrustAnchorARN: c.TrustAnchorARN, ProfileARN: c.ProfileARN, RoleARN: c.RoleARN, Table: c.Table,
	}
	if c.QueueURLPrefix != "" {
		out.QueueURL = c.QueueURLPrefix + site.ID
	}
	return out
}

// csrFieldError names the csr field for a refused CSR.
func csrFieldError(err error) error {
	var ce *nodeid.CSRError
	if errors.As(err, &ce) {
		return fieldError("csr", "%s", ce.Reason)
	}
	return err
}

// ensureConnectorQueues makes the site's queues when it is an active
// connector site. It runs before the site's record is written: the calls
// are idempotent, so a failed write leaves at worst an empty queue the
// next attempt reuses, never a connector site without its queue.
func (s *server) ensureConnectorQueues(ctx context.Context, site domain.Site) error {
	q := s.connectors.Queues
	if q == nil || !site.ThroughConnector() || site.Status != domain.StatusActive {
		return nil
	}
	if err := q.Ensure(ctx, site.ID); err != nil {
		return &StatusError{Status: http.StatusServiceUnavailable, Code: CodeUnavailable,
			Message: "the connector queues of site " + site.ID + " could not be made; nothing was changed: " + err.Error()}
	}
	return nil
}

// removeConnectorQueues deletes the queues of a site that left the
// connector path or was disabled; a failure is a warning on the answer
// (repeat the request to retry), since the site's record is already
// written.
func (s *server) removeConnectorQueues(rq *request, siteID string) []string {
	q := s.connectors.Queues
	if q == nil {
		return nil
	}
	if err := q.Remove(rq.ctx(), siteID); err != nil {
		rq.log.WarnContext(rq.ctx(), "connector queues not deleted", logfield.SiteID, siteID, "error", err.Error())
		return []string{"the connector queues of this site were not deleted (" + err.Error() + "): repeat the request to retry"}
	}
	return nil
}
