package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/internal/localstack"
	"github.com/maasflow/maasflow/internal/maassim"
)

// TestNodeAndDecommissionVerbsOnTheLocalStack drives the node lifecycle and
// decommission verbs against `maasflow local`'s stack: a simulated server is
// onboarded, cleaned (drain, erase, retire), reactivated, and its bundle
// reissued to a 0600 file.
func TestNodeAndDecommissionVerbsOnTheLocalStack(t *testing.T) {
	stack, err := localstack.Start(context.Background(), localstack.Config{
		Listen: "127.0.0.1:0", SimListen: "127.0.0.1:0", TimeScale: 600, DataDir: t.TempDir(),
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = stack.Close() })
	require.NoError(t, stack.Sim.AddHardware(maassim.Hardware{Hostname: "gpu-c1", BMCIP: "10.30.0.11", PXEMAC: "52:54:00:30:00:11"}))
	env := map[string]string{envAdminAPIURL: stack.APIURL, envAdminToken: stack.AdminToken}
	cli := func(want int, args ...string) adminResult {
		t.Helper()
		res := runAdminTest(t, env, adminInvocation{}, args...)
		require.Equal(t, want, res.code, "maasflow %s\nstdout: %s\nstderr: %s", strings.Join(args, " "), res.stdout, res.stderr)
		return res
	}
	jsonOf := func(res adminResult) map[string]any {
		t.Helper()
		var v map[string]any
		require.NoError(t, json.Unmarshal([]byte(res.stdout), &v), res.stdout)
		return v
	}

	bootstrap, err := json.Marshal(map[string]any{"bootstrap": stack.SiteBootstrap, "erase_mode": "quick"})
	require.NoError(t, err)
	site := jsonOf(cli(0, "sites", "create", "--name", "lab", "--maas-url", stack.SimURL, "--policy-json", string(bootstrap), "-o", "json"))["id"].(string)
	runAdminTest(t, env, adminInvocation{stdin: fmt.Sprintf(`{"maas_api_key":%q,"bmc_username":"maasflow","bmc_password":"bmc-secret-1"}`, stack.SimAPIKey)},
		"sites", "credentials", site)
	cli(0, "sites", "probe", site)
	profile := jsonOf(cli(0, "profiles", "create", site, "--name", "gpu", "--architecture", "amd64/generic", "--distro-series", "jammy", "-o", "json"))["id"].(string)
	cli(0, "skus", "create", "--id", "h100x8", "--gpu-model", "H100", "--gpus-total", "8")
	ob := jsonOf(cli(0, "onboard", "--site", site, "--profile", profile, "--sku", "h100x8", "--hostname", "gpu-c1", "--ipmi-ip", "10.30.0.11", "-o", "json"))
	nodeID := ob["node_id"].(string)
	waitFor(t, func() bool {
		return jsonOf(cli(0, "onboardings", "get", ob["id"].(string), "-o", "json"))["status"] == "completed"
	})

	res := cli(0, "nodes", "list", "--site", site)
	assert.Contains(t, res.stdout, nodeID)
	assert.Contains(t, res.stdout, "active")
	res = cli(0, "nodes", "get", nodeID)
	assert.Regexp(t, `Status:\s+active`, res.stdout)

	res = cli(0, "decommission", "start", nodeID, "--mode", "storage_cleanup", "--reason", "tenant change")
	assert.Contains(t, res.stdout, "storage_cleanup")
	page := jsonOf(cli(0, "decommission", "list", "--node", nodeID, "-o", "json"))
	items := page["items"].([]any)
	require.Len(t, items, 1)
	decID := items[0].(map[string]any)["id"].(string)
	waitFor(t, func() bool {
		return jsonOf(cli(0, "decommission", "get", decID, "-o", "json"))["status"] == "completed"
	})
	res = cli(0, "decommission", "get", decID)
	assert.Regexp(t, `Disks:\s+erased`, res.stdout)
	assert.Contains(t, res.stdout, "release script wipe-disks: Passed")
	assert.Regexp(t, `Status:\s+retired`, cli(0, "nodes", "get", nodeID).stdout)

	assert.Contains(t, cli(0, "nodes", "reactivate", nodeID).stdout, "is active")
	cli(1, "nodes", "reactivate", nodeID) // 409: only a retired node
	cli(2, "nodes", "reissue-bundle", nodeID)
	out := filepath.Join(t.TempDir(), "bundle.json")
	res = cli(0, "nodes", "reissue-bundle", nodeID, "--out", out)
	assert.NotContains(t, res.stdout+res.stderr, "GPUAAS_ENROLLMENT_TOKEN")
	fi, err := os.Stat(out)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	raw, err := os.ReadFile(out)
	require.NoError(t, err)
	var bundle map[string]any
	require.NoError(t, json.Unmarshal(raw, &bundle))
	assert.Equal(t, nodeID, bundle["GPUAAS_NODE_ID"])
	assert.NotEmpty(t, bundle["GPUAAS_ENROLLMENT_TOKEN"])
	cli(1, "nodes", "reissue-bundle", nodeID, "--out", out) // never overwrites

	cli(2, "decommission", "start", nodeID, "--mode", "sideways")
	cli(0, "nodes", "retire", nodeID)
	assert.Contains(t, cli(0, "nodes", "remove", nodeID, "--yes").stdout, "is removed")
	cli(1, "nodes", "remove", nodeID, "--yes")
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in time")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

const (
	nodesPath      = "/api/v1/admin/nodes"
	decomsPath     = "/api/v1/admin/decommissions"
	testDecomID    = "dc000000-0000-4000-8000-000000000001"
	nodeActiveJSON = `{"id":"` + testNodeID + `","site_id":"` + testSiteID + `","hostname":"gpu-01","sku_id":"h100x8","status":"active",` +
		`"maas_system_id":"4y3h7n","created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z"}`
	nodeRemovedJSON = `{"id":"n-old","site_id":"` + testSiteID + `","hostname":"gpu-01","sku_id":"h100x8","status":"removed",` +
		`"created_at":"2025-01-01T00:00:00Z","updated_at":"2025-06-01T00:00:00Z"}`
)

// decomJSON is a decommission of gpu-01 in status at stage with the disks'
// erase outcome, and its timeline.
func decomJSON(status, stage, disks string, timeline ...string) string {
	return `{"id":"` + testDecomID + `","node_id":"` + testNodeID + `","site_id":"` + testSiteID + `","hostname":"gpu-01",` +
		`"mode":"storage_cleanup","status":"` + status + `","stage":"` + stage + `","attempt":1,"maas_system_id":"4y3h7n",` +
		`"erase":{"mode":"quick","outcome":"` + disks + `","fallback":false,"maas_events":[],"script_results":[]},` +
		`"machine_deleted":false,"correlation_id":"c-1","created_by":"alice","created_at":"2026-01-01T00:00:00Z",` +
		`"updated_at":"2026-01-01T00:00:10Z","timeline":[` + strings.Join(timeline, ",") + `]}`
}

const (
	tlDecomDrain   = `{"time":"2026-01-01T00:00:01Z","attempt":1,"kind":"stage_entered","stage":"drain","detail":"from start"}`
	tlDecomRelease = `{"time":"2026-01-01T00:00:02Z","attempt":1,"kind":"stage_entered","stage":"release","detail":"from drain"}`
	tlDecomErased  = `{"time":"2026-01-01T00:00:05Z","attempt":1,"kind":"maas_event","stage":"release","detail":"INFO: Disks erased"}`
)

func TestNodesByHostName(t *testing.T) {
	byHost := adminReply{http.StatusOK, `{"items":[` + nodeRemovedJSON + `,` + nodeActiveJSON + `]}`}

	t.Run("a host name is its node that is not removed", func(t *testing.T) {
		api := newAdminFakeAPI(t)
		api.on("GET "+nodesPath, byHost)
		api.on("POST "+nodesPath+"/"+testNodeID+"/retire", adminReply{http.StatusOK, strings.Replace(nodeActiveJSON, `"active"`, `"retired"`, 1)})
		res := api.run(t, adminInvocation{}, "nodes", "retire", "gpu-01")
		require.Equal(t, 0, res.code, res.stderr)
		assert.Equal(t, "node "+testNodeID+" (gpu-01) is retired\n", res.stdout)
		reqs := api.requests()
		require.Len(t, reqs, 2)
		assert.Equal(t, "hostname=gpu-01&limit=50", reqs[0].Query)
	})
	t.Run("a host name on two sites is ambiguous", func(t *testing.T) {
		api := newAdminFakeAPI(t)
		other := strings.NewReplacer(testNodeID, "n-b", testSiteID, "s-b").Replace(nodeActiveJSON)
		api.on("GET "+nodesPath, adminReply{http.StatusOK, `{"items":[` + nodeActiveJSON + `,` + other + `]}`})
		res := api.run(t, adminInvocation{}, "nodes", "remove", "gpu-01", "--yes")
		assert.Equal(t, 1, res.code)
		assert.Contains(t, res.stderr, `"gpu-01" names 2 nodes (`+testNodeID+`, n-b); give the id`)
		assert.Len(t, api.requests(), 1, "nothing removed")
	})
	t.Run("an id is used without a lookup", func(t *testing.T) {
		api := newAdminFakeAPI(t)
		api.on("GET "+nodesPath+"/"+testNodeID, adminReply{http.StatusOK, strings.Replace(nodeActiveJSON, `}`,
			`,"last_onboarding":{"id":"o-1","status":"completed","stage":"done"},"allocations":[{"allocation_id":"a-1","node_id":"`+testNodeID+`","state":"active","updated_at":"2026-01-01T00:00:00Z"}]}`, 1)})
		res := api.run(t, adminInvocation{}, "nodes", "get", testNodeID)
		require.Equal(t, 0, res.code, res.stderr)
		assert.Regexp(t, `Last onboarding:\s+o-1 \(completed at done\)`, res.stdout)
		assert.Regexp(t, `Last decommission:\s+-`, res.stdout)
		assert.Regexp(t, `a-1\s+active`, res.stdout)
		assert.Len(t, api.requests(), 1)
	})
}

func TestNodesList(t *testing.T) {
	api := newAdminFakeAPI(t)
	api.on("GET "+sitesPath, adminReply{http.StatusOK, `{"items":[` + adminSiteJSON + `]}`})
	api.on("GET "+nodesPath,
		adminReply{http.StatusOK, `{"items":[` + nodeActiveJSON + `],"next_cursor":"p2"}`},
		adminReply{http.StatusOK, `{"items":[` + nodeRemovedJSON + `],"next_cursor":""}`})
	res := api.run(t, adminInvocation{}, "nodes", "list", "--site", "lab", "--status", "active", "--sku", "h100x8", "--all", "-o", "json")
	require.Equal(t, 0, res.code, res.stderr)
	assert.JSONEq(t, `{"items":[`+nodeActiveJSON+`,`+nodeRemovedJSON+`]}`, res.stdout)
	reqs := api.requests()
	require.Len(t, reqs, 3)
	assert.Equal(t, "site_id="+testSiteID+"&sku_id=h100x8&status=active", reqs[1].Query)
	assert.Equal(t, "cursor=p2&site_id="+testSiteID+"&sku_id=h100x8&status=active", reqs[2].Query)

	api.on("GET "+nodesPath, adminReply{http.StatusOK, `{"items":[` + nodeActiveJSON + `],"next_cursor":"p2"}`})
	res = api.run(t, adminInvocation{}, "nodes", "list")
	require.Equal(t, 0, res.code, res.stderr)
	assert.Regexp(t, testNodeID+`\s+active\s+gpu-01\s+`+testSiteID+`\s+h100x8\s+4y3h7n`, res.stdout)
	assert.Equal(t, "more nodes: add --all, or --cursor p2\n", res.stderr)
}

func TestNodesReissueBundle(t *testing.T) {
	api := newAdminFakeAPI(t)
	api.on("POST "+nodesPath+"/"+testNodeID+"/bootstrap-bundle", adminReply{http.StatusOK,
		`{"node_id":"` + testNodeID + `","expires_at":"2026-01-02T00:00:00Z","bootstrap_bundle":{"GPUAAS_NODE_ID":"` + testNodeID + `","GPUAAS_ENROLLMENT_TOKEN":"tok-secret-1"}}`})

	res := api.run(t, adminInvocation{}, "nodes", "reissue-bundle", testNodeID)
	assert.Equal(t, 2, res.code, "--out is required")
	assert.Contains(t, res.stderr, "--out FILE (or - for stdout) is required")
	assert.Empty(t, api.requests(), "no token is minted without a place to put it")

	out := filepath.Join(t.TempDir(), "bundle.json")
	res = api.run(t, adminInvocation{}, "nodes", "reissue-bundle", testNodeID, "--out", out)
	require.Equal(t, 0, res.code, res.stderr)
	assert.NotContains(t, res.stdout+res.stderr, "tok-secret-1")
	assert.Contains(t, res.stderr, "written to "+out+" (mode 0600)")
	fi, err := os.Stat(out)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	res = api.run(t, adminInvocation{}, "nodes", "reissue-bundle", testNodeID, "--out", "-")
	require.Equal(t, 0, res.code, res.stderr)
	assert.JSONEq(t, `{"GPUAAS_NODE_ID":"`+testNodeID+`","GPUAAS_ENROLLMENT_TOKEN":"tok-secret-1"}`, res.stdout)
}

func TestDecommissionStart(t *testing.T) {
	for _, tc := range []struct{ mode, path, body string }{
		{"reimage", "/decommission", `{"mode":"reimage","reason":"new image"}`},
		{"full", "/decommission", `{"mode":"full","reason":"new image"}`},
		{"storage_cleanup", "/storage-cleanup", `{"reason":"new image"}`},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			api := newAdminFakeAPI(t)
			api.on("POST "+nodesPath+"/"+testNodeID+tc.path, adminReply{http.StatusAccepted, decomJSON("pending", "start", "pending")})
			res := api.run(t, adminInvocation{}, "decommission", "start", testNodeID, "--mode", tc.mode, "--reason", "new image", "--yes")
			require.Equal(t, 0, res.code, res.stderr)
			assert.Contains(t, res.stdout, "decommission "+testDecomID+" (storage_cleanup) accepted for node "+testNodeID+" (gpu-01)")
			reqs := api.requests()
			require.Len(t, reqs, 1)
			assert.JSONEq(t, tc.body, reqs[0].Body)
		})
	}
	t.Run("a bad or missing mode sends nothing", func(t *testing.T) {
		api := newAdminFakeAPI(t)
		res := api.run(t, adminInvocation{}, "decommission", "start", testNodeID, "--mode", "sideways")
		assert.Equal(t, 2, res.code)
		assert.Contains(t, res.stderr, `--mode must be reimage, full or storage_cleanup, not "sideways"`)
		res = api.run(t, adminInvocation{}, "decommission", "start", testNodeID)
		assert.Equal(t, 2, res.code)
		assert.Contains(t, res.stderr, "--mode is required")
		assert.Empty(t, api.requests())
	})
	t.Run("--wait follows it to the end", func(t *testing.T) {
		api := newAdminFakeAPI(t)
		api.on("GET "+nodesPath, adminReply{http.StatusOK, `{"items":[` + nodeActiveJSON + `]}`})
		api.on("POST "+nodesPath+"/"+testNodeID+"/storage-cleanup", adminReply{http.StatusAccepted, decomJSON("pending", "start", "pending")})
		api.on("GET "+decomsPath+"/"+testDecomID,
			adminReply{http.StatusOK, decomJSON("running", "release", "pending", tlDecomDrain, tlDecomRelease)},
			adminReply{http.StatusOK, decomJSON("completed", "finish", "erased", tlDecomDrain, tlDecomRelease, tlDecomErased)})
		res := api.run(t, adminInvocation{}, "decommission", "start", "gpu-01", "--mode", "storage_cleanup", "--wait")
		require.Equal(t, 0, res.code, res.stderr)
		for _, want := range []string{
			"2026-01-01T00:00:01Z  ▶ enter  drain             from start",
			"2026-01-01T00:00:05Z  MAAS     release           INFO: Disks erased",
			"2026-01-01T00:00:10Z  status   finish            completed  disks=erased",
			"decommission " + testDecomID + " (storage_cleanup) of node " + testNodeID + " completed at stage finish, disks erased",
		} {
			assert.Equal(t, 1, strings.Count(res.stdout, want), "once: %s\n%s", want, res.stdout)
		}
	})
}

