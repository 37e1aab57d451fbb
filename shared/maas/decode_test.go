package maas

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func pxeSubnet() *Subnet {
	return &Subnet{ID: 2, Name: "10.20.0.0/22", CIDR: "10.20.0.0/22", GatewayIP: "10.20.0.1",
		VLAN: &VLAN{ID: 5001, VID: 0, Fabric: "fabric-0", DHCPOn: true}}
}

func dataInterface() Interface {
	return Interface{
		ID: 42, Name: "enp65s0f0np0", Type: "physical", MACAddress: "b8:3f:d2:aa:01:02", Enabled: true,
		VLAN: &VLAN{ID: 5003, VID: 0, Fabric: "fabric-1"},
		Links: []Link{{ID: 913, Mode: "link_up", Subnet: &Subnet{ID: 7, Name: "192.168.50.0/24", CIDR: "192.168.50.0/24",
			VLAN: &VLAN{ID: 5003, VID: 0, Fabric: "fabric-1"}}}},
	}
}

func TestDecodeDeployedMachine(t *testing.T) {
	f := newFakeMAAS(t)
	f.onFile(http.MethodGet, "machines/k3tgaq/", "", "machine-deployed-maas-3.5.json")

	m, err := f.client().Get(context.Background(), "k3tgaq")
	require.NoError(t, err)

	assert.Equal(t, Machine{
		SystemID: "k3tgaq", Hostname: "gpu-node-017", FQDN: "gpu-node-017.maas",
		Status: StatusDeployed, StatusName: "Deployed", StatusMessage: "Deployed",
		Owner: "maasflow", PowerType: "ipmi", PowerState: "on", Architecture: "amd64/generic",
		OSystem: "ubuntu", DistroSeries: "jammy", HWEKernel: "ga-22.04",
		CPUCount: 128, Memory: 2097152, IPAddresses: []string{"10.20.1.33"},
		BootInterfaceID: 41,
		Interfaces: []Interface{
			{
				ID: 41, Name: "eno1", Type: "physical", MACAddress: "3c:ec:ef:12:34:56", Enabled: true,
				VLAN:       &VLAN{ID: 5001, VID: 0, Fabric: "fabric-0", DHCPOn: true},
				Links:      []Link{{ID: 911, Mode: "auto", IPAddress: "10.20.1.33", Subnet: pxeSubnet()}},
				Discovered: []Discovered{{IPAddress: "10.20.1.33", Subnet: pxeSubnet()}},
			},
			dataInterface(),
		},
		Domain: "maas", Zone: "az1", Pool: "gpu-h100", TagNames: []string{"gpu", "h100"}, CommissioningStatus: 2, // Passed
		BootDiskID: 81,
	}, m)
}

func TestDecodeNullsBecomeZeroValues(t *testing.T) {
	f := newFakeMAAS(t)
	f.onFile(http.MethodGet, "machines/", "", "machines-hostname-maas-3.5.json")

	ms, err := f.client().FindByHostname(context.Background(), "gpu-node-018")
	require.NoError(t, err)
	require.Len(t, ms, 1)
	m := ms[0]
	assert.Equal(t, StatusReady, m.Status)
	assert.Equal(t, "Ready", m.Status.String())
	assert.Empty(t, m.Owner, "owner null")
	assert.Empty(t, m.HWEKernel, "hwe_kernel null")
	assert.Empty(t, m.StatusAction, "status_action null")
	assert.Equal(t, 41, m.BootInterfaceID)
	require.Len(t, m.Interfaces, 2)
	// An AUTO link has no IP until deploy (maas-behaviour §9).
	assert.Equal(t, []Link{{ID: 930, Mode: "auto", Subnet: pxeSubnet()}}, m.Interfaces[0].Links)
}

func TestDecodeInterfaces(t *testing.T) {
	f := newFakeMAAS(t)
	f.onFile(http.MethodGet, "nodes/8x4frw/interfaces/", "", "interfaces-maas-3.5.json")

	ifaces, err := f.client().Interfaces(context.Background(), "8x4frw")
	require.NoError(t, err)
	require.Len(t, ifaces, 2)
	assert.Equal(t, "eno1", ifaces[0].Name)
	assert.Equal(t, dataInterface(), ifaces[1])
}

func TestDecodeLinkSubnetReply(t *testing.T) {
	f := newFakeMAAS(t)
	f.onFile(http.MethodPost, "nodes/8x4frw/interfaces/41/", "link_subnet", "interface-link-subnet-maas-3.5.json")

	iface, err := f.client().LinkSubnet(context.Background(), "8x4frw", 41, LinkSubnetParams{Mode: LinkModeStatic, SubnetID: 2, IPAddress: "10.20.1.50"})
	require.NoError(t, err)
	assert.Equal(t, []Link{
		{ID: 930, Mode: "auto", Subnet: pxeSubnet()},
		{ID: 931, Mode: "static", IPAddress: "10.20.1.50", Subnet: pxeSubnet()},
	}, iface.Links)
}

