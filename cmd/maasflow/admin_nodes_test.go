package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/internal/localstack"
	"github.com/maasflow/maasflow/test/maassim"
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
	assert.Contains(t, cli(0, "nodes", "remove", nodeID).stdout, "is removed")
	cli(1, "nodes", "remove", nodeID)
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
