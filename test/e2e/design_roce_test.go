package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/maas"
)

// A designed node's RoCE rails are its RoCE rows: the plan shows the
// host's direct row superseded and the rail's row added, the RoCE API then
// lists the rail as the host's one row (source design), and the
// onboarding's RoCE phase 2 links the NIC the rail's device alias names
// (by its PCI address, whatever the kernel calls it) STATIC with the
// rail's address in MAAS.
func TestDesignedRoCERailsReachMAAS(t *testing.T) {
	t.Parallel()
	e := startStack(t)
	f := e.setup(map[string]any{"roce_phase2": true}, nil)
	const railMAC = "52:54:00:27:01:02"
	e.sim("POST", "/_sim/hardware", map[string]any{
		"hostname": "gpu-r01", "bmc_ip": "10.10.27.11", "pxe_mac": "52:54:00:27:01:01", "extra_macs": []string{railMAC},
	}, http.StatusCreated)
	site := "/api/v1/admin/maas-sites/" + f.SiteID
	// A row written before the site had a design, under another NIC name.
	e.admin("POST", site+"/roce-assignments", map[string]any{"items": []any{
		map[string]any{"hostname": "gpu-r01", "interface": "ens9", "ipv4_cidr": "10.20.1.20/31"},
	}}, http.StatusOK)

	docs := []map[string]any{{
		"name": "site.yaml",
		// The simulator puts a host's first extra NIC on bus 0x1a.
		"hardware_profiles": []any{map[string]any{"name": "board",
			"device_aliases": []any{map[string]any{"alias": "rail0", "pci_address": "0000:1a:00.0"}}}},
		"host_profiles": []any{map[string]any{"name": "gpu", "hardware_profile": "board"}},
		"nodes": []any{map[string]any{"hostname": "gpu-r01", "bmc_address": "10.10.27.11", "host_profile": "gpu",
			"roce_rails": []any{map[string]any{"interface": "rail0", "ipv4_cidr": "10.20.1.10/31"}}}},
	}}
	plan, byHost := e.planApplyAndWait(f, docs)
	assert.Contains(t, plan["lines"], "- roce_row gpu-r01:ens9: superseded by the design")
	assert.Contains(t, plan["lines"], "+ roce_row gpu-r01:rail0: ipv4_cidr: 10.20.1.10/31")

	rows := e.admin("GET", site+"/roce-assignments", nil, http.StatusOK)["items"].([]any)
	require.Len(t, rows, 1, "%v", rows)
	row := rows[0].(map[string]any)
	assert.Equal(t, "gpu-r01:rail0", row["id"])
	assert.Equal(t, "design", row["source"])
	refused := e.admin("POST", site+"/roce-assignments", map[string]any{"items": []any{
		map[string]any{"hostname": "gpu-r01", "interface": "ens9", "ipv4_cidr": "10.20.1.20/31"},
	}}, http.StatusConflict)["error"].(map[string]any)
	assert.Equal(t, "items[0].hostname", refused["field"])

	o := byHost["gpu-r01"]
	require.Equal(t, "completed", o["status"], o)
	assert.Equal(t, "ok", stageOutcomes(o)["roce"])
	var roceNote string
	for _, r := range o["timeline"].([]any) {
		if d, _ := r.(map[string]any)["detail"].(string); strings.HasPrefix(d, "RoCE phase-2:") {
			roceNote = d
		}
	}
	assert.Equal(t, "RoCE phase-2: 1 interfaces (rail0), 1 linked now", roceNote)

	m, err := e.maasClient().Get(context.Background(), o["maas_system_id"].(string))
	require.NoError(t, err)
	var rail *maas.Interface
	for i := range m.Interfaces {
		if m.Interfaces[i].MACAddress == railMAC {
			rail = &m.Interfaces[i]
		}
	}
	require.NotNil(t, rail, "the rail NIC among %v", m.Interfaces)
	require.Len(t, rail.Links, 1, "%+v", rail.Links)
	assert.True(t, strings.EqualFold(rail.Links[0].Mode, maas.LinkModeStatic), rail.Links[0].Mode)
	assert.Equal(t, "10.20.1.10", rail.Links[0].IPAddress)
}
