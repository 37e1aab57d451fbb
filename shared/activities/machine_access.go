package activities

import (
	"context"

	"github.com/maasflow/maasflow/shared/domain"
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

// ReleaseParams are MAAS's release flags for an erase mode
// (maas-behaviour §8): quick_erase and secure_erase each imply erase.
func ReleaseParams(mode, comment string) maas.MachineReleaseParams {
	p := maas.MachineReleaseParams{Comment: comment}
	switch mode {
	case domain.ErasePlain:
		p.Erase = true
	case domain.EraseQuick:
		p.Erase, p.QuickErase = true, true
	case domain.EraseSecure:
		p.Erase, p.SecureErase = true, true
	}
	return p
}

// Releasable are the statuses MAAS releases from (maas-behaviour §5;
// RELEASABLE_STATUSES in canonical/maas src/maasserver/models/node.py).
var Releasable = map[maas.Status]bool{
	maas.StatusBroken: true, maas.StatusAllocated: true, maas.StatusReserved: true, maas.StatusDeploying: true, maas.StatusDeployed: true,
	maas.StatusFailedDeployment: true, maas.StatusFailedDiskErasing: true, maas.StatusFailedReleasing: true,
}
