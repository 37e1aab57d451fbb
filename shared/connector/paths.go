package connector

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
)

// keyAtSite stands in for the MAAS API key of a connector site whose key
// stays with the connector: the MAAS client needs a well-formed key to
// build, and Transport.Unsigned drops the signature it makes before the
// request leaves the process.
const keyAtSite = domain.Secret("maasflow-connector:key-kept-at:the-site")

// Paths chooses, per site, how a site's MAAS and its network are reached:
// directly (the VPC path; locally, the host's network) or through the
// site's connector.
type Paths struct {
	// Relay carries connector sites' requests; nil means no connector
	// transport is configured and connector sites fail.
	Relay Relay
	// Status reads connector heartbeats for the probe.
	Status StatusReader
	// RequireHTTPS refuses a direct plain-http MAAS URL unless the site
	// allows http and the host is a private address (the AWS deployment).
	RequireHTTPS bool
	// LookupHost resolves MAAS host names for that check
	// (net.DefaultResolver.LookupNetIP when nil).
	LookupHost func(ctx context.Context, host string) ([]netip.Addr, error)
	// Now is the clock for heartbeat age; time.Now when nil.
	Now func() time.Time
	// APIURL is the deployment's node API, whose health check a connector
	// site's pre-deploy checks may fetch when the site's policy names no
	// enrollment URL of its own.
	APIURL string
}

// NotReachableError: the site's configuration does not allow maasflow to
// reach its MAAS (plain http where https is required, a connector site
// without a connector transport). An operator must change the site.
type NotReachableError struct {
	SiteID string
	Reason string
}

func (e *NotReachableError) Error() string {
	return fmt.Sprintf("site %s cannot be reached: %s", e.SiteID, e.Reason)
}

// MAASClient builds the site's MAAS client. A connector site whose
// credentials hold no key is signed by its connector.
func (p *Paths) MAASClient(ctx context.Context, site domain.Site, apiKey domain.Secret, opts ...maas.Option) (*maas.Client, error) {
	if !site.ThroughConnector() {
		if err := p.CheckDirect(ctx, site); err != nil {
			return nil, err
		}
		return maas.NewClient(site.MAASURL, apiKey, opts...)
	}
	if p.Relay == nil {
		return nil, &NotReachableError{SiteID: site.ID, Reason: "the site uses a connector, and this deployment has no connector transport for it"}
	}
	t := &Transport{Relay: p.Relay, Site: site.ID, Kind: KindMAAS, Unsigned: apiKey.Reveal() == ""}
	if t.Unsigned {
		apiKey = keyAtSite
	}
	opts = append(opts, maas.WithHTTPClient(&http.Client{Transport: t}))
	return maas.NewClient(site.MAASURL, apiKey, opts...)
}

// FetchClient returns the HTTP client a connector site's pre-deploy fetch
// checks use, its connector, so they run from the site's network; false
// for a direct site, whose checks use the caller's own client.
func (p *Paths) FetchClient(site domain.Site) (*http.Client, bool, error) {
	if !site.ThroughConnector() {
		return nil, false, nil
	}
	if p.Relay == nil {
		return nil, false, &NotReachableError{SiteID: site.ID, Reason: "the site uses a connector, and this deployment has no connector transport for it"}
	}
	return &http.Client{
		Transport:     &Transport{Relay: p.Relay, Site: site.ID, Kind: KindFetch, AllowFetch: p.fetchAllowed(site)},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}, true, nil
}

