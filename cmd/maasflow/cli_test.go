package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

const (
	testSiteID    = "5e000000-0000-4000-8000-000000000001"
	testProfileID = "9f000000-0000-4000-8000-000000000001"
	testOBID      = "0b000000-0000-4000-8000-000000000001"
	sitesPath     = "/api/v1/admin/maas-sites"
)

func TestCompletion(t *testing.T) {
	api := newAdminFakeAPI(t)
	api.on("GET "+sitesPath, adminReply{http.StatusOK, `{"items":[` + adminSiteJSON + `]}`})
	api.on("GET "+sitesPath+"/"+testSiteID+"/profiles", adminReply{http.StatusOK, `{"items":[` + adminProfileJSON + `]}`})

	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		res := api.run(t, adminInvocation{}, "completion", shell)
		assert.Equal(t, 0, res.code, shell)
		assert.Contains(t, res.stdout, "maasflow", shell)
	}
	res := api.run(t, adminInvocation{}, "__complete", "onb")
	assert.Contains(t, res.stdout, "onboard\t")
	assert.Contains(t, res.stdout, "onboardings\t")

	res = api.run(t, adminInvocation{}, "__complete", "sites", "get", "")
	assert.Equal(t, 0, res.code)
	assert.Equal(t, "lab\n:4\n", res.stdout, "site names from the API, no file completion")

	res = api.run(t, adminInvocation{}, "__complete", "onboard", "--site", "lab", "--profile", "")
	assert.Equal(t, "gpu\n:4\n", res.stdout, "the chosen site's profiles")

	res = api.run(t, adminInvocation{}, "__complete", "skus", "list", "-o", "")
	assert.Equal(t, "table\njson\nyaml\n:4\n", res.stdout)
}