func TestDecodeSubnets(t *testing.T) {
	f := newFakeMAAS(t)
	f.onFile(http.MethodGet, "subnets/", "", "subnets-maas-3.5.json")

	subnets, err := f.client().Subnets(context.Background())
	require.NoError(t, err)
	// A null gateway_ip is "", and relay_vlan comes as a whole VLAN object
	// (maas-behaviour §10).
	assert.Equal(t, []Subnet{
		*pxeSubnet(),
		{ID: 7, Name: "roce-rail-0", CIDR: "192.168.50.0/24",
			VLAN: &VLAN{ID: 5003, VID: 0, Fabric: "fabric-1", RelayVLAN: intPtr(5001)}},
	}, subnets)
}

func TestSubnetsErrors(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		want   error
	}{
		{name: "bad key", status: http.StatusUnauthorized, body: "Authorization Error: Invalid API key.",
			want: &MAASUnauthorizedError{Op: "list subnets"}},
		{name: "region without rack", status: http.StatusServiceUnavailable, body: "No rack controllers are connected.",
			want: &MAASUnavailableError{Op: "list subnets", StatusCode: http.StatusServiceUnavailable, Message: "No rack controllers are connected."}},
		{name: "proxy page", status: http.StatusOK, body: "<html>login</html>",
			want: &MAASUnexpectedResponseError{Op: "list subnets", StatusCode: http.StatusOK, Message: "reply is not JSON (syntax error at offset 0)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeMAAS(t)
			f.on(http.MethodGet, "subnets/", "", tc.status, tc.body)

			subnets, err := f.client().Subnets(context.Background())
			assert.Nil(t, subnets)
			assert.Equal(t, tc.want, err)
		})
	}
}

func TestDecodeEvents(t *testing.T) {
	f := newFakeMAAS(t)
	f.onFile(http.MethodGet, "events/", "query", "events-query-maas-3.5.json")

	evs, err := f.client().Events(context.Background(), EventQuery{SystemID: "k3tgaq", Level: EventLevelDebug})
	require.NoError(t, err)
	require.Len(t, evs, 4)
	assert.Equal(t, Event{
		ID: 190823, Node: "k3tgaq", Hostname: "gpu-node-017", Level: "ERROR",
		Created: time.Date(2025, 1, 7, 10, 15, 30, 0, time.UTC),
		Type:    "Node post-installation failure", Description: "'cloudinit' running modules for final",
	}, evs[0])
	assert.Equal(t, "User starting deployment", evs[3].Type)
	assert.True(t, evs[0].Created.After(evs[3].Created), "newest first")
}

func TestMAASTimeFormats(t *testing.T) {
	tests := []struct {
		in   string
		want time.Time
	}{
		{in: `"Tue, 07 Jan. 2025 10:15:30"`, want: time.Date(2025, 1, 7, 10, 15, 30, 0, time.UTC)},
		{in: `"Fri, 02 May. 2025 08:00:01"`, want: time.Date(2025, 5, 2, 8, 0, 1, 0, time.UTC)},
		{in: `"Tue, 07 Jan 2025 10:15:30 +0000"`, want: time.Date(2025, 1, 7, 10, 15, 30, 0, time.UTC)},
		{in: `"2025-01-07T10:15:30Z"`, want: time.Date(2025, 1, 7, 10, 15, 30, 0, time.UTC)},
		{in: `null`, want: time.Time{}},
		{in: `"yesterday"`, want: time.Time{}},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			var mt maasTime
			require.NoError(t, json.Unmarshal([]byte(tc.in), &mt))
			assert.True(t, tc.want.Equal(time.Time(mt)), "got %v", time.Time(mt))
		})
	}
}

func TestDecodeScriptResults(t *testing.T) {
	f := newFakeMAAS(t)
	f.onFile(http.MethodGet, "nodes/k3tgaq/results/current-installation/", "", "results-current-installation-maas-3.5.json")

	set, err := f.client().ScriptResults(context.Background(), "k3tgaq", ScriptsInstallation)
	require.NoError(t, err)
	one := 1
	assert.Equal(t, ScriptSet{
		ID: 3188, Type: ScriptsInstallation, StatusName: "Failed",
		Results: []ScriptResult{
			{
				ID: 40211, Name: "/tmp/install.log", Status: 3, StatusName: "Failed", ExitStatus: &one,
				Output: "curtin: Installation started. (21.3-1-g2f4a7b5c)\nstart: cmd-install/stage-partitioning\n" +
					"finish: cmd-install: SUCCESS: curtin command install\n",
			},
			{ID: 40219, Name: "/tmp/curtin-logs.tar", Status: 3, StatusName: "Failed", Binary: true},
		},
	}, set)
}

func TestScriptResultsWithoutCurrentSet(t *testing.T) {
	tests := []struct {
		name string
		body string
	}{
		{name: "MAAS 3.5", body: "No current installation script set exists for this node."},
		{name: "MAAS 3.4", body: "Unknown id current-installation"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeMAAS(t)
			f.on(http.MethodGet, "nodes/k3tgaq/results/current-installation/", "", http.StatusBadRequest, tc.body)

			_, err := f.client().ScriptResults(context.Background(), "k3tgaq", ScriptsInstallation)
			assert.Equal(t, &MAASNotFoundError{Op: "read script results", SystemID: "k3tgaq", Message: tc.body}, err)
		})
	}
}

