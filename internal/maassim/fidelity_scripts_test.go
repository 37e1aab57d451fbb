package maassim

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
)

// The scripts a profile names, through maasflow's client: the region's
// scripts list and its filters, the missing_script fault, commissioning
// with named scripts and the failing_script fault's output in the results.

func scriptHarness(t *testing.T, mutate ...func(*Options)) (*harness, *maas.Client) {
	t.Helper()
	h := newHarness(t, mutate...)
	c, err := maas.NewClient(h.srv.URL+"/MAAS", domain.Secret(testKey))
	require.NoError(t, err)
	return h, c
}

func scriptNamesOf(list []maas.Script) []string {
	out := make([]string, 0, len(list))
	for _, s := range list {
		out = append(out, s.Name)
	}
	return out
}

func TestFidelityScriptsListAndFilters(t *testing.T) {
	_, c := scriptHarness(t)
	ctx := context.Background()

	all, err := c.Scripts(ctx, maas.ScriptFilter{})
	require.NoError(t, err)
	assert.Contains(t, scriptNamesOf(all), "smartctl-validate", "MAAS's built-in tests")
	assert.Contains(t, scriptNamesOf(all), "firmware-update", "the site's named scripts")

	gpu, err := c.Scripts(ctx, maas.ScriptFilter{Kind: maas.ScriptTesting, HardwareType: maas.HardwareGPU})
	require.NoError(t, err)
	require.Len(t, gpu, 1)
	assert.Equal(t, maas.Script{ID: 23, Name: "gpu-burn", Title: "GPU burn-in", Description: "Run gpu-burn on every GPU.",
		Tags: []string{"gpu", "burn-in"}, Kind: maas.ScriptTesting, HardwareType: maas.HardwareGPU}, gpu[0])

	byTag, err := c.Scripts(ctx, maas.ScriptFilter{Names: []string{"raid", "hardware-manifest"}})
	require.NoError(t, err)
	assert.Equal(t, []string{"raid-config", "hardware-manifest"}, scriptNamesOf(byTag), "a name or a tag selects")

	_, err = c.Scripts(ctx, maas.ScriptFilter{Kind: "burn"})
	var bad *maas.MAASBadRequestError
	require.ErrorAs(t, err, &bad)
	assert.Equal(t, "Script type must be commissioning, testing, release or deployment", bad.Message)
}

func TestFidelityMissingScripts(t *testing.T) {
	_, c := scriptHarness(t, func(o *Options) { o.MissingScripts = []string{"firmware-update", "gpu-burn"} })
	ctx := context.Background()

	missing, err := c.MissingScripts(ctx, []string{"raid-config", "firmware-update", "none", "gpu-burn", "burn-in"})
	require.NoError(t, err)
	assert.Equal(t, []string{"firmware-update", "gpu-burn", "burn-in"}, missing,
		"burn-in is only gpu-burn's tag, gone with it")

	missing, err = c.MissingScripts(ctx, []string{"raid-config", "smartctl-validate"})
	require.NoError(t, err)
	assert.Nil(t, missing)
}

func TestFidelityCommissionWithNamedScripts(t *testing.T) {
	h, c := scriptHarness(t, func(o *Options) { o.MissingScripts = []string{"firmware-update"} })
	ctx := context.Background()
	sid := h.create(t, "scripts-1", h.host(t, 1, Faults{}), false)

	_, err := c.Commission(ctx, sid, maas.CommissionParams{SkipBMCConfig: true, CommissioningScripts: []string{"raid-config", "firmware-update"}})
	var bad *maas.MAASBadRequestError
	require.ErrorAs(t, err, &bad)
	assert.Equal(t, map[string][]string{"commissioning_scripts": {"Select a valid choice. firmware-update is not one of the available choices."}}, bad.Fields)
	assert.Equal(t, "New", h.statusName(t, sid), "a refused commission starts nothing")

	_, err = c.Commission(ctx, sid, maas.CommissionParams{SkipBMCConfig: true,
		CommissioningScripts: []string{"raid-config", "manifest"}, TestingScripts: []string{"gpu-burn", "smartctl-validate"}})
	require.NoError(t, err)
	h.clock.Advance(3 * time.Minute)
	assert.Equal(t, "Ready", h.statusName(t, sid))
	set, err := c.ScriptResults(ctx, sid, maas.ScriptsCommissioning)
	require.NoError(t, err)
	names := make([]string, 0, len(set.Results))
	for _, r := range set.Results {
		names = append(names, r.Name)
	}
	assert.Equal(t, []string{"00-maas-00-support-info", "20-maas-01-install-lldpd", "30-maas-01-bmc-config",
		"50-maas-01-commissioning", "maas-lshw", "raid-config", "hardware-manifest"}, names)
	tests, err := c.ScriptResults(ctx, sid, maas.ScriptsTesting)
	require.NoError(t, err)
	require.Len(t, tests.Results, 2)
	assert.Equal(t, "smartctl-validate", tests.Results[0].Name, "in the region's order")
	assert.Equal(t, "gpu-burn", tests.Results[1].Name)
}