func TestNamesForIDs(t *testing.T) {
	sitesList := adminReply{http.StatusOK, `{"items":[` + adminSiteJSON + `]}`}
	profilesList := adminReply{http.StatusOK, `{"items":[` + adminProfileJSON + `]}`}

	t.Run("a site name resolves to its id", func(t *testing.T) {
		api := newAdminFakeAPI(t)
		api.on("GET "+sitesPath, sitesList)
		api.on("GET "+sitesPath+"/"+testSiteID, adminReply{http.StatusOK, adminSiteJSON})
		res := api.run(t, adminInvocation{}, "sites", "get", "lab")
		require.Equal(t, 0, res.code, res.stderr)
		reqs := api.requests()
		require.Len(t, reqs, 2)
		assert.Equal(t, sitesPath+"/"+testSiteID, reqs[1].Path)
	})
	t.Run("an id is used without a lookup", func(t *testing.T) {
		api := newAdminFakeAPI(t)
		api.on("GET "+sitesPath+"/"+testSiteID, adminReply{http.StatusOK, adminSiteJSON})
		res := api.run(t, adminInvocation{}, "sites", "get", testSiteID)
		require.Equal(t, 0, res.code, res.stderr)
		assert.Len(t, api.requests(), 1)
	})
	t.Run("an unknown name is an error, never an empty answer", func(t *testing.T) {
		api := newAdminFakeAPI(t)
		api.on("GET "+sitesPath, sitesList)
		for _, args := range [][]string{
			{"sites", "get", "demo"},
			{"onboardings", "list", "--site", "demo"},
			{"profiles", "list", "demo"},
			{"roce", "list", "demo"},
		} {
			res := api.run(t, adminInvocation{}, args...)
			assert.Equal(t, 1, res.code, args)
			assert.Empty(t, res.stdout, args)
			assert.Equal(t, "error: not_found: no site has the id or name \"demo\"; list them with: maasflow sites list\n", res.stderr, args)
		}
	})
	t.Run("a name two sites carry is ambiguous", func(t *testing.T) {
		api := newAdminFakeAPI(t)
		api.on("GET "+sitesPath, adminReply{http.StatusOK, `{"items":[{"id":"a","name":"lab"},{"id":"b","name":"lab"}]}`})
		res := api.run(t, adminInvocation{}, "sites", "get", "lab")
		assert.Equal(t, 1, res.code)
		assert.Contains(t, res.stderr, `"lab" names 2 sites (a, b); give the id`)
	})
	t.Run("onboard takes site and profile names", func(t *testing.T) {
		api := newAdminFakeAPI(t)
		api.on("GET "+sitesPath, sitesList)
		api.on("GET "+sitesPath+"/"+testSiteID+"/profiles", profilesList)
		api.on("POST /api/v1/admin/onboardings", adminReply{http.StatusAccepted, adminOnboardingJSON})
		res := api.run(t, adminInvocation{}, "onboard", "--site", "lab", "--profile", "gpu", "--sku", "h100x8", "--hostname", "gpu-01", "--ipmi-ip", "10.0.0.5")
		require.Equal(t, 0, res.code, res.stderr)
		reqs := api.requests()
		require.Len(t, reqs, 3)
		assert.JSONEq(t, `{"site_id":"`+testSiteID+`","profile_id":"`+testProfileID+`","sku_id":"h100x8","hostname":"gpu-01","ipmi_ip":"10.0.0.5"}`, reqs[2].Body)
	})
	t.Run("an unknown profile name is an error", func(t *testing.T) {
		api := newAdminFakeAPI(t)
		api.on("GET "+sitesPath, sitesList)
		api.on("GET "+sitesPath+"/"+testSiteID+"/profiles", profilesList)
		res := api.run(t, adminInvocation{}, "profiles", "get", "lab", "gpu-noble")
		assert.Equal(t, 1, res.code)
		assert.Contains(t, res.stderr, `error: not_found: no profile has the id or name "gpu-noble"`)
	})
	t.Run("an onboarding by host name is the host's newest", func(t *testing.T) {
		api := newAdminFakeAPI(t)
		api.on("GET /api/v1/admin/onboardings", adminReply{http.StatusOK, `{"items":[` + adminOnboardingJSON + `,{"id":"older","site_id":"` + testSiteID + `"}],"next_cursor":""}`})
		api.on("GET /api/v1/admin/onboardings/"+testOBID, adminReply{http.StatusOK, adminOnboardingJSON})
		res := api.run(t, adminInvocation{}, "onboardings", "get", "gpu-01")
		require.Equal(t, 0, res.code, res.stderr)
		reqs := api.requests()
		require.Len(t, reqs, 2)
		assert.Equal(t, "hostname=gpu-01&limit=50", reqs[0].Query)
		assert.Equal(t, "/api/v1/admin/onboardings/"+testOBID, reqs[1].Path)
	})
	t.Run("a host name on two sites is ambiguous", func(t *testing.T) {
		api := newAdminFakeAPI(t)
		api.on("GET /api/v1/admin/onboardings", adminReply{http.StatusOK, `{"items":[{"id":"x","site_id":"s-a"},{"id":"y","site_id":"s-b"}]}`})
		res := api.run(t, adminInvocation{}, "onboardings", "watch", "gpu-01")
		assert.Equal(t, 1, res.code)
		assert.Contains(t, res.stderr, `"gpu-01" names 2 onboardings (x, y); give the id`)
	})
}

func TestYAMLOutput(t *testing.T) {
	api := newAdminFakeAPI(t)
	site := strings.Replace(adminSiteJSON, `"name":"lab"`, `"name":"true"`, 1)
	api.on("GET "+sitesPath+"/"+testSiteID, adminReply{http.StatusOK, site})
	res := api.run(t, adminInvocation{}, "sites", "get", testSiteID, "-o", "yaml")
	require.Equal(t, 0, res.code, res.stderr)
	assert.True(t, strings.HasPrefix(res.stdout, "id: "+testSiteID+"\nname: \"true\"\n"), "block style, keys in the API's order, strings stay strings:\n%s", res.stdout)

	var fromYAML, fromJSON any
	require.NoError(t, yaml.Unmarshal([]byte(res.stdout), &fromYAML))
	require.NoError(t, json.Unmarshal([]byte(site), &fromJSON))
	y, err := json.Marshal(fromYAML)
	require.NoError(t, err)
	assert.JSONEq(t, site, string(y), "the same document")
	_ = fromJSON
}

