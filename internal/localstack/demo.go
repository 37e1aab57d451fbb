package localstack

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

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
	c := &adminClient{base: s.APIURL, token: s.AdminToken}
	var d Demo

	var sites struct {
		Items []struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		} `json:"items"`
	}
	if err := c.do(ctx, http.MethodGet, "/api/v1/admin/maas-sites", nil, &sites); err != nil {
		return d, err
	}
	for _, site := range sites.Items {
		if site.Name == demoSiteName {
			d.SiteID = site.ID
		}
	}
	if d.SiteID == "" {
		var site struct {
			ID string `json:"id"`
		}
		err := c.do(ctx, http.MethodPost, "/api/v1/admin/maas-sites", map[string]any{
			"name": demoSiteName, "maas_url": s.SimURL,
			"description": "the bundled MAAS simulator",
			"policy":      map[string]any{"bootstrap": s.SiteBootstrap},
		}, &site)
		if err != nil {
			return d, err
		}
		d.SiteID = site.ID
	}
	// The simulator is new on every start, and so are its URL and API key.
	if err := c.do(ctx, http.MethodPatch, "/api/v1/admin/maas-sites/"+d.SiteID, map[string]any{
		"maas_url": s.SimURL, "policy": map[string]any{"bootstrap": s.SiteBootstrap},
	}, nil); err != nil {
		return d, err
	}
	if err := c.do(ctx, http.MethodPost, "/api/v1/admin/maas-sites/"+d.SiteID+"/credentials", map[string]any{
		"maas_api_key": s.SimAPIKey, "bmc_username": "maasflow", "bmc_password": randomToken(),
	}, nil); err != nil {
		return d, err
	}
	if err := c.do(ctx, http.MethodPost, "/api/v1/admin/maas-sites/"+d.SiteID+"/probe", nil, nil); err != nil {
		return d, err
	}

	var profiles struct {
		Items []struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		} `json:"items"`
	}
	if err := c.do(ctx, http.MethodGet, "/api/v1/admin/maas-sites/"+d.SiteID+"/profiles", nil, &profiles); err != nil {
		return d, err
	}
	for _, p := range profiles.Items {
		if p.Name == demoProfileName {
			d.ProfileID = p.ID
		}
	}
	if d.ProfileID == "" {
		var p struct {
			ID string `json:"id"`
		}
		if err := c.do(ctx, http.MethodPost, "/api/v1/admin/maas-sites/"+d.SiteID+"/profiles", map[string]any{
			"name": demoProfileName, "architecture": "amd64/generic", "distro_series": "jammy",
		}, &p); err != nil {
			return d, err
		}
		d.ProfileID = p.ID
	}

	d.SKUID = "h100-8x"
	err := c.do(ctx, http.MethodPost, "/api/v1/admin/skus", map[string]any{
		"id": d.SKUID, "gpu_model": "NVIDIA H100 80GB", "gpus_total": 8,
	}, nil)
	if err != nil && !isStatus(err, http.StatusConflict) {
		return d, err
	}

	d.SiteName, d.ProfileName = demoSiteName, demoProfileName
	sim := &adminClient{base: strings.TrimSuffix(s.SimURL, "/MAAS")}
	for i := 1; i <= demoMaxHosts && (i <= len(demoHosts) || len(d.Fresh) < demoFreshHosts); i++ {
		h, faults := demoHost(i)
		body := map[string]any{"hostname": h.Hostname, "bmc_ip": h.BMCIP, "pxe_mac": h.PXEMAC, "faults": faults}
		if err := sim.do(ctx, http.MethodPost, "/_sim/hardware", body, nil); err != nil {
			return d, err
		}
		d.Hosts = append(d.Hosts, h)
		fresh, err := c.fresh(ctx, d.SiteID, h.Hostname)
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
func (c *adminClient) fresh(ctx context.Context, siteID, host string) (bool, error) {
	var page struct {
		Items []struct {
			Status domain.OnboardingStatus `json:"status"`
		} `json:"items"`
	}
	q := url.Values{"site_id": {siteID}, "hostname": {host}, "limit": {"200"}}
	if err := c.do(ctx, http.MethodGet, "/api/v1/admin/onboardings?"+q.Encode(), nil, &page); err != nil {
		return false, err
	}
	for _, o := range page.Items {
		if o.Status != domain.OnboardingFailed && o.Status != domain.OnboardingCancelled {
			return false, nil
		}
	}
	return true, nil
}

// adminClient is the few lines of HTTP the demo seeding needs.
type adminClient struct {
	base, token string
}

type statusError struct {
	status int
	body   string
}

func (e *statusError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.status, e.body) }

func isStatus(err error, status int) bool {
	se, ok := err.(*statusError) //nolint:errorlint // adminClient returns it unwrapped
	return ok && se.status == status
}

func (c *adminClient) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("encode %s %s: %w", method, path, err)
		}
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode >= 300 {
		return &statusError{status: resp.StatusCode, body: strings.TrimSpace(string(b))}
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("decode %s %s: %w", method, path, err)
		}
	}
	return nil
}
