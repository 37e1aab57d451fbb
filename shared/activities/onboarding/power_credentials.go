package onboarding

import (
	"context"

	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/secrets"
)

// powerCredentials are the BMC credentials the onboarding's host is given
// to MAAS with: the site's per-node override by hostname, else by BMC
// address, else the site's own. Which one is noted on the timeline with the
// call's next write; the credentials never are.
func (c *call) powerCredentials(ctx context.Context) (domain.PowerCredentials, error) {
	for _, k := range []struct{ key, says string }{
		{domain.PowerOverrideKeyHost(c.Rec.Hostname), "the override for host " + c.Rec.Hostname},
		{domain.PowerOverrideKeyBMC(c.Rec.IPMIIP), "the override for BMC " + c.Rec.IPMIIP},
	} {
		if k.key == domain.PowerOverrideKeyBMC("") {
			continue
		}
		creds, ok, err := secrets.GetPowerOverride(ctx, c.a.d.Secrets, c.Rec.SiteID, k.key)
		if err != nil {
			return domain.PowerCredentials{}, activities.CredentialsError(c.Rec.SiteID, err)
		}
		if ok {
			c.Later(domain.TimelineEntry{Kind: domain.TimelineNote, Source: sourceDiscovery, Detail: "BMC credentials: " + k.says})
			return creds, nil
		}
	}
	site, err := secrets.GetSiteCredentials(ctx, c.a.d.Secrets, c.Rec.SiteID)
	if err != nil {
		return domain.PowerCredentials{}, activities.CredentialsError(c.Rec.SiteID, err)
	}
	return domain.PowerCredentials{Username: site.BMCUsername, Password: site.BMCPassword}, nil
}