func TestDecommissionWatch(t *testing.T) {
	t.Run("manual intervention exits 3", func(t *testing.T) {
		api := newAdminFakeAPI(t)
		failed := strings.Replace(decomJSON("manual_intervention", "release", "failed", tlDecomDrain), `"machine_deleted"`,
			`"error":{"code":"EraseFailedError","message":"disk erase failed"},"machine_deleted"`, 1)
		api.on("GET "+decomsPath+"/"+testDecomID, adminReply{http.StatusOK, failed})
		res := api.run(t, adminInvocation{}, "decommission", "watch", testDecomID)
		assert.Equal(t, 3, res.code, res.stderr)
		assert.Contains(t, res.stdout, "manual_intervention at stage release, disks failed: EraseFailedError: disk erase failed")
		assert.Contains(t, res.stdout, "inspect it with: maasflow decommission get "+testDecomID)
	})
	t.Run("json lines, and a node's newest decommission by host name", func(t *testing.T) {
		api := newAdminFakeAPI(t)
		api.on("GET "+nodesPath, adminReply{http.StatusOK, `{"items":[` + nodeActiveJSON + `]}`})
		api.on("GET "+decomsPath, adminReply{http.StatusOK, `{"items":[` + decomJSON("failed", "drain", "pending") + `]}`})
		api.on("GET "+decomsPath+"/"+testDecomID, adminReply{http.StatusOK, decomJSON("failed", "drain", "pending", tlDecomDrain)})
		res := api.run(t, adminInvocation{}, "decommission", "watch", "gpu-01", "-o", "json")
		assert.Equal(t, 4, res.code, res.stderr)
		lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
		require.Len(t, lines, 2, res.stdout)
		var status adminDecomEvent
		require.NoError(t, json.Unmarshal([]byte(lines[1]), &status))
		assert.Equal(t, adminDecomEvent{DecommissionID: testDecomID, NodeID: testNodeID, Hostname: "gpu-01",
			Time: time.Date(2026, 1, 1, 0, 0, 10, 0, time.UTC), Attempt: 1, Kind: adminWatchStatus, Stage: "drain", Status: "failed", Disks: "pending"}, status)
		reqs := api.requests()
		require.Len(t, reqs, 3)
		assert.Equal(t, "limit=1&node_id="+testNodeID, reqs[1].Query)
	})
}

