package main

import (
	"net/http"
	"testing"

	"github.com/maasflow/maasflow/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The destructive verbs, each with the request it sends when confirmed.
var destructiveVerbs = []struct {
	name, method, path string
	args               []string
}{
	{"decommission full", "POST", nodesPath + "/" + testNodeID + "/decommission",
		[]string{"decommission", "start", testNodeID, "--mode", "full"}},
	{"nodes remove", "POST", nodesPath + "/" + testNodeID + "/remove", []string{"nodes", "remove", testNodeID}},
	{"restart-clean", "POST", "/api/v1/admin/onboardings/" + adminRecoveryID + "/restart-clean",
		[]string{"onboardings", "restart-clean", adminRecoveryID}},
	{"sites disable", "DELETE", "/api/v1/admin/maas-sites/" + testSiteID, []string{"sites", "disable", testSiteID}},
}

func destructiveAPI(t *testing.T, method, path string) *adminFakeAPI {
	t.Helper()
	api := newAdminFakeAPI(t)
	api.on(method+" "+path, adminReply{http.StatusOK, `{"id":"x","status":"pending","stage":"start","hostname":"gpu-01"}`})
	return api
}

func TestDestructiveVerbsNeedYesWithoutATerminal(t *testing.T) {
	for _, v := range destructiveVerbs {
		t.Run(v.name, func(t *testing.T) {
			api := destructiveAPI(t, v.method, v.path)
			res := api.run(t, adminInvocation{}, v.args...)
			assert.Equal(t, 2, res.code, res.stderr)
			assert.Contains(t, res.stderr, "pass --yes to confirm (or --dry-run to see what it would do)")
			assert.Empty(t, api.requests(), "nothing is sent unconfirmed")

			res = api.run(t, adminInvocation{}, append(v.args, "--yes")...)
			require.Equal(t, 0, res.code, res.stderr)
			reqs := api.requests()
			require.Len(t, reqs, 1)
			assert.Equal(t, v.method+" "+v.path, reqs[0].Method+" "+reqs[0].Path)
		})
	}
}

func TestDestructiveVerbsAskOnATerminal(t *testing.T) {
	for _, v := range destructiveVerbs {
		t.Run(v.name, func(t *testing.T) {
			api := destructiveAPI(t, v.method, v.path)
			res := api.run(t, adminInvocation{stdinTTY: true, stdin: "n\n"}, v.args...)
			assert.Equal(t, 1, res.code, res.stderr)
			assert.Contains(t, res.stderr, "Continue? [y/N] ")
			assert.Contains(t, res.stderr, "error: aborted: nothing was changed")
			assert.Empty(t, api.requests())

			res = api.run(t, adminInvocation{stdinTTY: true, stdin: "yes\n"}, v.args...)
			require.Equal(t, 0, res.code, res.stderr)
			require.Len(t, api.requests(), 1)
		})
	}
	t.Run("reimage does not ask", func(t *testing.T) {
		api := destructiveAPI(t, "POST", nodesPath+"/"+testNodeID+"/decommission")
		api.on("POST "+nodesPath+"/"+testNodeID+"/decommission", adminReply{http.StatusAccepted, decomJSON("pending", "start", "pending")})
		res := api.run(t, adminInvocation{}, "decommission", "start", testNodeID, "--mode", "reimage")
		require.Equal(t, 0, res.code, res.stderr)
	})
}

const planJSON = `{"dry_run":true,"action":"node.decommission","summary":"drain, release with erase, remove the node, delete the machine from MAAS",` +
	`"node":{"id":"` + testNodeID + `","hostname":"gpu-01","status":"active","status_after":"removed"},` +
	`"machine":{"system_id":"abc123","release":true,"delete":true},"allocations":[{"allocation_id":"al-1","node_id":"` + testNodeID + `","state":"released"}],` +
	`"erase_mode":"secure","release_fallback":false}`

func TestDryRunShowsTheAPIsPlan(t *testing.T) {
	api := newAdminFakeAPI(t)
	api.on("POST "+nodesPath+"/"+testNodeID+"/decommission", adminReply{http.StatusOK, planJSON})
	res := api.run(t, adminInvocation{}, "decommission", "start", testNodeID, "--mode", "full", "--dry-run")
	require.Equal(t, 0, res.code, res.stderr)
	assert.Contains(t, res.stdout, "dry run, nothing was changed: node.decommission would drain, release with erase, remove the node, delete the machine from MAAS")
	assert.Regexp(t, `Node:\s+gpu-01 \(`+testNodeID+`\): active → removed`, res.stdout)
	assert.Regexp(t, `MAAS machine:\s+abc123: released, then deleted from MAAS`, res.stdout)
	assert.Regexp(t, `Erase:\s+secure`, res.stdout)
	assert.Regexp(t, `Allocations:\s+al-1 \(released\)`, res.stdout)
	reqs := api.requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, "dry_run=true", reqs[0].Query)
	assert.JSONEq(t, `{"mode":"full"}`, reqs[0].Body)

	res = api.run(t, adminInvocation{}, "decommission", "start", testNodeID, "--mode", "full", "--dry-run", "-o", "json")
	require.Equal(t, 0, res.code, res.stderr)
	assert.JSONEq(t, planJSON, res.stdout, "-o json is the API's plan verbatim")

	res = api.run(t, adminInvocation{}, "decommission", "start", testNodeID, "--mode", "storage_cleanup", "--dry-run")
	assert.Equal(t, 2, res.code)
	assert.Contains(t, res.stderr, "--dry-run is for --mode full or reimage")
}