func TestNoHeaders(t *testing.T) {
	api := newAdminFakeAPI(t)
	api.on("GET /api/v1/admin/skus", adminReply{http.StatusOK, `{"items":[` + adminSKUJSON + `]}`})
	res := api.run(t, adminInvocation{}, "skus", "list", "--no-headers")
	require.Equal(t, 0, res.code, res.stderr)
	assert.Equal(t, "h100x8  H100  8  true  -\n", res.stdout)

	api.on("GET /api/v1/admin/skus", adminReply{http.StatusOK, `{"items":[]}`})
	res = api.run(t, adminInvocation{}, "skus", "list", "--no-headers")
	assert.Empty(t, res.stdout, "an empty table prints nothing for scripts")
	res = api.run(t, adminInvocation{}, "skus", "list")
	assert.Equal(t, "ID  GPU_MODEL  GPUS  ACTIVE  DESCRIPTION\n(none)\n", res.stdout)
}

func TestVersion(t *testing.T) {
	res := runAdminTest(t, nil, adminInvocation{}, "version")
	require.Equal(t, 0, res.code, res.stderr)
	assert.Regexp(t, `(?m)^Version:\s+\S+`, res.stdout)
	assert.Regexp(t, `(?m)^Go:\s+go1\.`, res.stdout)

	res = runAdminTest(t, nil, adminInvocation{}, "version", "-o", "json")
	require.Equal(t, 0, res.code, res.stderr)
	var v adminVersion
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &v))
	assert.NotEmpty(t, v.Version)
	assert.NotEmpty(t, v.GoVersion)
}

func TestHelpExitsZeroEverywhere(t *testing.T) {
	for _, args := range [][]string{
		{"--help"}, {"-h"}, {"help"}, {"help", "local"}, {"local", "--help"}, {"sim", "-h"}, {"asl", "--help"},
		{"asl", "run", "--help"}, {"asl", "help"}, {"help", "asl", "validate"}, {"version", "--help"},
		{"completion", "--help"}, {"help", "batches", "watch"}, {"skus", "help"}, {"sites", "help", "create"},
	} {
		res := runAdminTest(t, nil, adminInvocation{}, args...)
		assert.Equal(t, 0, res.code, args)
		assert.Contains(t, res.stdout, "Usage:", args)
		assert.Empty(t, res.stderr, args)
	}
}

func TestGroupHelpNamesTheSubCommand(t *testing.T) {
	res := runAdminTest(t, nil, adminInvocation{}, "sites", "help", "create")
	require.Equal(t, 0, res.code)
	assert.Contains(t, res.stdout, "maasflow sites create --name NAME --maas-url URL")
}

