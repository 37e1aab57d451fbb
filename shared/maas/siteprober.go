package maas

import (
	"context"

	"github.com/maasflow/maasflow/shared/domain"
)

// SiteProber probes a region with a client built for the one call: the
// admin API's probe takes a site's URL and key, not a long-lived client.
type SiteProber struct {
	// Options configure each client (transport, user agent).
	Options []Option
}

// Probe builds a client for maasURL and apiKey and probes it. A malformed
// URL or key fails before any request, without repeating the key.
func (p SiteProber) Probe(ctx context.Context, maasURL string, apiKey domain.Secret) (ProbeResult, error) {
	c, err := NewClient(maasURL, apiKey, p.Options...)
	if err != nil {
		return ProbeResult{}, err
	}
	return c.Probe(ctx)
}