func TestDryRunAgainstTheAPIChangesNothing(t *testing.T) {
	env := map[string]string{envAdminAPIURL: newAdminRealAPI(t), envAdminToken: adminTestToken}
	res := runAdminTest(t, env, adminInvocation{}, "sites", "create", "--name", "lab", "--maas-url", "http://maas.lab:5240/MAAS")
	require.Equal(t, 0, res.code, res.stderr)
	res = runAdminTest(t, env, adminInvocation{}, "sites", "disable", "lab", "--dry-run")
	require.Equal(t, 0, res.code, res.stderr)
	assert.Contains(t, res.stdout, "dry run, nothing was changed: site.disable would disable the site: it takes no new onboardings")
	assert.Regexp(t, `Site:\s+lab \(id-\d+\): active → disabled`, res.stdout)
	res = runAdminTest(t, env, adminInvocation{}, "sites", "get", "lab", "-o", "json")
	require.Equal(t, 0, res.code, res.stderr)
	assert.Contains(t, res.stdout, `"status":"active"`)
	res = runAdminTest(t, env, adminInvocation{}, "nodes", "remove", "no-such-node", "--dry-run")
	assert.Equal(t, 1, res.code)
	assert.Contains(t, res.stderr, "not_found")
}

func TestRestartCleanDryRunAsksTheAPI(t *testing.T) {
	api := newAdminFakeAPI(t)
	api.on("POST /api/v1/admin/onboardings/"+adminRecoveryID+"/restart-clean", adminReply{http.StatusOK,
		`{"dry_run":true,"action":"onboarding.restart-clean","summary":"start attempt 3 of gpu-01 from the reset: release MAAS machine abc123 with erase \"quick\" unless MAAS shows it Ready, wait for Ready, commission it afresh; every enrollment token of the node is revoked",` +
			`"node":{"id":"n1","hostname":"gpu-01","status":"failed","status_after":"onboarding"},"machine":{"system_id":"abc123","release":true,"delete":false},` +
			`"allocations":[],"erase_mode":"quick","revokes_tokens":true}`})
	res := api.run(t, adminInvocation{}, "onboardings", "restart-clean", adminRecoveryID, "--dry-run", "--reason", "check")
	require.Equal(t, 0, res.code, res.stderr)
	assert.Contains(t, res.stdout, "dry run, nothing was changed: onboarding.restart-clean would start attempt 3 of gpu-01 from the reset: release MAAS machine abc123")
	assert.Regexp(t, `MAAS machine:\s+abc123: released`, res.stdout)
	assert.Regexp(t, `Erase:\s+quick`, res.stdout)
	assert.Regexp(t, `Tokens:\s+every enrollment token of the node revoked`, res.stdout)
	reqs := api.requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, "dry_run=true", reqs[0].Query, "the API's dry run, which writes nothing")
	assert.JSONEq(t, `{"reason":"check"}`, reqs[0].Body)

	// The API refuses it as it would refuse the operation; the CLI lists
	// what the onboarding allows.
	api = newAdminFakeAPI(t)
	api.on("POST /api/v1/admin/onboardings/"+adminRecoveryID+"/restart-clean", adminReply{http.StatusConflict,
		`{"error":{"code":"conflict","message":"onboarding is running at stage deploy: restart-clean is not allowed; allowed operations: cancel","correlation_id":"c"}}`})
	api.on("GET /api/v1/admin/onboardings/"+adminRecoveryID, adminReply{http.StatusOK,
		`{"id":"` + adminRecoveryID + `","hostname":"gpu-01","status":"running","stage":"deploy","attempt":1,"allowed_operations":["cancel"]}`})
	res = api.run(t, adminInvocation{}, "onboardings", "restart-clean", adminRecoveryID, "--dry-run")
	assert.Equal(t, 1, res.code)
	assert.Contains(t, res.stderr, "restart-clean is not allowed")
}

func TestDryRunIsNotSentToAnAPIThatDoesNotKnowIt(t *testing.T) {
	// An API of an earlier release ignores ?dry_run and performs the
	// operation: the CLI asks which dry runs it knows and sends nothing.
	api := newAdminFakeAPI(t)
	api.header.Set(client.HeaderDryRuns, "site.disable")
	api.on("POST "+nodesPath+"/"+testNodeID+"/decommission", adminReply{http.StatusOK, planJSON})
	res := api.run(t, adminInvocation{}, "decommission", "start", testNodeID, "--mode", "full", "--dry-run")
	assert.Equal(t, 1, res.code)
	assert.Contains(t, res.stderr, "does not know this dry run")
	assert.Empty(t, api.requests(), "nothing but the health read reached the API")
}