// fetchAllowed is what a connector site's fetch may GET: the bootstrap URL
// its own policy names, and the health check of the node API it enrolls
// with (the policy's enrollment URL, else the deployment's). A connector
// fetches from inside the site's network, so a fetch of anything else
// would let whoever sets a URL read what only the site can reach.
func (p *Paths) fetchAllowed(site domain.Site) func(*url.URL) bool {
	var allowed []string
	if b := site.Policy.Bootstrap; b != nil && b.URL != "" {
		allowed = append(allowed, b.URL)
	}
	api := p.APIURL
	if e := site.Policy.EnrollmentURL; e != nil && *e != "" {
		api = *e
	}
	if api != "" {
		allowed = append(allowed, strings.TrimRight(api, "/")+"/api/v1/healthz")
	}
	return func(u *url.URL) bool {
		return slices.Contains(allowed, u.String())
	}
}

// CheckDirect enforces the VPC path's transport rule: with RequireHTTPS, a
// plain-http MAAS URL is allowed only when the site allows http and every
// address of its host is private (RFC 1918, RFC 4193, loopback).
func (p *Paths) CheckDirect(ctx context.Context, site domain.Site) error {
	u, err := url.Parse(site.MAASURL)
	if err != nil {
		return &NotReachableError{SiteID: site.ID, Reason: "the MAAS URL does not parse"}
	}
	if !p.RequireHTTPS || u.Scheme == "https" {
		return nil
	}
	if !site.AllowHTTP {
		return &NotReachableError{SiteID: site.ID, Reason: "the MAAS URL is plain http; use https, or set allow_http on a site whose MAAS is on a private network"}
	}
	addrs, err := p.lookup(ctx, u.Hostname())
	if err != nil || len(addrs) == 0 {
		return &NotReachableError{SiteID: site.ID, Reason: "the MAAS host " + u.Hostname() + " does not resolve, so it cannot be checked to be private"}
	}
	for _, a := range addrs {
		a = a.Unmap()
		if !a.IsPrivate() && !a.IsLoopback() {
			return &NotReachableError{SiteID: site.ID, Reason: "allow_http is set, but the MAAS host " + u.Hostname() + " has the public address " + a.String()}
		}
	}
	return nil
}

func (p *Paths) lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a}, nil
	}
	if p.LookupHost != nil {
		return p.LookupHost(ctx, host)
	}
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

// ProbeSite probes the site's MAAS over its own path; for a connector
// site it also reports the connector's last heartbeat and version, even
// when the probe through it fails.
func (p *Paths) ProbeSite(ctx context.Context, site domain.Site, apiKey domain.Secret, scripts []string) (maas.ProbeResult, *domain.ConnectorStatus, error) {
	var status *domain.ConnectorStatus
	if site.ThroughConnector() && p.Status != nil {
		hb, ok, err := p.Status.LastHeartbeat(ctx, site.ID)
		if err != nil {
			return maas.ProbeResult{}, nil, &RelayError{Site: site.ID, Message: "cannot read the connector heartbeat"}
		}
		status = &domain.ConnectorStatus{}
		if ok {
			now := time.Now
			if p.Now != nil {
				now = p.Now
			}
			status = &domain.ConnectorStatus{
				Online: hb.Online(now()), Version: hb.Version, Hostname: hb.Hostname,
				LastHeartbeat: hb.At, StartedAt: hb.StartedAt, MAASReachable: hb.MAASReachable,
			}
		}
	}
	if status != nil && !status.Online {
		// No request would be answered: say so now rather than at the
		// probe's deadline.
		if status.LastHeartbeat.IsZero() {
			return maas.ProbeResult{}, status, &NotReachableError{SiteID: site.ID, Reason: "its connector has never reported"}
		}
		return maas.ProbeResult{}, status, &NotReachableError{SiteID: site.ID,
			Reason: "its connector is offline (last heartbeat " + status.LastHeartbeat.UTC().Format(time.RFC3339) + ")"}
	}
	c, err := p.MAASClient(ctx, site, apiKey)
	if err != nil {
		return maas.ProbeResult{}, status, err
	}
	res, err := c.Probe(ctx)
	if err != nil || !res.IsAdmin || len(scripts) == 0 {
		return res, status, err
	}
	return res, status, c.CheckScripts(ctx, &res, scripts)
}
