package reconcile

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

// SiteConnector builds a site's MAAS client from its record (the URL) and
// its credentials (the API key) on every call, so a rotated key takes
// effect on the next run.
type SiteConnector struct {
	Sites   SiteGetter
	Secrets secrets.Getter
	Options []maas.Option
	// Paths, when set, reaches each site over its own network path: the
	// VPC rules, or the site's connector (which may keep the key).
	Paths *connector.Paths
}

var _ Connector = SiteConnector{}

// ForSite returns the site's MAAS client. Errors never hold the key.
func (c SiteConnector) ForSite(ctx context.Context, siteID string) (MachineReader, error) {
	site, err := c.Sites.GetSite(ctx, siteID)
	if err != nil {
		return nil, err
	}
	if c.Paths != nil && site.ThroughConnector() {
		// The connector signs when maasflow holds no key for the site.
		creds, _ := secrets.GetSiteCredentials(ctx, c.Secrets, siteID)
		return c.Paths.MAASClient(ctx, site, creds.MAASAPIKey, c.Options...)
	}
	if c.Paths != nil {
		if err := c.Paths.CheckDirect(ctx, site); err != nil {
			return nil, err
		}
	}
	creds, err := secrets.GetSiteCredentials(ctx, c.Secrets, siteID)
	if err != nil {
		return nil, fmt.Errorf("site %s has no usable credentials", siteID)
	}
	if creds.MAASAPIKey.Reveal() == "" {
		return nil, errors.New("the MAAS API key of site " + siteID + " is empty")
	}
	return maas.NewClient(site.MAASURL, creds.MAASAPIKey, c.Options...)
}
