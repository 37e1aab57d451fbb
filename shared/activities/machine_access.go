package activities

import (
	"context"
	"strings"

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

// MachineStatusName is the machine's MAAS label, from the int when the name is
// missing.
func MachineStatusName(m maas.Machine) string {
	if m.StatusName != "" {
		return m.StatusName
	}
	return m.Status.String()
}

// Tail keeps the last n bytes of s, cut at a line start when one is near.
func Tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	if i := strings.IndexByte(s, '\n'); i >= 0 && i < 200 {
		s = s[i+1:]
	}
	return "…" + s
}

// Truncate bounds s to n bytes on a rune boundary.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && (s[cut]&0xC0) == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}

// Timeline note sources both workflows write and read back.
const (
	// SourceEvent marks an event published for the row's attempt; Detail
	// is the detail type. Publishing is skipped when the marker exists.
	SourceEvent = "event"
	SourceMAAS  = "maas"
)
