package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The design commands convert YAML files to the API's JSON, show the plan
// and apply exactly it; changing one address is a one-line plan.
func TestAdminDesignPlanAndApply(t *testing.T) {
	env := map[string]string{envAdminAPIURL: newAdminRealAPI(t), envAdminToken: adminTestToken}
	cli := func(t *testing.T, wantCode int, args ...string) adminResult {
		t.Helper()
		res := runAdminTest(t, env, adminInvocation{}, args...)
		require.Equal(t, wantCode, res.code, "maasflow %s\nstdout: %s\nstderr: %s", strings.Join(args, " "), res.stdout, res.stderr)
		return res
	}
	var site struct {
		ID string `json:"id"`
	}
	require.NoError(t, json.Unmarshal([]byte(cli(t, 0, "sites", "create", "--name", "lab", "--maas-url", "http://maas.lab:5240/MAAS", "-o", "json").stdout), &site))

	dir := t.TempDir()
	siteFile, rackFile := filepath.Join("testdata", "design", "site.yaml"), filepath.Join(dir, "rack-a.yaml")
	rack, err := os.ReadFile(filepath.Join("testdata", "design", "rack-a.yaml"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(rackFile, rack, 0o600))

	res := cli(t, 0, "design", "plan", "--site", "lab", "-f", siteFile, "-f", rackFile)
	assert.Contains(t, res.stdout, "+ host_profile gpu-training\n")
	assert.Contains(t, res.stdout, "+ node gpu-a06 (onboard)\n")
	assert.Contains(t, res.stdout, "Plan: 13 change(s), 6 host(s) to onboard, 0 node(s) to reconfigure.")
	// gpu-a01's roce_rails become its RoCE rows.
	assert.Contains(t, res.stdout, "+ roce_row gpu-a01:rail0: ipv4_cidr: 10.20.1.0/31\n")
	assert.Contains(t, res.stdout, " 1 RoCE row(s) to change. Plan hash ")

	// An apply onboarding hosts needs their profile and SKU.
	res = cli(t, 1, "design", "apply", "--site", "lab", "-f", siteFile, "-f", rackFile)
	assert.Contains(t, res.stderr, "onboard: is required")
	// Without new hosts to onboard it applies: a design with the rack's
	// nodes left out, then plans of the rack alone show only the nodes.
	res = cli(t, 0, "design", "apply", "--site", "lab", "-f", siteFile)
	assert.Contains(t, res.stdout, "Applied: design version 1.")

	// A broken design is refused naming document, object and field.
	broken := strings.Replace(string(rack), "address: 10.0.1.11", "address: 10.0.7.11", 1)
	require.NoError(t, os.WriteFile(rackFile, []byte(broken), 0o600))
	res = cli(t, 1, "design", "plan", "--site", "lab", "-f", siteFile, "-f", rackFile)
	assert.Contains(t, res.stderr, `rack-a.yaml: node "gpu-a01": addresses[1].address 10.0.7.11 is outside the network 10.0.1.0/24`)

	res = cli(t, 0, "design", "plan", "--site", site.ID, "-f", siteFile)
	assert.Contains(t, res.stdout, "No changes: the design is applied.")
	res = cli(t, 0, "design", "plan", "--site", site.ID, "-f", siteFile, "-o", "json")
	var plan struct {
		Hash  string   `json:"hash"`
		Lines []string `json:"lines"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &plan))
	assert.Empty(t, plan.Lines)

	// Changing one value is one line.
	changed := strings.Replace(readFile(t, siteFile), "dns_servers: [10.0.0.2, 10.0.0.3]", "dns_servers: [10.0.0.2]", 1)
	changedFile := filepath.Join(dir, "site.yaml")
	require.NoError(t, os.WriteFile(changedFile, []byte(changed), 0o600))
	res = cli(t, 0, "design", "plan", "--site", "lab", "-f", changedFile)
	assert.Equal(t, "~ network mgmt: dns_servers[1]: 10.0.0.3 -> (none)\n", strings.SplitAfter(res.stdout, "\n")[0])
	res = cli(t, 1, "design", "apply", "--site", "lab", "-f", changedFile, "--plan-hash", plan.Hash)
	assert.Contains(t, res.stderr, "plan_hash: the plan changed since it was shown")
	res = cli(t, 0, "design", "apply", "--site", "lab", "-f", changedFile)
	assert.Contains(t, res.stdout, "Applied: design version 2.")
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	require.NoError(t, err)
	return string(b)
}
