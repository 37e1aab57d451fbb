package maas

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRequestEncoding pins what each operation sends: method, path, op in
// the query string, and the exact form body (maas-behaviour §2): repeated keys for
// lists, one comma-joined value for script lists, true/false booleans,
// base64 user_data.
func TestRequestEncoding(t *testing.T) {
	const sid = "k3tgaq"
	ctx := context.Background()
	machineReply := "machine-deployed-maas-3.5.json"
	tests := []struct {
		name      string
		method    string
		path      string
		op        string
		replyFile string
		reply     string
		call      func(*Client) error
		wantQuery url.Values // without op
		wantForm  url.Values // nil: no form body
	}{
		{
			name: "find by hostname", method: http.MethodGet, path: "machines/", replyFile: "machines-hostname-maas-3.5.json",
			call:      func(c *Client) error { _, err := c.FindByHostname(ctx, "gpu-node-018"); return err },
			wantQuery: url.Values{"hostname": {"gpu-node-018"}},
		},
		{
			name: "find by MAC", method: http.MethodGet, path: "machines/", replyFile: "machines-hostname-maas-3.5.json",
			call:      func(c *Client) error { _, err := c.FindByMAC(ctx, "3c:ec:ef:12:34:56"); return err },
			wantQuery: url.Values{"mac_address": {"3c:ec:ef:12:34:56"}},
		},
		{
			name: "get", method: http.MethodGet, path: "machines/k3tgaq/", replyFile: machineReply,
			call: func(c *Client) error { _, err := c.Get(ctx, sid); return err },
		},
		{
			name: "create with commissioning", method: http.MethodPost, path: "machines/", replyFile: machineReply,
			call: func(c *Client) error {
				_, err := c.Create(ctx, MachineCreateParams{
					Hostname: "gpu-node-017", Architecture: "amd64/generic", Domain: "maas",
					MACAddresses: []string{"3c:ec:ef:12:34:56", "b8:3f:d2:aa:01:02"},
					PowerAddress: "10.30.0.17", PowerUser: "maas", PowerPass: "Zq8-bmc-SEEDED",
					Commission: true,
					Commissioning: CommissionParams{
						EnableSSH: true, SkipBMCConfig: true,
						CommissioningScripts: []string{"update_firmware", "gpu-inventory"},
						TestingScripts:       []string{"none"},
					},
				})
				return err
			},
			wantForm: url.Values{
				"hostname": {"gpu-node-017"}, "architecture": {"amd64/generic"}, "domain": {"maas"},
				"mac_addresses":                  {"3c:ec:ef:12:34:56", "b8:3f:d2:aa:01:02"},
				"power_type":                     {"ipmi"},
				"power_parameters_power_address": {"10.30.0.17"},
				"power_parameters_power_user":    {"maas"},
				"power_parameters_power_pass":    {"Zq8-bmc-SEEDED"},
				"power_parameters_power_driver":  {"LAN_2_0"},
				"commission":                     {"true"},
				"enable_ssh":                     {"true"}, "skip_bmc_config": {"true"},
				"skip_networking": {"false"}, "skip_storage": {"false"},
				"commissioning_scripts": {"update_firmware,gpu-inventory"},
				"testing_scripts":       {"none"},
			},
		},
		{
			name: "create without commissioning sends commission=false", method: http.MethodPost, path: "machines/", replyFile: machineReply,
			call: func(c *Client) error {
				_, err := c.Create(ctx, MachineCreateParams{
					Architecture: "amd64/generic", MACAddresses: []string{"3c:ec:ef:12:34:56"},
					PowerAddress: "10.30.0.17", PowerDriver: "LAN",
				})
				return err
			},
			wantForm: url.Values{
				"architecture": {"amd64/generic"}, "mac_addresses": {"3c:ec:ef:12:34:56"},
				"power_type": {"ipmi"}, "power_parameters_power_address": {"10.30.0.17"},
				"power_parameters_power_driver": {"LAN"}, "commission": {"false"},
			},
		},
		{
			name: "commission", method: http.MethodPost, path: "machines/k3tgaq/", op: "commission", replyFile: machineReply,
			call: func(c *Client) error {
				_, err := c.Commission(ctx, sid, CommissionParams{
					SkipNetworking: true, SkipStorage: true,
					CommissioningScripts: []string{" a ", "", "b"}, TestingScripts: []string{"smartctl-validate", "gpu-burn"},
				})
				return err
			},
			wantForm: url.Values{
				"enable_ssh": {"false"}, "skip_bmc_config": {"false"}, "skip_networking": {"true"}, "skip_storage": {"true"},
				"commissioning_scripts": {"a,b"}, "testing_scripts": {"smartctl-validate,gpu-burn"},
			},
		},
		{
			name: "allocate", method: http.MethodPost, path: "machines/", op: "allocate", replyFile: machineReply,
			call:     func(c *Client) error { _, err := c.Allocate(ctx, sid); return err },
			wantForm: url.Values{"system_id": {sid}},
		},
		{
			name: "deploy", method: http.MethodPost, path: "machines/k3tgaq/", op: "deploy", replyFile: machineReply,
			call: func(c *Client) error {
				_, err := c.Deploy(ctx, sid, MachineDeployParams{
					UserData: "#cloud-config\nruncmd: [echo hi]", DistroSeries: "jammy", HWEKernel: "hwe-22.04",
					EnableHWSync: true, Comment: "onboarding 42",
				})
				return err
			},
			wantForm: url.Values{
				"user_data":     {"I2Nsb3VkLWNvbmZpZwpydW5jbWQ6IFtlY2hvIGhpXQ=="},
				"distro_series": {"jammy"}, "hwe_kernel": {"hwe-22.04"}, "enable_hw_sync": {"true"},
				"comment": {"onboarding 42"},
			},
		},
		{
			name: "abort", method: http.MethodPost, path: "machines/k3tgaq/", op: "abort", replyFile: machineReply,
			call:     func(c *Client) error { _, err := c.Abort(ctx, sid, "datasource failure"); return err },
			wantForm: url.Values{"comment": {"datasource failure"}},
		},
		{
			name: "release with erase", method: http.MethodPost, path: "machines/k3tgaq/", op: "release", replyFile: machineReply,
			call: func(c *Client) error {
				_, err := c.Release(ctx, sid, MachineReleaseParams{Erase: true, QuickErase: true, Force: true, Comment: "decommission"})
				return err
			},
			wantForm: url.Values{"erase": {"true"}, "quick_erase": {"true"}, "force": {"true"}, "comment": {"decommission"}},
		},
		{
			name: "release without erase leaves the region default alone", method: http.MethodPost, path: "machines/k3tgaq/", op: "release", replyFile: machineReply,
			call: func(c *Client) error {
				_, err := c.Release(ctx, sid, MachineReleaseParams{SecureErase: true})
				return err
			},
			wantForm: url.Values{"secure_erase": {"true"}},
		},
		{
			name: "mark broken", method: http.MethodPost, path: "machines/k3tgaq/", op: "mark_broken", replyFile: machineReply,
			call:     func(c *Client) error { _, err := c.MarkBroken(ctx, sid, "erase failed"); return err },
			wantForm: url.Values{"comment": {"erase failed"}},
		},
		{
			name: "mark fixed", method: http.MethodPost, path: "machines/k3tgaq/", op: "mark_fixed", replyFile: machineReply,
			call:     func(c *Client) error { _, err := c.MarkFixed(ctx, sid, ""); return err },
			wantForm: url.Values{},
		},
		{
			name: "power on", method: http.MethodPost, path: "machines/k3tgaq/", op: "power_on", replyFile: machineReply,
			call: func(c *Client) error { return c.PowerOn(ctx, sid) }, wantForm: url.Values{},
		},
		{
			name: "power off answering null", method: http.MethodPost, path: "machines/k3tgaq/", op: "power_off", reply: "null",
			call: func(c *Client) error { return c.PowerOff(ctx, sid) }, wantForm: url.Values{},
		},
		{
			name: "power state", method: http.MethodGet, path: "machines/k3tgaq/", op: "query_power_state", reply: `{"state": "on"}`,
			call: func(c *Client) error { _, err := c.PowerState(ctx, sid); return err },
		},
		{
			name: "interfaces", method: http.MethodGet, path: "nodes/k3tgaq/interfaces/", replyFile: "interfaces-maas-3.5.json",
			call: func(c *Client) error { _, err := c.Interfaces(ctx, sid); return err },
		},
		{
			name: "link subnet AUTO", method: http.MethodPost, path: "nodes/k3tgaq/interfaces/41/", op: "link_subnet",
			replyFile: "interface-link-subnet-maas-3.5.json",
			call: func(c *Client) error {
				_, err := c.LinkSubnet(ctx, sid, 41, LinkSubnetParams{Mode: LinkModeAuto, SubnetID: 2, DefaultGateway: true})
				return err
			},
			wantForm: url.Values{"mode": {"AUTO"}, "subnet": {"2"}, "default_gateway": {"true"}},
		},
		{
			name: "link subnet DHCP", method: http.MethodPost, path: "nodes/k3tgaq/interfaces/41/", op: "link_subnet",
			replyFile: "interface-link-subnet-maas-3.5.json",
			call: func(c *Client) error {
				_, err := c.LinkSubnet(ctx, sid, 41, LinkSubnetParams{Mode: "dhcp"})
				return err
			},
			wantForm: url.Values{"mode": {"DHCP"}},
		},
		{
			name: "link subnet STATIC", method: http.MethodPost, path: "nodes/k3tgaq/interfaces/41/", op: "link_subnet",
			replyFile: "interface-link-subnet-maas-3.5.json",
			call: func(c *Client) error {
				_, err := c.LinkSubnet(ctx, sid, 41, LinkSubnetParams{Mode: LinkModeStatic, SubnetID: 2, IPAddress: "10.20.1.50", Force: true})
				return err
			},
			wantForm: url.Values{"mode": {"STATIC"}, "subnet": {"2"}, "ip_address": {"10.20.1.50"}, "force": {"true"}},
		},
		{
			name: "unlink subnet", method: http.MethodPost, path: "nodes/k3tgaq/interfaces/41/", op: "unlink_subnet",
			replyFile: "interface-link-subnet-maas-3.5.json",
			call:      func(c *Client) error { _, err := c.UnlinkSubnet(ctx, sid, 41, 930); return err },
			wantForm:  url.Values{"id": {"930"}},
		},
		{
			name: "subnets", method: http.MethodGet, path: "subnets/", replyFile: "subnets-maas-3.5.json",
			call: func(c *Client) error { _, err := c.Subnets(ctx); return err },
		},
		{
			name: "set storage layout", method: http.MethodPost, path: "machines/k3tgaq/", op: "set_storage_layout", replyFile: machineReply,
			call: func(c *Client) error {
				return c.SetStorageLayout(ctx, sid, StorageLayoutParams{Layout: "lvm", BootSize: "1G", RootSize: "100G"})
			},
			wantForm: url.Values{"storage_layout": {"lvm"}, "boot_size": {"1G"}, "root_size": {"100G"}},
		},
		{
			name: "events", method: http.MethodGet, path: "events/", op: "query", replyFile: "events-query-maas-3.5.json",
			call: func(c *Client) error {
				_, err := c.Events(ctx, EventQuery{SystemID: sid, Hostname: "gpu-node-017", Level: EventLevelDebug, Limit: 50, After: 190700})
				return err
			},
			wantQuery: url.Values{"id": {sid}, "hostname": {"gpu-node-017"}, "level": {"DEBUG"}, "limit": {"50"}, "after": {"190700"}},
		},
		{
			name: "events by hostname only", method: http.MethodGet, path: "events/", op: "query", replyFile: "events-query-maas-3.5.json",
			call: func(c *Client) error {
				_, err := c.Events(ctx, EventQuery{Hostname: "gpu-node-017"})
				return err
			},
			wantQuery: url.Values{"hostname": {"gpu-node-017"}},
		},
		{
			name: "script results", method: http.MethodGet, path: "nodes/k3tgaq/results/current-installation/",
			replyFile: "results-current-installation-maas-3.5.json",
			call: func(c *Client) error {
				_, err := c.ScriptResults(ctx, sid, ScriptsInstallation)
				return err
			},
			wantQuery: url.Values{"include_output": {"1"}},
		},
		{
			name: "delete", method: http.MethodDelete, path: "machines/k3tgaq/", reply: "",
			call: func(c *Client) error { return c.Delete(ctx, sid) },
		},
		{
			name: "escaped system id", method: http.MethodGet, path: "machines/a%2Fb/", replyFile: machineReply,
			call: func(c *Client) error { _, err := c.Get(ctx, "a/b"); return err },
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeMAAS(t)
			status := http.StatusOK
			if tc.method == http.MethodDelete {
				status = http.StatusNoContent
			}
			if tc.replyFile != "" {
				f.onFile(tc.method, tc.path, tc.op, tc.replyFile)
			} else {
				f.on(tc.method, tc.path, tc.op, status, tc.reply)
			}
			require.NoError(t, tc.call(f.client()))

			req := f.only()
			assert.Equal(t, tc.method, req.Method)
			assert.Equal(t, tc.op, req.Op, "op travels in the query string")
			query := req.Query
			query.Del("op")
			if tc.wantQuery == nil {
				tc.wantQuery = url.Values{}
			}
			assert.Equal(t, tc.wantQuery, query)
			if tc.wantForm == nil {
				assert.Empty(t, req.Body)
				return
			}
			assert.Equal(t, "application/x-www-form-urlencoded", req.Header.Get("Content-Type"))
			assert.Equal(t, tc.wantForm, req.Form)
		})
	}
}
