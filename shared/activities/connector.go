package activities

import (
	"context"
	"fmt"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
	"github.com/maasflow/maasflow/shared/secrets"
)

// SiteGetter reads a site record.
type SiteGetter interface {
	GetSite(ctx context.Context, id string) (domain.Site, error)
}

// SiteConnector builds a per-site MAAS client from the site record (its
// MAAS URL) and the site's credentials (its API key) on every call, so a
// rotated key or a moved region takes effect on the next activity.
type SiteConnector struct {
	sites     SiteGetter
	secrets   SecretGetter
	newClient func(maasURL string, apiKey domain.Secret) (MAAS, error)
}

var _ Connector = (*SiteConnector)(nil)

// NewSiteConnector builds a per-site MAAS client from the site record and its credentials.
func NewSiteConnector(sites SiteGetter, secrets SecretGetter, newClient func(maasURL string, apiKey domain.Secret) (MAAS, error)) *SiteConnector {
	return &SiteConnector{sites: sites, secrets: secrets, newClient: newClient}
}

// ForSite returns the site's MAAS client. A missing site is
// RecordNotFoundError; missing or malformed credentials are
// SiteCredentialsError (terminal: an operator must set them). Neither
// message holds the key.
func (c *SiteConnector) ForSite(ctx context.Context, siteID string) (MAAS, error) {
	site, err := c.sites.GetSite(ctx, siteID)
	if err != nil {
		return nil, storeError("read site "+siteID, err)
	}
	creds, err := secrets.GetSiteCredentials(ctx, c.secrets, siteID)
	if err != nil {
		return nil, credentialsError(siteID, err)
	}
	if creds.MAASAPIKey.Reveal() == "" {
		return nil, &SiteCredentialsError{SiteID: siteID, Reason: "the MAAS API key is empty"}
	}
	client, err := c.newClient(site.MAASURL, creds.MAASAPIKey)
	if err != nil {
		// The MAAS client's constructor errors never repeat the key.
		return nil, &SiteCredentialsError{SiteID: siteID, Reason: fmt.Sprintf("cannot build a MAAS client: %v", err)}
	}
	return client, nil
}

// NewMAASClient is the connector's client factory over the real MAAS API 2.0
// client (both runtimes use it).
func NewMAASClient(maasURL string, apiKey domain.Secret) (MAAS, error) {
	return maas.NewClient(maasURL, apiKey)
}