func TestOnboardCSVBatch(t *testing.T) {
	const batchJSON = `{"id":"b1","status":"running","items":[` +
		`{"hostname":"gpu-01","onboarding_id":"o-1","status":"pending"},` +
		`{"hostname":"gpu-02","onboarding_id":"","status":"failed","error":{"code":"onboarding_exists","message":"hostname: gpu-02 already has open onboarding o-9"}}]}`
	base := []string{"onboard", "--site", testSiteID, "--profile", testProfileID, "--sku", "h100x8", "--csv", "-"}

	t.Run("header in any order, comments, one batch", func(t *testing.T) {
		api := newAdminFakeAPI(t)
		api.on("POST /api/v1/admin/onboardings/batch", adminReply{http.StatusAccepted, batchJSON})
		csv := "# rack 7\nipmi_ip, Hostname\n\n10.0.0.1,gpu-01\n10.0.0.2 , gpu-02\n"
		res := api.run(t, adminInvocation{stdin: csv}, base...)
		require.Equal(t, 0, res.code, res.stderr)
		reqs := api.requests()
		require.Len(t, reqs, 1)
		assert.JSONEq(t, `{"site_id":"`+testSiteID+`","profile_id":"`+testProfileID+`","sku_id":"h100x8",`+
			`"nodes":[{"hostname":"gpu-01","ipmi_ip":"10.0.0.1"},{"hostname":"gpu-02","ipmi_ip":"10.0.0.2"}]}`, reqs[0].Body)
		assert.Contains(t, res.stdout, "batch b1 accepted: 1 of 2 node(s) started")
		assert.Regexp(t, `gpu-02\s+-\s+failed\s+onboarding_exists: hostname: gpu-02 already has open onboarding o-9`, res.stdout)
		assert.Contains(t, res.stdout, "maasflow batches watch b1")
	})
	t.Run("from a file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "rack.csv")
		require.NoError(t, os.WriteFile(path, []byte("hostname,ipmi_ip\ngpu-01,10.0.0.1\n"), 0o600))
		api := newAdminFakeAPI(t)
		api.on("POST /api/v1/admin/onboardings/batch", adminReply{http.StatusAccepted, batchJSON})
		args := append(append([]string{}, base[:len(base)-1]...), path, "-o", "json")
		res := api.run(t, adminInvocation{}, args...)
		require.Equal(t, 0, res.code, res.stderr)
		assert.JSONEq(t, batchJSON, res.stdout)
	})
	for _, tc := range []struct{ name, csv, want string }{
		{"duplicate host", "hostname,ipmi_ip\ngpu-01,10.0.0.1\n# spare\nGPU-01,10.0.0.2\n", "CSV line 4: host GPU-01 is already on line 2"},
		{"missing column", "hostname\ngpu-01\n", "CSV line 1: the header has no ipmi_ip column"},
		{"unknown column", "hostname,ipmi_ip,rack\ngpu-01,10.0.0.1,7\n", `CSV line 1: unknown column "rack"`},
		{"short row", "hostname,ipmi_ip\ngpu-01\n", "CSV line 2: 1 fields, the header has 2"},
		{"empty field", "hostname,ipmi_ip\ngpu-01,\n", "CSV line 2: ipmi_ip is empty"},
		{"no rows", "hostname,ipmi_ip\n", "CSV: no nodes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := newAdminFakeAPI(t)
			res := api.run(t, adminInvocation{stdin: tc.csv}, base...)
			assert.Equal(t, 2, res.code)
			assert.Contains(t, res.stderr, tc.want)
			assert.Empty(t, api.requests(), "nothing is sent")
		})
	}
	t.Run("an API error names the CSV line", func(t *testing.T) {
		api := newAdminFakeAPI(t)
		api.on("POST /api/v1/admin/onboardings/batch", adminReply{http.StatusBadRequest,
			`{"error":{"code":"invalid_request","field":"nodes[1].ipmi_ip","message":"nodes[1].ipmi_ip: must be an IPv4 address","correlation_id":"c-1"}}`})
		res := api.run(t, adminInvocation{stdin: "hostname,ipmi_ip\n# one\ngpu-01,10.0.0.1\ngpu-02,10.0.0.300\n"}, base...)
		assert.Equal(t, 1, res.code)
		assert.Contains(t, res.stderr, "error: invalid_request: nodes[1].ipmi_ip: must be an IPv4 address (correlation_id c-1)\nhint: nodes[1] is CSV line 4 of -\n")
	})
}

// batchFixture answers a batch of two nodes: gpu-01 completes through its
// stages, gpu-02 ends in manual intervention.
func batchFixture(t *testing.T) *adminFakeAPI {
	t.Helper()
	api := newAdminFakeAPI(t)
	batch := func(s1, s2 string) adminReply {
		return adminReply{http.StatusOK, `{"id":"b1","status":"running","site_id":"` + testSiteID + `","items":[` +
			`{"hostname":"gpu-01","onboarding_id":"o-1","status":"` + s1 + `"},` +
			`{"hostname":"gpu-02","onboarding_id":"o-2","status":"` + s2 + `"}]}`}
	}
	api.on("GET /api/v1/admin/onboarding-batches/b1", batch("running", "running"), batch("running", "manual_intervention"), batch("completed", "manual_intervention"))
	node := func(id, host, status, stage string, rows ...string) adminReply {
		return adminReply{http.StatusOK, `{"id":"` + id + `","hostname":"` + host + `","status":"` + status + `","stage":"` + stage +
			`","attempt":1,"created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:30Z","timeline":[` + strings.Join(rows, ",") + `]}`}
	}
	api.on("GET /api/v1/admin/onboardings/o-1",
		node("o-1", "gpu-01", "running", "commission", tlEnterValidate, tlExitValidate, tlEnterCommission),
		node("o-1", "gpu-01", "running", "wait_ready", tlEnterValidate, tlExitValidate, tlEnterCommission, tlMAASCommissioning, tlExitCommission, tlEnterWaitReady),
		node("o-1", "gpu-01", "completed", "done", tlEnterValidate, tlExitValidate, tlEnterCommission, tlMAASCommissioning, tlExitCommission, tlEnterWaitReady))
	api.on("GET /api/v1/admin/onboardings/o-2",
		node("o-2", "gpu-02", "running", "validate", tlEnterValidate),
		node("o-2", "gpu-02", "manual_intervention", "validate", tlEnterValidate, tlClassification))
	return api
}