func TestDecodeProbe(t *testing.T) {
	f := newFakeMAAS(t)
	f.onFile(http.MethodGet, "version/", "", "version-maas-3.5.json")
	f.onFile(http.MethodGet, "users/", "whoami", "whoami-maas-3.5.json")

	p, err := f.client().Probe(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "3.5.4", p.Version)
	assert.Equal(t, "maasflow", p.Username)
	assert.True(t, p.IsAdmin)
	assert.Contains(t, p.Capabilities, "authenticate-api")
	assert.Len(t, p.Capabilities, 9)
}

func TestProbeWithBadKey(t *testing.T) {
	f := newFakeMAAS(t)
	f.onFile(http.MethodGet, "version/", "", "version-maas-3.5.json")
	f.on(http.MethodGet, "users/", "whoami", http.StatusUnauthorized, "Authorization Error: Invalid API key.")

	_, err := f.client().Probe(context.Background())
	assert.Equal(t, &MAASUnauthorizedError{Op: "whoami"}, err)
}

func TestRelayVLANAsIDOrObject(t *testing.T) {
	tests := []struct {
		in   string
		want *int
	}{
		{in: `{"id": 1, "vid": 0, "relay_vlan": null}`},
		{in: `{"id": 1, "vid": 0, "relay_vlan": 5005}`, want: intPtr(5005)},
		{in: `{"id": 1, "vid": 0, "relay_vlan": {"id": 5007, "vid": 30, "fabric": "fabric-3"}}`, want: intPtr(5007)},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			var w wireVLAN
			require.NoError(t, json.Unmarshal([]byte(tc.in), &w))
			assert.Equal(t, tc.want, w.vlan().RelayVLAN)
		})
	}
}

func intPtr(i int) *int { return &i }

func BenchmarkDecodeMachine(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("testdata", "machine-deployed-maas-3.5.json"))
	require.NoError(b, err)
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		var w wireMachine
		if err := decodeReply(data, &w); err != nil {
			b.Fatal(err)
		}
		_ = w.machine()
	}
}

// jsonString's shortcut for plain literals must read every literal as
// encoding/json does.
func TestJSONStringMatchesEncodingJSON(t *testing.T) {
	for _, lit := range []string{
		`""`, `"gpu-01"`, `"From 'Commissioning' to 'Ready'"`, `"a\"b"`, `"tab\there"`,
		`"caf\u00e9"`, `"café"`, `"\ud83d\ude00"`, `"slash\/ed"`, "\"bad \xff byte\"",
	} {
		var want string
		require.NoError(t, json.Unmarshal([]byte(lit), &want), lit)
		got, err := jsonString([]byte(lit))
		require.NoError(t, err, lit)
		assert.Equal(t, want, got, lit)
	}
	_, err := jsonString([]byte(`12`))
	assert.Error(t, err, "a number is not a string")
}

// A nullString decodes null as "" and a string as itself, escapes included,
// and refuses anything else, as the custom decoder it replaced did.
func TestNullStringDecoding(t *testing.T) {
	var v struct {
		A nullString `json:"a"`
		B nullString `json:"b"`
	}
	require.NoError(t, json.Unmarshal([]byte(`{"a": null, "b": "x\u00e9\"y"}`), &v))
	assert.Equal(t, nullString(""), v.A)
	assert.Equal(t, nullString(`xé"y`), v.B)
	assert.Error(t, json.Unmarshal([]byte(`{"a": 3}`), &v))
}

// The shipped decoder gives what encoding/json gives for every recorded
// MAAS reply, into every wire type the client reads them with.
func TestDecodeReplyMatchesEncodingJSON(t *testing.T) {
	for file, into := range map[string]func() any{
		"machine-deployed-maas-3.5.json":             func() any { return new(wireMachine) },
		"machines-by-id-maas-3.5.json":               func() any { return new([]wireMachine) },
		"machines-hostname-maas-3.5.json":            func() any { return new([]wireMachine) },
		"interfaces-maas-3.5.json":                   func() any { return new([]wireInterface) },
		"interface-link-subnet-maas-3.5.json":        func() any { return new(wireInterface) },
		"subnets-maas-3.5.json":                      func() any { return new([]wireSubnet) },
		"events-query-maas-3.5.json":                 func() any { return new(wireEvents) },
		"power-parameters-maas-3.5.json":             func() any { return new(map[string]any) },
		"results-current-installation-maas-3.5.json": func() any { return new(wireScriptSet) },
		"version-maas-3.5.json":                      func() any { return new(wireVersion) },
		"whoami-maas-3.5.json":                       func() any { return new(wireWhoami) },
	} {
		data, err := os.ReadFile(filepath.Join("testdata", file))
		require.NoError(t, err)
		want, got := into(), into()
		require.NoError(t, json.Unmarshal(data, want), file)
		require.NoError(t, decodeReply(data, got), file)
		assert.Equal(t, want, got, file)
	}
}
