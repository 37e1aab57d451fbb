package activities

import (
	"context"

	"github.com/maasflow/maasflow/shared/maas"
)

// GetMachine reads one machine of a site as MAAS reports it now. The API's
// decommission recovery operations read MAAS through it before they decide
// (resume, adopt, cancel), over the same path and credentials the
// activities use.
func (c *SiteConnector) GetMachine(ctx context.Context, siteID, systemID string) (maas.Machine, error) {
	client, err := c.ForSite(ctx, siteID)
	if err != nil {
		return maas.Machine{}, err
	}
	return client.Get(ctx, systemID)
}

// AbortMachine sends MAAS's abort for the operation in progress on one
// machine of a site (maas-behaviour §5: from Commissioning, Deploying, Disk
// erasing and Testing only; asynchronous, the reply shows the old status).
func (c *SiteConnector) AbortMachine(ctx context.Context, siteID, systemID, comment string) (maas.Machine, error) {
	client, err := c.ForSite(ctx, siteID)
	if err != nil {
		return maas.Machine{}, err
	}
	return client.Abort(ctx, systemID, comment)
}