func TestDecommissionGetAndList(t *testing.T) {
	api := newAdminFakeAPI(t)
	detail := strings.Replace(decomJSON("completed", "finish", "erased", tlDecomDrain), `"script_results":[]`,
		`"script_results":[{"name":"wipe-disks","status":"Passed"}]`, 1)
	api.on("GET "+decomsPath+"/"+testDecomID, adminReply{http.StatusOK, detail})
	res := api.run(t, adminInvocation{}, "decommission", "get", testDecomID)
	require.Equal(t, 0, res.code, res.stderr)
	assert.Regexp(t, `Disks:\s+erased`, res.stdout)
	assert.Regexp(t, `Erase asked:\s+quick`, res.stdout)
	assert.Contains(t, res.stdout, "release script wipe-disks: Passed")
	assert.Regexp(t, `2026-01-01T00:00:01Z\s+stage_entered\s+drain`, res.stdout)

	res = api.run(t, adminInvocation{}, "decommission", "get", testDecomID, "-o", "yaml")
	require.Equal(t, 0, res.code, res.stderr)
	assertYAMLIsJSON(t, detail, res.stdout)

	api.on("GET "+decomsPath, adminReply{http.StatusOK, `{"items":[` + decomJSON("running", "release", "pending") + `],"next_cursor":""}`})
	res = api.run(t, adminInvocation{}, "decommission", "list", "--node", testNodeID, "--status", "running")
	require.Equal(t, 0, res.code, res.stderr)
	assert.Regexp(t, testDecomID+`\s+storage_cleanup\s+running\s+release\s+`+testNodeID+`\s+gpu-01\s+pending`, res.stdout)
	reqs := api.requests()
	assert.Equal(t, "node_id="+testNodeID+"&status=running", reqs[len(reqs)-1].Query)
}

