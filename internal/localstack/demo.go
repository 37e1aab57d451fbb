package localstack

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/maasflow/maasflow/client"
	"github.com/maasflow/maasflow/shared/domain"
)

// Demo is what SeedDemo created: a site with credentials and a healthy
// probe, a profile, an SKU and simulated hosts ready to onboard.
type Demo struct {
	SiteID      string
	SiteName    string
	ProfileID   string
	ProfileName string
	SKUID       string
	// Hosts are the simulated servers added on this start; Fresh are those
	// of them no earlier run onboarded (or is onboarding), so a command
	// naming one works after a restart on the same data dir.
	Hosts []DemoHost
	Fresh []DemoHost
}

// DemoHost is a simulated GPU server nobody has onboarded yet.
type DemoHost struct {
	Hostname string `json:"hostname"`
	BMCIP    string `json:"bmc_ip"`
	PXEMAC   string `json:"pxe_mac"`
}

const (
	demoSiteName    = "demo"
	demoProfileName = "gpu-jammy"
	// demoFreshHosts is how many never-onboarded hosts each start offers.
	demoFreshHosts = 3
	// demoMaxHosts bounds the simulated hosts one start adds.
	demoMaxHosts = 99
	// demoRequestTimeout bounds one seeding request.
	demoRequestTimeout = 30 * time.Second
)

// DemoRetryHost is the demo host whose first deployment fails with a
// datasource error, so the classified retry can be watched.
const DemoRetryHost = "gpu-node-03"

// demoHosts are the simulated servers `make run` adds; gpu-node-03 carries a
// datasource fault so the classified deploy retry can be watched.
var demoHosts = []struct {
	DemoHost
	faults map[string]any
}{
	{DemoHost: DemoHost{Hostname: "gpu-node-01", BMCIP: "10.20.0.101", PXEMAC: "52:54:00:20:01:01"}},
	{DemoHost: DemoHost{Hostname: "gpu-node-02", BMCIP: "10.20.0.102", PXEMAC: "52:54:00:20:01:02"}},
	{DemoHost: DemoHost{Hostname: DemoRetryHost, BMCIP: "10.20.0.103", PXEMAC: "52:54:00:20:01:03"},
		faults: map[string]any{"deploy_datasource_failures": 1}},
}

// SeedDemo creates the demo records through the admin API, the way an
// operator would, and adds the demo hosts to the simulator. Records that
// survive from an earlier run (same data dir) are reused.
func (s *Stack) SeedDemo(ctx context.Context) (Demo, error) {
	if s.Sim == nil {
		return Demo{}, fmt.Errorf("demo data needs the bundled simulator (no --maas-url)")
	}
	c, err := client.New(s.APIURL, client.WithToken(s.AdminToken), client.WithRequestTimeout(demoRequestTimeout))
	if err != nil {
		return Demo{}, err
	}
	var d Demo

	sites, err := c.ListSites(ctx)
	if err != nil {
		return d, err
	}
	for _, site := range sites {
		if site.Name == demoSiteName {
			d.SiteID = site.ID
		}
	}
	bootstrap := s.SiteBootstrap
	policy := &client.Policy{Bootstrap: &bootstrap}
	if d.SiteID == "" {
		site, err := c.CreateSite(ctx, client.SiteCreate{
			Name: demoSiteName, MAASURL: s.SimURL, Description: "the bundled MAAS simulator", Policy: policy,
		})
		if err != nil {
			return d, err
		}
		d.SiteID = site.ID
	}
	// The simulator is new on every start, and so are its URL and API key.
	patch, err := json.Marshal(map[string]any{"bootstrap": s.SiteBootstrap})
	if err != nil {
		return d, err
	}
	if _, err := c.UpdateSite(ctx, d.SiteID, client.SitePatch{MAASURL: &s.SimURL, Policy: patch}); err != nil {
		return d, err
	}
	if err := c.PutCredentials(ctx, d.SiteID, client.Credentials{
		MAASAPIKey: s.SimAPIKey, BMCUsername: "maasflow", BMCPassword: randomToken(),
	}); err != nil {
		return d, err
	}
	if _, err := c.ProbeSite(ctx, d.SiteID); err != nil {
		return d, err
	}

	profiles, err := c.ListProfiles(ctx, d.SiteID)
	if err != nil {
		return d, err
	}
	for _, p := range profiles {
		if p.Name == demoProfileName {
			d.ProfileID = p.ID
		}
	}
	if d.ProfileID == "" {
		p, err := c.CreateProfile(ctx, d.SiteID, client.ProfileCreate{
			Name: demoProfileName, Architecture: "amd64/generic", DistroSeries: "jammy",
		})
		if err != nil {
			return d, err
		}
		d.ProfileID = p.ID
	}

	d.SKUID = "h100-8x"
	_, err = c.CreateSKU(ctx, client.SKUCreate{ID: d.SKUID, GPUModel: "NVIDIA H100 80GB", GPUsTotal: 8})
	if err != nil && !client.IsStatus(err, http.StatusConflict) {
		return d, err
	}

	d.SiteName, d.ProfileName = demoSiteName, demoProfileName
	// The simulator's own hardware endpoint is no admin API: the same
	// client's Do reaches it below the simulator's base URL.
	sim, err := client.New(strings.TrimSuffix(s.SimURL, "/MAAS"), client.WithRequestTimeout(demoRequestTimeout))
	if err != nil {
		return d, err
	}
	for i := 1; i <= demoMaxHosts && (i <= len(demoHosts) || len(d.Fresh) < demoFreshHosts); i++ {
		h, faults := demoHost(i)
		body := map[string]any{"hostname": h.Hostname, "bmc_ip": h.BMCIP, "pxe_mac": h.PXEMAC, "faults": faults}
		if _, err := sim.Do(ctx, http.MethodPost, "/_sim/hardware", nil, body); err != nil {
			return d, err
		}
		d.Hosts = append(d.Hosts, h)
		fresh, err := fresh(ctx, c, d.SiteID, h.Hostname)
		if err != nil {
			return d, err
		}
		if fresh {
			d.Fresh = append(d.Fresh, h)
		}
	}
	return d, nil
}

// demoHost is the i-th demo host (from 1): the fixed ones first, then
// plain ones numbered on.
func demoHost(i int) (DemoHost, map[string]any) {
	if i <= len(demoHosts) {
		return demoHosts[i-1].DemoHost, demoHosts[i-1].faults
	}
	return DemoHost{
		Hostname: fmt.Sprintf("gpu-node-%02d", i),
		BMCIP:    fmt.Sprintf("10.20.0.%d", 100+i),
		PXEMAC:   fmt.Sprintf("52:54:00:20:01:%02x", i),
	}, nil
}

// fresh reports whether no onboarding of host on the site completed or is
// still open: only then does onboarding it again succeed.
func fresh(ctx context.Context, c *client.Client, siteID, host string) (bool, error) {
	for o, err := range c.Onboardings(ctx, client.OnboardingFilter{SiteID: siteID, Hostname: host, Limit: 200}) {
		if err != nil {
			return false, err
		}
		if o.Status != domain.OnboardingFailed && o.Status != domain.OnboardingCancelled {
			return false, nil
		}
	}
	return true, nil
}