func TestBatchWatchPiped(t *testing.T) {
	api := batchFixture(t)
	res := api.run(t, adminInvocation{advance: time.Second}, "batches", "watch", "b1", "--interval", "1s")
	assert.Equal(t, 3, res.code, "a node needs an operator: %s", res.stderr)
	for _, want := range []string{
		"2026-01-01T00:00:01Z  gpu-01            ▶ enter  validate          from start; status running",
		"2026-01-01T00:00:03Z  gpu-01            ▶ enter  commission        from validate",
		"2026-01-01T00:00:04Z  gpu-01            MAAS     wait_ready        INFO: Commissioning",
		"2026-01-01T00:00:05Z  gpu-01            ▶ enter  wait_ready        from commission",
		"2026-01-01T00:00:09Z  gpu-02            note     wait_deployed     classification: class datasource, retry",
	} {
		assert.Equal(t, 1, strings.Count(res.stdout, want), "once: %s\n%s", want, res.stdout)
	}
	assert.NotContains(t, res.stdout, "\x1b[", "no cursor movement when piped")
	assert.Contains(t, res.stdout, "batch b1 ended: completed=1 manual_intervention=1")
	assert.Regexp(t, `gpu-02\s+manual_intervention\s+validate`, res.stdout, "the final table")

	gets := map[string]int{}
	for _, rq := range api.requests() {
		gets[rq.Path]++
	}
	assert.Equal(t, 2, gets["/api/v1/admin/onboardings/o-2"], "a node that ended is not polled again")
}

func TestBatchWatchJSONLines(t *testing.T) {
	api := batchFixture(t)
	res := api.run(t, adminInvocation{advance: time.Second}, "batches", "watch", "b1", "--interval", "1s", "-o", "json")
	assert.Equal(t, 3, res.code, res.stderr)
	lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
	hosts := map[string]int{}
	for _, l := range lines {
		var e adminWatchEvent
		require.NoError(t, json.Unmarshal([]byte(l), &e), l)
		require.NotEmpty(t, e.Kind)
		hosts[e.Hostname]++
	}
	assert.Equal(t, map[string]int{"gpu-01": 8, "gpu-02": 4}, hosts)
}

func TestBatchWatchLiveTable(t *testing.T) {
	api := batchFixture(t)
	var out, errb strings.Builder
	env := testEnv(api, &out, &errb)
	env.stdoutTTY = true
	env.width = func() int { return 72 }
	code := execute(t.Context(), env, []string{"batches", "watch", "b1", "--interval", "1s"})
	assert.Equal(t, 3, code, errb.String())
	text := out.String()
	assert.Contains(t, text, "\x1b[", "the table is redrawn in place")
	assert.Contains(t, text, "batch b1  [")
	assert.Contains(t, text, "] 2/2 ended")
	assert.Contains(t, text, "▶ enter  wait_ready", "the timeline scrolls above the table")
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "gpu-0") || strings.HasPrefix(l, "HOSTNAME") {
			assert.LessOrEqual(t, len([]rune(l)), 72, "table lines fit the terminal: %q", l)
		}
	}
	assert.Regexp(t, `gpu-01\s+completed\s+done\s+Commissioning\s+1\s+0:30`, text, "stage, MAAS status, attempt and elapsed")
}