func TestFidelityFailingScriptOutput(t *testing.T) {
	h, c := scriptHarness(t)
	ctx := context.Background()

	// A failing commissioning script fails the commissioning.
	sid := h.create(t, "scripts-2", h.host(t, 2, Faults{FailingScript: "raid-config"}), false)
	_, err := c.Commission(ctx, sid, maas.CommissionParams{SkipBMCConfig: true, CommissioningScripts: []string{"raid-config"}})
	require.NoError(t, err)
	h.clock.Advance(3 * time.Minute)
	assert.Equal(t, "Failed commissioning", h.statusName(t, sid))
	set, err := c.ScriptResults(ctx, sid, maas.ScriptsCommissioning)
	require.NoError(t, err)
	failed := failedResults(set)
	require.Len(t, failed, 1)
	assert.Equal(t, "raid-config", failed[0].Name)
	assert.Equal(t, "raid-config: starting\nraid-config: error: step 2 of 3 failed, exit status 1\n", failed[0].Output)

	// A failing test fails the testing; the other tests pass.
	sid = h.create(t, "scripts-3", h.host(t, 3, Faults{FailingScript: "gpu-burn"}), false)
	_, err = c.Commission(ctx, sid, maas.CommissionParams{SkipBMCConfig: true, TestingScripts: []string{"smartctl-validate", "gpu-burn"}})
	require.NoError(t, err)
	h.clock.Advance(4 * time.Minute)
	assert.Equal(t, "Failed testing", h.statusName(t, sid))
	tests, err := c.ScriptResults(ctx, sid, maas.ScriptsTesting)
	require.NoError(t, err)
	failed = failedResults(tests)
	require.Len(t, failed, 1)
	assert.Equal(t, "gpu-burn", failed[0].Name)
	assert.Contains(t, failed[0].Output, "gpu-burn: error")

	// Not named, the script does not run and nothing fails.
	sid = h.create(t, "scripts-4", h.host(t, 4, Faults{FailingScript: "gpu-burn"}), false)
	_, err = c.Commission(ctx, sid, maas.CommissionParams{SkipBMCConfig: true})
	require.NoError(t, err)
	h.clock.Advance(4 * time.Minute)
	assert.Equal(t, "Ready", h.statusName(t, sid))
}

func failedResults(set maas.ScriptSet) []maas.ScriptResult {
	var out []maas.ScriptResult
	for _, r := range set.Results {
		if r.StatusName == "Failed" {
			out = append(out, r)
		}
	}
	return out
}

func TestFidelityProbeReportsMissingScripts(t *testing.T) {
	_, c := scriptHarness(t, func(o *Options) { o.MissingScripts = []string{"gpu-burn"} })
	ctx := context.Background()
	res, err := c.Probe(ctx)
	require.NoError(t, err)
	require.Empty(t, res.Problem())

	require.NoError(t, c.CheckScripts(ctx, &res, []string{"raid-config", "gpu-burn"}))
	assert.Equal(t, []string{"gpu-burn"}, res.MissingScripts)
	assert.Equal(t, "maas scripts: the region lacks 1 script(s) the site's profiles name: gpu-burn", res.Problem())

	require.NoError(t, c.CheckScripts(ctx, &res, nil))
	assert.Empty(t, res.Problem(), "no names, nothing missing")
}

func TestMissingScriptsAtRunTime(t *testing.T) {
	h, c := scriptHarness(t)
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPut, h.srv.URL+"/_sim/scripts/missing",
		strings.NewReader(`{"missing_scripts":["raid-config"]}`))
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)

	missing, err := c.MissingScripts(context.Background(), []string{"raid-config", "gpu-burn"})
	require.NoError(t, err)
	assert.Equal(t, []string{"raid-config"}, missing)

	h.sim.SetMissingScripts(nil)
	missing, err = c.MissingScripts(context.Background(), []string{"raid-config"})
	require.NoError(t, err)
	assert.Nil(t, missing)
}

func TestFidelitySiteProberChecksScripts(t *testing.T) {
	h, _ := scriptHarness(t, func(o *Options) { o.MissingScripts = []string{"firmware-update"} })
	p := maas.SiteProber{}
	res, err := p.ProbeScripts(context.Background(), h.srv.URL+"/MAAS", domain.Secret(testKey), []string{"firmware-update", "gpu-burn"})
	require.NoError(t, err)
	assert.Equal(t, []string{"firmware-update"}, res.MissingScripts)
	assert.Contains(t, res.Problem(), "firmware-update")

	before := h.sim.Calls().Total
	res, err = p.ProbeScripts(context.Background(), h.srv.URL+"/MAAS", domain.Secret(testKey), nil)
	require.NoError(t, err)
	assert.Empty(t, res.Problem())
	assert.Equal(t, 2, h.sim.Calls().Total-before, "no names: the probe's two reads only")
}
