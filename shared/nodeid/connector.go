package nodeid

import (
	"crypto/x509/pkix"
	"time"
)

// ConnectorCertTTL is a site connector certificate's life: the connector
// renews it at two thirds, and a stolen one is useless within a week. It
// only opens Roles Anywhere sessions, which live an hour each.
const ConnectorCertTTL = 7 * 24 * time.Hour

// connectorURIPrefix is what a connector certificate's URI SAN puts before
// the site ID.
const connectorURIPrefix = "spiffe://maasflow/connector/"

// connectorOrg marks a connector certificate's subject.
const connectorOrg = "maasflow connector"

// IssueConnector signs the certificate of siteID's connector over the
// public key of csrPEM: subject CN = siteID whatever the CSR asks, since
// IAM Roles Anywhere maps the CN to the session tag that scopes the
// connector to its site's queue and replies. Use it on the connector CA
// only, never the node CA: the connector CA is a Roles Anywhere trust
// anchor.
func (c *CA) IssueConnector(csrPEM, siteID string, now time.Time) (Issued, error) {
	return c.issue(csrPEM, pkix.Name{CommonName: siteID, Organization: []string{connectorOrg}}, connectorURIPrefix+siteID, now)
}
