package secrets

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/maasflow/maasflow/shared/domain"
)

// Putter writes a secret. Writing a name again replaces its value.
type Putter interface {
	Put(ctx context.Context, name string, value []byte) error
}

// Getter reads a secret; *SecretNotFoundError when the name was never written.
type Getter interface {
	Get(ctx context.Context, name string) ([]byte, error)
}

// SecretNotFoundError: no secret of that name.
type SecretNotFoundError struct {
	Name string `json:"name"`
}

func (e *SecretNotFoundError) Error() string { return fmt.Sprintf("secret %s not found", e.Name) }

// siteCredentials is the stored form of domain.SiteCredentials. domain.Secret
// marshals as "[redacted]" on purpose, so the stored form holds the revealed
// values in plain strings and exists only between the port and its callers.
type siteCredentials struct {
	MAASAPIKey  string `json:"maas_api_key"`
	BMCUsername string `json:"bmc_username"`
	BMCPassword string `json:"bmc_password"`
}

// PutSiteCredentials writes a site's credentials under
// domain.SiteCredentialsSecretName(siteID), replacing earlier ones.
func PutSiteCredentials(ctx context.Context, p Putter, siteID string, c domain.SiteCredentials) error {
	b, err := json.Marshal(siteCredentials{
		MAASAPIKey:  c.MAASAPIKey.Reveal(),
		BMCUsername: c.BMCUsername,
		BMCPassword: c.BMCPassword.Reveal(),
	})
	if err != nil {
		return fmt.Errorf("encode credentials of site %s: %w", siteID, err)
	}
	if err := p.Put(ctx, domain.SiteCredentialsSecretName(siteID), b); err != nil {
		return fmt.Errorf("write credentials of site %s: %w", siteID, err)
	}
	return nil
}

// GetSiteCredentials reads a site's credentials; the returned error wraps
// *SecretNotFoundError when none were written.
func GetSiteCredentials(ctx context.Context, g Getter, siteID string) (domain.SiteCredentials, error) {
	b, err := g.Get(ctx, domain.SiteCredentialsSecretName(siteID))
	if err != nil {
		return domain.SiteCredentials{}, fmt.Errorf("read credentials of site %s: %w", siteID, err)
	}
	var c siteCredentials
	if err := json.Unmarshal(b, &c); err != nil {
		// The json error can quote the input; report only that it is bad.
		return domain.SiteCredentials{}, fmt.Errorf("decode credentials of site %s: stored value is not valid JSON", siteID)
	}
	return domain.SiteCredentials{
		MAASAPIKey:  domain.Secret(c.MAASAPIKey),
		BMCUsername: c.BMCUsername,
		BMCPassword: domain.Secret(c.BMCPassword),
	}, nil
}