func TestNodesAndDecommissionHelpAndCompletion(t *testing.T) {
	for _, args := range [][]string{
		{"nodes", "--help"}, {"nodes", "help"}, {"help", "nodes", "reissue-bundle"}, {"nodes", "list", "-h"},
		{"nodes", "retire", "--help"}, {"decommission", "-h"}, {"decommission", "start", "--help"},
		{"help", "decommission", "watch"}, {"decommission", "list", "--help"},
	} {
		res := runAdminTest(t, nil, adminInvocation{}, args...)
		assert.Equal(t, 0, res.code, args)
		assert.Contains(t, res.stdout, "Usage:", args)
		assert.Empty(t, res.stderr, args)
	}
	res := runAdminTest(t, nil, adminInvocation{}, "nodes")
	assert.Equal(t, 2, res.code, "a group alone is a misuse")

	api := newAdminFakeAPI(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"decommission", "start", "n", "--mode", ""}, "reimage\nfull\nstorage_cleanup\n:4\n"},
		{[]string{"nodes", "list", "--status", ""}, "onboarding\nactive\ndecommissioning\nretired\nremoved\n:4\n"},
		{[]string{"decommission", "list", "--status", "m"}, "pending\nrunning\ncompleted\nfailed\nmanual_intervention\ncancelled\n:4\n"},
	} {
		res := api.run(t, adminInvocation{}, append([]string{"__complete"}, tc.args...)...)
		assert.Equal(t, tc.want, res.stdout, tc.args)
	}
}

