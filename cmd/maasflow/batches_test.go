package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const batchRecordJSON = `{"id":"b1","site_id":"` + testSiteID + `","profile_id":"` + testProfileID + `","sku_id":"h100x8","status":"running",` +
	`"counts":{"failed":1,"running":1,"completed":1},"items":[` +
	`{"hostname":"gpu-01","onboarding_id":"o-1","status":"completed","stage":"done","attempt":1},` +
	`{"hostname":"gpu-02","onboarding_id":"o-2","status":"running","stage":"wait_deployed","attempt":2},` +
	`{"hostname":"gpu-03","onboarding_id":"","status":"failed","error":"hostname: gpu-03 is an active node"}],` +
	`"created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:05:00Z"}`

func TestBatchesList(t *testing.T) {
	api := newAdminFakeAPI(t)
	list := `{"items":[` + batchRecordJSON + `]}`
	api.on("GET /api/v1/admin/onboarding-batches", adminReply{http.StatusOK, list})

	res := api.run(t, adminInvocation{}, "batches", "list", "--limit", "5")
	require.Equal(t, 0, res.code, res.stderr)
	assert.Regexp(t, `b1\s+running\s+`+testSiteID+`\s+3\s+running=1 completed=1 failed=1\s+2026-01-01T00:00:00Z`, res.stdout,
		"counts in the order of the onboarding statuses")
	assert.Equal(t, "limit=5", api.requests()[0].Query)

	res = api.run(t, adminInvocation{}, "batches", "list", "-o", "json")
	require.Equal(t, 0, res.code, res.stderr)
	assert.JSONEq(t, list, res.stdout)

	res = api.run(t, adminInvocation{}, "batches", "list", "--limit", "0")
	assert.Equal(t, 2, res.code)
	assert.Contains(t, res.stderr, "--limit must be a positive integer")
	assert.Len(t, api.requests(), 2, "a misuse sends nothing")
}

func TestBatchesGet(t *testing.T) {
	api := newAdminFakeAPI(t)
	api.on("GET /api/v1/admin/onboarding-batches/b1", adminReply{http.StatusOK, batchRecordJSON})

	res := api.run(t, adminInvocation{}, "batches", "get", "b1")
	require.Equal(t, 0, res.code, res.stderr)
	for _, want := range []string{
		`Profile:\s+` + testProfileID,
		`Counts:\s+running=1 completed=1 failed=1`,
		`Updated:\s+2026-01-01T00:05:00Z`,
		`gpu-02\s+o-2\s+running\s+wait_deployed\s+2\s+-`,
		`gpu-03\s+-\s+failed\s+-\s+0\s+hostname: gpu-03 is an active node`,
	} {
		assert.Regexp(t, want, res.stdout)
	}

	res = api.run(t, adminInvocation{}, "batches", "get", "b1", "-o", "yaml")
	require.Equal(t, 0, res.code, res.stderr)
	assertYAMLIsJSON(t, batchRecordJSON, res.stdout)

	res = api.run(t, adminInvocation{}, "batches", "get", "b2")
	assert.Equal(t, 1, res.code)
	assert.Equal(t, "error: not_found: no such endpoint (correlation_id cid-test)\n", res.stderr)
}

func TestSiteProbeStates(t *testing.T) {
	api := newAdminFakeAPI(t)
	for _, tc := range []struct{ probe, want string }{
		{`"probe":null`, `Probe:\s+not probed since the URL or credentials last changed`},
		{`"probe":{"healthy":false,"error":"MAAS answered 401","checked_at":"2026-01-01T00:00:00Z"}`,
			`Probe:\s+unhealthy: MAAS answered 401 \(checked 2026-01-01T00:00:00Z\)`},
	} {
		site := strings.Replace(adminSiteJSON, `"probe":{"healthy":true,"version":"3.5.0","is_admin":true,"checked_at":"2026-01-01T00:00:00Z"}`, tc.probe, 1)
		require.NotEqual(t, adminSiteJSON, site, "the fixture's probe was replaced")
		api.on("GET "+sitesPath+"/"+testSiteID, adminReply{http.StatusOK, site})
		res := api.run(t, adminInvocation{}, "sites", "get", testSiteID)
		require.Equal(t, 0, res.code, res.stderr)
		assert.Regexp(t, tc.want, res.stdout)
	}
}

func TestSKUCompletion(t *testing.T) {
	api := newAdminFakeAPI(t)
	api.on("GET /api/v1/admin/skus", adminReply{http.StatusOK, `{"items":[` + adminSKUJSON + `]}`})
	for _, args := range [][]string{
		{"__complete", "onboard", "--sku", ""},
		{"__complete", "skus", "get", ""},
		{"__complete", "nodes", "list", "--sku", ""},
	} {
		res := api.run(t, adminInvocation{}, args...)
		assert.Equal(t, "h100x8\n:4\n", res.stdout, args)
	}
	res := api.run(t, adminInvocation{}, "__complete", "skus", "get", "h100x8", "")
	assert.Equal(t, ":4\n", res.stdout, "one SKU argument only")

	// Without a token completion proposes nothing and asks nothing.
	res = runAdminTest(t, map[string]string{envAdminAPIURL: "http://127.0.0.1:1"}, adminInvocation{}, "__complete", "skus", "get", "")
	assert.Equal(t, ":4\n", res.stdout)
}
