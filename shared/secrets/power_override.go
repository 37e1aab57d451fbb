package secrets

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/maasflow/maasflow/shared/domain"
)

// powerCredentials is the stored form of domain.PowerCredentials (see
// siteCredentials: the stored form holds the revealed value).
type powerCredentials struct {
	Username string `json:"bmc_username"`
	Password string `json:"bmc_password"`
}

// PutPowerOverride writes a site's power credential override of key
// (domain.PowerOverrideKeyHost or …KeyBMC), replacing an earlier one.
func PutPowerOverride(ctx context.Context, p Putter, siteID, key string, c domain.PowerCredentials) error {
	b, err := json.Marshal(powerCredentials{Username: c.Username, Password: c.Password.Reveal()})
	if err != nil {
		return fmt.Errorf("encode power override %s of site %s: %w", key, siteID, err)
	}
	if err := p.Put(ctx, domain.PowerOverrideSecretName(siteID, key), b); err != nil {
		return fmt.Errorf("write power override %s of site %s: %w", key, siteID, err)
	}
	return nil
}

// GetPowerOverride reads the override of key; false when there is none.
func GetPowerOverride(ctx context.Context, g Getter, siteID, key string) (domain.PowerCredentials, bool, error) {
	b, err := g.Get(ctx, domain.PowerOverrideSecretName(siteID, key))
	var missing *SecretNotFoundError
	switch {
	case errors.As(err, &missing):
		return domain.PowerCredentials{}, false, nil
	case err != nil:
		return domain.PowerCredentials{}, false, fmt.Errorf("read power override %s of site %s: %w", key, siteID, err)
	}
	var c powerCredentials
	if err := json.Unmarshal(b, &c); err != nil {
		return domain.PowerCredentials{}, false, fmt.Errorf("decode power override %s of site %s: stored value is not valid JSON", key, siteID)
	}
	return domain.PowerCredentials{Username: c.Username, Password: domain.Secret(c.Password)}, true, nil
}
