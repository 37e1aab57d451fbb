package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/internal/localstack"
	"github.com/maasflow/maasflow/internal/maassim"
	"github.com/maasflow/maasflow/shared/design"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
	"github.com/maasflow/maasflow/shared/reconcile"
)

// startStackWithVLANs starts a stack whose simulator's fabric also has
// tagged VLANs: the storage VLAN 120 (MTU 9000) and a VLAN 122 whose
// subnet a design may wrongly put on VLAN 121.
func startStackWithVLANs(t *testing.T) *env {
	t.Helper()
	logs := &syncBuffer{}
	dir := t.TempDir()
	s, err := localstack.Start(context.Background(), localstack.Config{
		Listen: "127.0.0.1:0", SimListen: "127.0.0.1:0", TimeScale: timeScale, DataDir: dir,
		ReconcileInterval: -1,
		Logger:            slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		SimTaggedVLANs: []maassim.TaggedVLAN{
			{VID: 120, CIDR: "10.120.0.0/24", MTU: 9000},
			{VID: 122, CIDR: "10.121.0.0/24", MTU: 9000},
		},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return newEnv(t, s, dir, logs)
}

// sixNodeDesign is a site's base (a board's aliases and boot disk, two
// networks, a PXE link and a storage bond, two host profiles, one
// inheriting) and a rack of six nodes, plus a seventh whose profile puts
// its storage on VLAN 121 where MAAS has the subnet on VLAN 122.
func sixNodeDesign() []map[string]any {
	nodes := []any{}
	for k := 1; k <= 6; k++ {
		profile := "gpu-base"
		if k > 3 {
			profile = "gpu-training"
		}
		nodes = append(nodes, map[string]any{
			"hostname": fmt.Sprintf("gpu-d%02d", k), "bmc_address": fmt.Sprintf("10.10.26.%d", 10+k), "host_profile": profile, "rack": "d",
			"addresses": []any{
				map[string]any{"interface": "pxe0", "network": "mgmt", "address": fmt.Sprintf("10.20.9.%d", 10+k)},
				map[string]any{"interface": "bond0", "network": "storage", "address": fmt.Sprintf("10.120.0.%d", 10+k)},
			},
		})
	}
	nodes = append(nodes, map[string]any{"hostname": "gpu-d07", "bmc_address": "10.10.26.17", "host_profile": "gpu-misvlan", "rack": "d"})
	return []map[string]any{{
		"name": "site.yaml",
		// The simulator's board: the PXE NIC on bus 0x0c, the extra NICs
		// on 0x1a and 0x2c; the boot disk is the second NVMe disk.
		"hardware_profiles": []any{map[string]any{"name": "board",
			"device_aliases": []any{
				map[string]any{"alias": "pxe0", "pci_address": "0000:0c:00.0"},
				map[string]any{"alias": "stor0", "pci_address": "0000:1a:00.0"},
				map[string]any{"alias": "stor1", "pci_address": "0000:2c:00.0"},
			},
			"boot_disk": map[string]any{"model": "SAMSUNG MZ1L2960", "size_gb": 960},
		}},
		"networks": []any{
			map[string]any{"name": "mgmt", "cidr": "10.20.0.0/20", "mtu": 1500, "gateway": "10.20.0.1", "dns_servers": []string{"10.20.0.2", "10.20.0.3"}},
			map[string]any{"name": "storage", "cidr": "10.120.0.0/24", "vlan": 120, "mtu": 9000, "gateway": "10.120.0.1", "dns_servers": []string{"10.120.0.2"}},
			map[string]any{"name": "backup", "cidr": "10.121.0.0/24", "vlan": 121, "mtu": 9000},
		},
		"network_links": []any{
			map[string]any{"name": "pxe", "members": []string{"pxe0"}, "mtu": 1500},
			map[string]any{"name": "storage-bond", "bond_mode": "802.3ad", "members": []string{"stor0", "stor1"}, "mtu": 9000},
		},
		"host_profiles": []any{
			map[string]any{"name": "gpu-base", "hardware_profile": "board", "interfaces": []any{
				map[string]any{"name": "eno1", "link": "pxe", "networks": []string{"mgmt"}},
				map[string]any{"name": "bond0", "link": "storage-bond", "networks": []string{"storage"}},
			}},
			map[string]any{"name": "gpu-training", "parent": "gpu-base", "labels": map[string]string{"pool": "training"}},
			map[string]any{"name": "gpu-misvlan", "hardware_profile": "board", "interfaces": []any{
				map[string]any{"name": "eno1", "link": "pxe", "networks": []string{"mgmt"}},
				map[string]any{"name": "bond0", "link": "storage-bond", "networks": []string{"backup"}},
			}},
		},
	}, {"name": "rack-d.yaml", "nodes": nodes}}
}

// A design applied through plan and apply onboards its hosts through the
// batch path, and each ends deployed with its network and boot disk in
// MAAS as designed: the storage bond over the two aliased NICs at MTU
// 9000, its VLAN 120 interface with the node's static address, the PXE
// NIC at MTU 1500 with its static management address (kept through
// pxe_preflight), each subnet's DNS servers,
// and the second NVMe disk (the selector's) as the boot disk. A host
// whose design MAAS cannot take (its storage VLAN is not the subnet's)
// stops at configure_machine for an operator, before storage or deploy.
// Changing a deployed node's MTU behind maasflow's back then shows as
// network drift for that node alone.
func TestDesignReachesMAASAndDriftIsReported(t *testing.T) {
	t.Parallel()
	e := startStackWithVLANs(t)
	f := e.setup(nil, nil)
	for k := 1; k <= 7; k++ {
		e.sim("POST", "/_sim/hardware", map[string]any{
			"hostname": fmt.Sprintf("gpu-d%02d", k), "bmc_ip": fmt.Sprintf("10.10.26.%d", 10+k),
			"pxe_mac":    fmt.Sprintf("52:54:00:26:%02x:01", k),
			"extra_macs": []string{fmt.Sprintf("52:54:00:26:%02x:02", k), fmt.Sprintf("52:54:00:26:%02x:03", k)},
			"disks": []any{
				map[string]any{"name": "nvme0n1", "size_bytes": 3_840_000_000_000, "model": "SAMSUNG MZQL23T8", "serial": fmt.Sprintf("DATA%02d", k)},
				map[string]any{"name": "nvme1n1", "size_bytes": 960_000_000_000, "model": "SAMSUNG MZ1L2960", "serial": fmt.Sprintf("BOOT%02d", k)},
			},
		}, http.StatusCreated)
	}

	plan, byHost := e.planApplyAndWait(f, sixNodeDesign())
	require.Len(t, plan["onboard"], 7)
	require.Len(t, byHost, 7)

	bad := byHost["gpu-d07"]
	require.Equal(t, "manual_intervention", bad["status"], bad)
	assert.Equal(t, "configure_machine", bad["stage"])
	assert.Equal(t, "InterfaceOpError", errorCode(bad))
	assert.Contains(t, bad["error"].(map[string]any)["message"], "subnet 10.121.0.0/24 is on VLAN 122 in MAAS, the design says 121")
	assert.NotContains(t, stageOutcomes(bad), "storage", "stopped before storage")

	ctx := context.Background()
	mc := e.maasClient()
	for k := 1; k <= 6; k++ {
		host := fmt.Sprintf("gpu-d%02d", k)
		o := byHost[host]
		require.Equal(t, "completed", o["status"], o)
		assert.Equal(t, "ok", stageOutcomes(o)["configure_machine"], host)
		e.assertDesignedInMAAS(ctx, mc, o["maas_system_id"].(string), fmt.Sprintf("10.20.9.%d", 10+k), fmt.Sprintf("10.120.0.%d", 10+k))
	}
	subnets, err := mc.Subnets(ctx)
	require.NoError(t, err)
	dns := map[string][]string{}
	for _, sn := range subnets {
		dns[sn.CIDR] = sn.DNSServers
	}
	assert.Equal(t, []string{"10.20.0.2", "10.20.0.3"}, dns["10.20.0.0/20"])
	assert.Equal(t, []string{"10.120.0.2"}, dns["10.120.0.0/24"])

	// As designed: a reconcile run finds no network drift.
	run, _, err := e.stack.Reconciler.Run(ctx, f.SiteID, reconcile.TriggerAPI)
	require.NoError(t, err)
	assert.Zero(t, run.DriftByKind[domain.DriftNetworkMismatch], "%v", run.DriftByKind)

	// gpu-d03's PXE NIC MTU changed in MAAS (an operator marks the machine
	// broken, edits the interface and marks it fixed: MAAS keeps a
	// Deployed machine's MTU otherwise).
	changed := byHost["gpu-d03"]
	sid := changed["maas_system_id"].(string)
	m, err := mc.Get(ctx, sid)
	require.NoError(t, err)
	_, err = mc.MarkBroken(ctx, sid, "cabling")
	require.NoError(t, err)
	_, err = mc.SetInterfaceMTU(ctx, sid, m.BootInterfaceID, 9000)
	require.NoError(t, err)
	fixed, err := mc.MarkFixed(ctx, sid, "cabling done")
	require.NoError(t, err)
	require.Equal(t, "Deployed", fixed.StatusName)

	run, _, err = e.stack.Reconciler.Run(ctx, f.SiteID, reconcile.TriggerAPI)
	require.NoError(t, err)
	assert.Equal(t, 1, run.DriftByKind[domain.DriftNetworkMismatch], "%v", run.DriftByKind)
	item, ok := e.openDrift(f.SiteID)[changed["node_id"].(string)+" "+domain.DriftNetworkMismatch]
	require.True(t, ok, "network drift open for gpu-d03")
	assert.Contains(t, item["observed"], "MTU 9000, designed 1500")

	// Set back as designed, the drift closes.
	_, err = mc.MarkBroken(ctx, sid, "undo")
	require.NoError(t, err)
	_, err = mc.SetInterfaceMTU(ctx, sid, m.BootInterfaceID, 1500)
	require.NoError(t, err)
	_, err = mc.MarkFixed(ctx, sid, "undone")
	require.NoError(t, err)
	_, _, err = e.stack.Reconciler.Run(ctx, f.SiteID, reconcile.TriggerAPI)
	require.NoError(t, err)
	_, open := e.openDrift(f.SiteID)[changed["node_id"].(string)+" "+domain.DriftNetworkMismatch]
	assert.False(t, open, "network drift closed once MAAS matches the design again")
}

// assertDesignedInMAAS reads the machine back through the MAAS client:
// the bond, its VLAN interface with the static address, the MTUs, the PXE
// NIC's static management link and the boot disk.
func (e *env) assertDesignedInMAAS(ctx context.Context, mc *maas.Client, sid, mgmtAddr, storageAddr string) {
	t := e.t
	t.Helper()
	observed, err := mc.ObservedInterfaces(ctx, sid)
	require.NoError(t, err)
	byName := map[string]design.ObservedInterface{}
	for _, o := range observed {
		byName[o.Name] = o
	}
	bond, ok := byName["bond0"]
	require.True(t, ok, "%s: bond0 in %v", sid, observed)
	assert.Equal(t, "bond", bond.Type)
	assert.Equal(t, 9000, bond.MTU)
	assert.Len(t, bond.Parents, 2)
	vlan, ok := byName["bond0.120"]
	require.True(t, ok, "%s: bond0.120 in %v", sid, observed)
	assert.Equal(t, "vlan", vlan.Type)
	assert.Equal(t, 9000, vlan.MTU)
	assert.Contains(t, vlan.Links, design.ObservedLink{CIDR: "10.120.0.0/24", Mode: "static", Address: storageAddr})

	m, err := mc.Get(ctx, sid)
	require.NoError(t, err)
	assert.Equal(t, "Deployed", m.StatusName)
	var pxe maas.Interface
	for _, i := range m.Interfaces {
		if i.ID == m.BootInterfaceID {
			pxe = i
		}
	}
	require.NotEmpty(t, pxe.Name, "%s: boot interface", sid)
	assert.Equal(t, 1500, byName[pxe.Name].MTU)
	// pxe_preflight keeps the designed STATIC link rather than relinking
	// the boot interface AUTO.
	assert.Equal(t, []design.ObservedLink{{CIDR: "10.20.0.0/20", Mode: "static", Address: mgmtAddr}}, byName[pxe.Name].Links,
		"%s: PXE NIC with its designed address", sid)
	assert.Equal(t, []string{"52:54:00:26"}, []string{pxe.MACAddress[:11]})

	blocks, err := mc.BlockDevices(ctx, sid)
	require.NoError(t, err)
	boot := slices.IndexFunc(blocks, func(b maas.BlockDevice) bool { return b.ID == m.BootDiskID })
	require.GreaterOrEqual(t, boot, 0, "%s: boot disk %d among %v", sid, m.BootDiskID, blocks)
	assert.Equal(t, "nvme1n1", blocks[boot].Name, "the selector's disk boots the machine")
}

// planApplyAndWait plans the design documents on the fixture's site,
// applies that plan (onboarding the new hosts through the batch path with
// the fixture's profile and SKU), waits for every onboarding to end and
// returns the plan and the onboardings by hostname.
func (e *env) planApplyAndWait(f fixture, docs []map[string]any) (map[string]any, map[string]map[string]any) {
	t := e.t
	t.Helper()
	base := "/api/v1/admin/maas-sites/" + f.SiteID + "/design"
	plan := e.admin("POST", base+"/plan", map[string]any{"documents": docs}, http.StatusOK)
	applied := e.admin("POST", base+"/apply", map[string]any{"documents": docs, "plan_hash": plan["hash"],
		"onboard": map[string]any{"profile_id": f.ProfileID, "sku_id": f.SKUID}}, http.StatusOK)
	batchID := applied["batch"].(map[string]any)["id"].(string)

	b := e.batch(batchID)
	deadline := time.Now().Add(terminalWait)
	for b["status"] == "running" || b["status"] == "pending" {
		require.True(t, time.Now().Before(deadline), "batch still running: %v", b["counts"])
		time.Sleep(50 * time.Millisecond)
		b = e.batch(batchID)
	}
	byHost := map[string]map[string]any{}
	for _, raw := range e.admin("GET", "/api/v1/admin/onboardings?batch_id="+batchID, nil, http.StatusOK)["items"].([]any) {
		o := e.waitTerminal(raw.(map[string]any)["id"].(string))
		byHost[o["hostname"].(string)] = o
	}
	return plan, byHost
}