func TestNodeRefsThatAreNoHostName(t *testing.T) {
	t.Run("a ref the API refuses as a host name is taken as an id", func(t *testing.T) {
		api := newAdminFakeAPI(t)
		api.on("GET "+nodesPath, adminReply{http.StatusBadRequest, `{"error":{"code":"invalid_request","field":"hostname","message":"hostname: not a host name"}}`})
		api.on("GET "+nodesPath+"/node_7", adminReply{http.StatusOK, strings.Replace(nodeActiveJSON, testNodeID, "node_7", 1)})
		res := api.run(t, adminInvocation{}, "nodes", "get", "node_7")
		require.Equal(t, 0, res.code, res.stderr)
		assert.Regexp(t, `ID:\s+node_7`, res.stdout)
	})
	t.Run("a removed node is meant only when the host has no other", func(t *testing.T) {
		api := newAdminFakeAPI(t)
		api.on("GET "+nodesPath, adminReply{http.StatusOK, `{"items":[` + nodeRemovedJSON + `]}`})
		api.on("GET "+decomsPath, adminReply{http.StatusOK, `{"items":[` + decomJSON("completed", "finish", "erased") + `]}`})
		res := api.run(t, adminInvocation{}, "decommission", "list", "--node", "gpu-01", "--no-headers")
		require.Equal(t, 0, res.code, res.stderr)
		assert.Equal(t, "node_id=n-old", api.requests()[1].Query)
		assert.Equal(t, 1, strings.Count(res.stdout, "\n"), "one row, no header")
	})
	t.Run("a node never decommissioned has no newest decommission", func(t *testing.T) {
		api := newAdminFakeAPI(t)
		api.on("GET "+nodesPath, adminReply{http.StatusOK, `{"items":[` + nodeActiveJSON + `]}`})
		api.on("GET "+decomsPath, adminReply{http.StatusOK, `{"items":[]}`})
		res := api.run(t, adminInvocation{}, "decommission", "get", "gpu-01")
		assert.Equal(t, 1, res.code)
		assert.Equal(t, `error: not_found: no decommission has the id or name "gpu-01"; node `+testNodeID+" has never been decommissioned\n", res.stderr)
	})
	t.Run("an answer that is not JSON is an error, not an empty table", func(t *testing.T) {
		api := newAdminFakeAPI(t)
		api.on("GET "+nodesPath, adminReply{http.StatusOK, `<html>proxy login</html>`})
		res := api.run(t, adminInvocation{}, "nodes", "list")
		assert.Equal(t, 1, res.code)
		assert.Empty(t, res.stdout)
		assert.Contains(t, res.stderr, "error: unexpected answer from the admin API (HTTP 200)")
	})
}
