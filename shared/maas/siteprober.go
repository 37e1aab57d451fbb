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

// ProbeScripts probes like Probe and, when the region answered and the
// key is an administrator's, checks that it has every script of names
// (the site's profiles' scripts): the result's MissingScripts and
// Problem() name those it lacks. One more read, only when names is not
// empty.
func (p SiteProber) ProbeScripts(ctx context.Context, maasURL string, apiKey domain.Secret, names []string) (ProbeResult, error) {
	c, err := NewClient(maasURL, apiKey, p.Options...)
	if err != nil {
		return ProbeResult{}, err
	}
	res, err := c.Probe(ctx)
	if err != nil || !res.IsAdmin || len(names) == 0 {
		return res, err
	}
	return res, c.CheckScripts(ctx, &res, names)
}
