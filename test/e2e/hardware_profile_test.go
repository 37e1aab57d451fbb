package e2e

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A site's design names each host's hardware profile: its device aliases
// must be NICs of the machine as built. Applying the design onboards its
// hosts through the batch path; a host whose board lacks the NIC an alias
// names stops at verify_hardware with the alias in its diff, before
// storage or deploy, and a host that has it completes.
func TestDesignedHardwareProfileIsVerifiedBeforeDeploy(t *testing.T) {
	t.Parallel()
	e := startStack(t)
	f := e.setup(nil, nil)
	// The simulator's board: the PXE NIC on bus 0x0c, the first extra NIC
	// on 0x1a beside GPU 0.
	docs := []map[string]any{{
		"name": "site.yaml",
		"hardware_profiles": []any{map[string]any{"name": "board", "device_aliases": []any{
			map[string]any{"alias": "pxe0", "pci_address": "0000:0c:00.0"},
			map[string]any{"alias": "rail0", "pci_address": "0000:1a:00.0"},
		}}},
		// The design reaches MAAS (configure_machine): its network is the
		// simulator's PXE subnet.
		"networks":      []any{map[string]any{"name": "mgmt", "cidr": "10.20.0.0/20", "mtu": 1500, "gateway": "10.20.0.1"}},
		"network_links": []any{map[string]any{"name": "pxe", "members": []string{"pxe0"}}},
		"host_profiles": []any{map[string]any{"name": "gpu", "hardware_profile": "board",
			"interfaces": []any{map[string]any{"name": "eno1", "link": "pxe", "networks": []string{"mgmt"}}}}},
	}, {
		"name": "rack.yaml",
		"nodes": []any{
			map[string]any{"hostname": "gpu-hp1", "bmc_address": "10.10.25.11", "host_profile": "gpu"},
			map[string]any{"hostname": "gpu-hp2", "bmc_address": "10.10.25.12", "host_profile": "gpu"},
		},
	}}
	e.hwHost("gpu-hp1", "10.10.25.11", "52:54:00:25:01:01", []string{"52:54:00:25:01:02"}, nil)
	e.hwHost("gpu-hp2", "10.10.25.12", "52:54:00:25:02:01", nil, nil) // no NIC on 0x1a

	plan, byHost := e.planApplyAndWait(f, docs)
	require.Equal(t, []any{"gpu-hp1", "gpu-hp2"}, plan["onboard"])
	require.Len(t, byHost, 2)
	assert.Equal(t, "completed", byHost["gpu-hp1"]["status"], byHost["gpu-hp1"])
	bad := byHost["gpu-hp2"]
	require.Equal(t, "manual_intervention", bad["status"], bad)
	assert.Equal(t, "verify_hardware", bad["stage"])
	assert.Equal(t, "HardwareMismatchError", errorCode(bad))
	assert.Equal(t, []string{"device_aliases.rail0"}, diffFields(bad), "designed vs built: %v", bad["hardware_diff"])
}

// A hardware profile's boot-disk selector must pick exactly one disk of the
// machine as built: one that matches none stops the host at
// verify_hardware with boot_disk in its diff, before any deploy call.
func TestWrongBootDiskStopsBeforeDeploy(t *testing.T) {
	t.Parallel()
	e := startStack(t)
	f := e.setup(nil, nil)
	docs := []map[string]any{{
		"name": "site.yaml",
		"hardware_profiles": []any{map[string]any{"name": "board",
			"device_aliases": []any{map[string]any{"alias": "pxe0", "pci_address": "0000:0c:00.0"}},
			// No simulated disk holds 100 TB.
			"boot_disk": map[string]any{"size_gb": 100000}}},
		"host_profiles": []any{map[string]any{"name": "gpu", "hardware_profile": "board"}},
	}, {
		"name":  "rack.yaml",
		"nodes": []any{map[string]any{"hostname": "gpu-bd1", "bmc_address": "10.10.26.11", "host_profile": "gpu"}},
	}}
	e.hwHost("gpu-bd1", "10.10.26.11", "52:54:00:26:01:01", nil, nil)

	_, byHost := e.planApplyAndWait(f, docs)
	o := byHost["gpu-bd1"]
	require.Equal(t, "manual_intervention", o["status"], o)
	assert.Equal(t, "verify_hardware", o["stage"])
	assert.Equal(t, "HardwareMismatchError", errorCode(o))
	assert.Equal(t, []string{"boot_disk"}, diffFields(o), "designed vs built: %v", o["hardware_diff"])
	calls := e.simCalls()
	assert.Zero(t, callsWithOp(calls, "deploy"), "nothing deployed")
	assert.Zero(t, callsWithOp(calls, "set_boot_disk"), "no boot disk set")
}
