package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/internal/localstack"
	"github.com/maasflow/maasflow/internal/maassim"
)

// TestCLIShowsHardwareVerification: onboard --wait and onboardings get
// print the designed-vs-built diff of a host short of its SKU's GPUs;
// nodes get prints a verified node's as-built inventory.
func TestCLIShowsHardwareVerification(t *testing.T) {
	stack, err := localstack.Start(context.Background(), localstack.Config{
		Listen: "127.0.0.1:0", SimListen: "127.0.0.1:0", TimeScale: 600, DataDir: t.TempDir(),
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = stack.Close() })
	require.NoError(t, stack.Sim.AddHardware(maassim.Hardware{Hostname: "gpu-hw1", BMCIP: "10.30.24.11", PXEMAC: "52:54:00:30:24:11",
		Faults: maassim.Faults{MissingGPUs: 2}}))
	require.NoError(t, stack.Sim.AddHardware(maassim.Hardware{Hostname: "gpu-hw2", BMCIP: "10.30.24.12", PXEMAC: "52:54:00:30:24:12"}))
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
	bootstrap, err := json.Marshal(map[string]any{"bootstrap": stack.SiteBootstrap})
	require.NoError(t, err)
	site := jsonOf(cli(0, "sites", "create", "--name", "lab", "--maas-url", stack.SimURL, "--policy-json", string(bootstrap), "-o", "json"))["id"].(string)
	runAdminTest(t, env, adminInvocation{stdin: fmt.Sprintf(`{"maas_api_key":%q,"bmc_username":"maasflow","bmc_password":"bmc-secret-1"}`, stack.SimAPIKey)},
		"sites", "credentials", site)
	cli(0, "sites", "probe", site)
	profile := jsonOf(cli(0, "profiles", "create", site, "--name", "gpu", "--architecture", "amd64/generic", "--distro-series", "jammy", "-o", "json"))["id"].(string)
	cli(0, "skus", "create", "--id", "h100x8", "--gpu-model", "H100", "--gpus-total", "8")

	short := cli(3, "onboard", "--site", site, "--profile", profile, "--sku", "h100x8", "--hostname", "gpu-hw1", "--ipmi-ip", "10.30.24.11", "--wait")
	assert.Contains(t, short.stdout, "needs manual intervention at stage verify_hardware")
	assert.Contains(t, short.stdout, "Hardware (designed vs built):")
	assert.Regexp(t, `gpus_total\s+8\s+6`, short.stdout)

	list := cli(0, "onboardings", "list", "--site", site, "-o", "json")
	var page struct {
		Items []map[string]any `json:"items"`
	}
	require.NoError(t, json.Unmarshal([]byte(list.stdout), &page), list.stdout)
	require.Len(t, page.Items, 1)
	got := cli(0, "onboardings", "get", page.Items[0]["id"].(string))
	assert.Regexp(t, `gpus_total\s+8\s+6`, got.stdout)

	cli(0, "onboard", "--site", site, "--profile", profile, "--sku", "h100x8", "--hostname", "gpu-hw2", "--ipmi-ip", "10.30.24.12", "--wait")
	nodes := cli(0, "nodes", "list", "--site", site, "-o", "json")
	require.NoError(t, json.Unmarshal([]byte(nodes.stdout), &page), nodes.stdout)
	nodeID := ""
	for _, n := range page.Items {
		if n["hostname"] == "gpu-hw2" {
			nodeID = n["id"].(string)
		}
	}
	require.NotEmpty(t, nodeID, nodes.stdout)
	node := cli(0, "nodes", "get", nodeID)
	assert.Contains(t, node.stdout, "As built (region -,")
	assert.Regexp(t, `gpu\s+0000:18:00\.0\s+0\s+GH100 \[H100 SXM5 80GB\] \(10de:2330\)`, node.stdout)
	assert.Regexp(t, `nic\s+0000:0c:00\.0\s+-\s+100000 Mb/s\s+52:54:00:30:24:12`, node.stdout)
}
