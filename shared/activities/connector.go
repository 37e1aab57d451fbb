package activities

import (
	"context"
	"errors"
	"fmt"

	"github.com/maasflow/maasflow/shared/connector"
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
// rotated key takes effect on the next activity. An onboarding's steps
// pass the site record their run started with (ForSiteRecord), so a moved
// region takes effect on its next run.
type SiteConnector struct {
	sites     SiteGetter
	secrets   SecretGetter
	newClient func(maasURL string, apiKey domain.Secret) (MAAS, error)
	// paths, when set, chooses each site's network path: the VPC rules
	// and connector sites (WithPaths).
	paths *connector.Paths
}

var _ Connector = (*SiteConnector)(nil)

// NewSiteConnector builds a per-site MAAS client from the site record and its credentials.
func NewSiteConnector(sites SiteGetter, secrets SecretGetter, newClient func(maasURL string, apiKey domain.Secret) (MAAS, error)) *SiteConnector {
	return &SiteConnector{sites: sites, secrets: secrets, newClient: newClient}
}

// WithPaths makes the connector reach each site over its own path
// (shared/connector): a connector site's calls go through its connector,
// which may keep the MAAS API key; a VPC site's URL must satisfy the
// deployment's https rule.
func (c *SiteConnector) WithPaths(p *connector.Paths) *SiteConnector {
	c.paths = p
	return c
}

// ForSite returns the site's MAAS client. A missing site is
// RecordNotFoundError; missing or malformed credentials, or a site the
// deployment cannot reach as configured, are SiteCredentialsError
// (terminal: an operator must fix the site). Neither message holds the key.
func (c *SiteConnector) ForSite(ctx context.Context, siteID string) (MAAS, error) {
	site, err := c.sites.GetSite(ctx, siteID)
	if err != nil {
		return nil, StoreError("read site "+siteID, err)
	}
	return c.ForSiteRecord(ctx, site)
}

// ForSiteRecord is ForSite for a site record the caller already read (an
// onboarding's RunContext), without reading it again. The credentials are
// read on every call all the same, so a rotated key takes effect at once.
func (c *SiteConnector) ForSiteRecord(ctx context.Context, site domain.Site) (MAAS, error) {
	siteID := site.ID
	if c.paths != nil {
		return c.viaPath(ctx, site)
	}
	creds, err := secrets.GetSiteCredentials(ctx, c.secrets, siteID)
	if err != nil {
		return nil, CredentialsError(siteID, err)
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

// viaPath builds the client over the site's network path. A connector
// site may have no MAAS key in its credentials (its connector signs).
func (c *SiteConnector) viaPath(ctx context.Context, site domain.Site) (MAAS, error) {
	creds, err := secrets.GetSiteCredentials(ctx, c.secrets, site.ID)
	var missing *secrets.SecretNotFoundError
	switch {
	case err != nil && (!site.ThroughConnector() || !errors.As(err, &missing)):
		return nil, CredentialsError(site.ID, err)
	case !site.ThroughConnector() && creds.MAASAPIKey.Reveal() == "":
		return nil, &SiteCredentialsError{SiteID: site.ID, Reason: "the MAAS API key is empty"}
	}
	client, err := c.paths.MAASClient(ctx, site, creds.MAASAPIKey)
	var unreachable *connector.NotReachableError
	switch {
	case errors.As(err, &unreachable):
		return nil, &SiteCredentialsError{SiteID: site.ID, Reason: unreachable.Reason}
	case err != nil:
		return nil, &SiteCredentialsError{SiteID: site.ID, Reason: fmt.Sprintf("cannot build a MAAS client: %v", err)}
	}
	return client, nil
}

// SiteHTTP returns the HTTP client a connector site's pre-deploy fetch
// checks run through, its connector; false when the site uses the default
// client.
func (c *SiteConnector) SiteHTTP(ctx context.Context, siteID string) (HTTPDoer, bool, error) {
	if c.paths == nil {
		return nil, false, nil
	}
	site, err := c.sites.GetSite(ctx, siteID)
	if err != nil {
		return nil, false, StoreError("read site "+siteID, err)
	}
	return c.SiteHTTPFor(site)
}

// SiteHTTPFor is SiteHTTP for a site record the caller already read.
func (c *SiteConnector) SiteHTTPFor(site domain.Site) (HTTPDoer, bool, error) {
	if c.paths == nil {
		return nil, false, nil
	}
	hc, ok, err := c.paths.FetchClient(site)
	var unreachable *connector.NotReachableError
	switch {
	case errors.As(err, &unreachable):
		return nil, false, &SiteCredentialsError{SiteID: site.ID, Reason: unreachable.Reason}
	case err != nil || !ok:
		return nil, false, err
	}
	return hc, true, nil
}

// NewMAASClient is the connector's client factory over the real MAAS API 2.0
// client (both runtimes use it).
func NewMAASClient(maasURL string, apiKey domain.Secret) (MAAS, error) {
	return maas.NewClient(maasURL, apiKey)
}

// CredentialsError maps a failure to read a site's credentials to the
// error vocabulary: none set is the site's problem (terminal), anything
// else the secrets store's (retryable).
func CredentialsError(siteID string, err error) error {
	var missing *secrets.SecretNotFoundError
	if errors.As(err, &missing) {
		return &SiteCredentialsError{SiteID: siteID, Reason: "no credentials are set"}
	}
	return &SecretsUnavailableError{SiteID: siteID, Message: err.Error()}
}
