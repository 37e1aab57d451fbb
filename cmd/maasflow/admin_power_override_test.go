package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCLIPowerOverride(t *testing.T) {
	env := map[string]string{envAdminAPIURL: newAdminRealAPI(t), envAdminToken: adminTestToken}
	res := runAdminTest(t, env, adminInvocation{}, "sites", "create", "--name", "lab", "--maas-url", "http://maas.lab:5240/MAAS", "-o", "json")
	require.Equal(t, 0, res.code, res.stderr)
	var site struct {
		ID string `json:"id"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &site))
	const pass = "cli-override-Pa55"

	ok := runAdminTest(t, env, adminInvocation{stdin: `{"bmc_username":"vendor","bmc_password":"` + pass + `"}`},
		"sites", "power-override", site.ID, "--hostname", "gpu-01")
	require.Equal(t, 0, ok.code, ok.stderr)
	assert.Contains(t, ok.stdout, "BMC credentials stored for gpu-01 of site "+site.ID)
	assert.NotContains(t, ok.stdout+ok.stderr, pass)

	both := runAdminTest(t, env, adminInvocation{stdin: `{}`}, "sites", "power-override", site.ID)
	assert.Equal(t, 2, both.code)
	assert.Contains(t, both.stderr, "--hostname or --bmc-address")
	tty := runAdminTest(t, env, adminInvocation{stdinTTY: true}, "sites", "power-override", site.ID, "--bmc-address", "10.0.0.9")
	assert.Equal(t, 2, tty.code)
	assert.Contains(t, tty.stderr, "stdin is a terminal")
}
