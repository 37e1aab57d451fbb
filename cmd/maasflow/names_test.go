package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Output names sites and profiles where the API names them.
func TestOutputNamesSitesAndProfiles(t *testing.T) {
	const obID = "0b000000-0000-4000-8000-000000000001"
	named := strings.Replace(adminStateWith("running", "deploy", 1, "").Body,
		`"site_id":"5e000000-0000-4000-8000-000000000001",`,
		`"site_id":"5e000000-0000-4000-8000-000000000001","site_name":"lab-a","profile_id":"9f000000-0000-4000-8000-000000000001","profile_name":"h100-jammy",`, 1)
	api := newAdminFakeAPI(t)
	api.on("GET /api/v1/admin/onboardings", adminReply{http.StatusOK, `{"items":[` + named + `],"next_cursor":""}`})
	api.on("GET /api/v1/admin/onboardings/"+obID, adminReply{http.StatusOK, named})
	api.on("GET /api/v1/admin/nodes", adminReply{http.StatusOK, `{"items":[{"id":"n1","site_id":"5e000000-0000-4000-8000-000000000001","site_name":"lab-a","hostname":"gpu-01","sku_id":"h100x8","status":"active"}],"next_cursor":""}`})

	res := api.run(t, adminInvocation{}, "onboardings", "list")
	require.Equal(t, 0, res.code, res.stderr)
	assert.Contains(t, res.stdout, "lab-a")
	assert.NotContains(t, res.stdout, "5e000000-0000-4000-8000-000000000001", "the name replaces the id in a table")

	res = api.run(t, adminInvocation{}, "onboardings", "get", obID)
	require.Equal(t, 0, res.code, res.stderr)
	assert.Contains(t, res.stdout, "lab-a (5e000000-0000-4000-8000-000000000001)")
	assert.Contains(t, res.stdout, "h100-jammy (9f000000-0000-4000-8000-000000000001)")

	res = api.run(t, adminInvocation{}, "nodes", "list")
	require.Equal(t, 0, res.code, res.stderr)
	assert.Contains(t, res.stdout, "lab-a")
	assert.NotContains(t, res.stdout, "5e000000-0000-4000-8000-000000000001")
}
