package maassim

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bundleKeys are the node bootstrap bundle's keys (firstboot contract).
var bundleKeys = []string{
	"GPUAAS_API_URL", "GPUAAS_CA_BUNDLE_PATH", "GPUAAS_CERT_PATH", "GPUAAS_ENROLLMENT_TOKEN", "GPUAAS_KEY_PATH",
	"GPUAAS_NODE_CERT_CA_BUNDLE_PATH", "GPUAAS_NODE_ID", "GPUAAS_TASK_SIGNING_PUBKEYS", "bundle_version",
	"ca_bundle_pem", "ca_fingerprint", "package",
}

func (h *harness) bootstrap(t *testing.T, hostname string) apiResp {
	t.Helper()
	return h.control(t, http.MethodGet, "/_sim/hardware/"+url.PathEscape(hostname)+"/bootstrap", "")
}

// writtenBundle is the file content the user_data asks cloud-init to write.
func writtenBundle(t *testing.T, userDataB64 string) []byte {
	t.Helper()
	ud, err := base64.StdEncoding.DecodeString(userDataB64)
	require.NoError(t, err)
	raw, err := bootstrapFile(ud)
	require.NoError(t, err)
	return raw
}

func TestNodeBootstrapIsTheBundleOnDisk(t *testing.T) {
	h := newHarness(t)
	er := newEnrollRecorder(t, http.StatusOK)
	sid := h.ready(t, "gpu-1", 1, Faults{})
	assert.Equal(t, http.StatusNotFound, h.bootstrap(t, "gpu-1").code, "never deployed: nothing on the disk")

	ud := firstBootUserData(t, er.srv.URL, "node-1")
	h.deployed(t, sid, ud)
	require.Equal(t, "Deployed", h.statusName(t, sid))

	r := h.bootstrap(t, "gpu-1")
	require.Equal(t, http.StatusOK, r.code, "body: %s", r.body)
	assert.Equal(t, "application/json", r.header.Get("Content-Type"))
	assert.Equal(t, "no-store", r.header.Get("Cache-Control"))
	assert.Equal(t, writtenBundle(t, ud), r.body, "exactly the bytes cloud-init wrote")
	var bundle map[string]any
	r.json(t, &bundle)
	keys := make([]string, 0, len(bundle))
	for k := range bundle {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	assert.Equal(t, bundleKeys, keys)
	assert.Equal(t, "token-node-1", bundle["GPUAAS_ENROLLMENT_TOKEN"])
	assert.Equal(t, "node-1", bundle["GPUAAS_NODE_ID"])

	byFQDN := h.bootstrap(t, "gpu-1.maas")
	assert.Equal(t, r.body, byFQDN.body, "the FQDN names the same host")
	inProcess, err := h.sim.NodeBootstrap("gpu-1")
	require.NoError(t, err)
	assert.Equal(t, r.body, inProcess)

	hw := h.control(t, http.MethodGet, "/_sim/hardware", "")
	assert.NotContains(t, string(hw.body), "token-node-1", "the host listing never shows the token")
	assert.NotContains(t, string(h.call(t, http.MethodGet, "machines/"+sid+"/", "", nil).body), "token-node-1")
}

func TestNodeBootstrapFollowsTheDisk(t *testing.T) {
	tests := []struct {
		name   string
		faults Faults
		// after drives the machine on from Deployed (or the failed deploy)
		// and returns the expected HTTP status and enrollment token.
		after func(t *testing.T, h *harness, sid, enrollURL string) (int, string)
	}{
		{"a node that never enrolls still has its bundle", Faults{NeverEnrolls: true},
			func(*testing.T, *harness, string, string) (int, string) { return http.StatusOK, "token-node-1" }},
		{"an OS that never reached the metadata service wrote nothing", Faults{DeployDatasourceFailures: 1},
			func(t *testing.T, h *harness, sid, _ string) (int, string) {
				t.Helper()
				require.Equal(t, "Deploying", h.statusName(t, sid))
				return http.StatusNotFound, ""
			}},
		{"erasing wipes it", Faults{},
			func(t *testing.T, h *harness, sid, _ string) (int, string) {
				t.Helper()
				r := h.call(t, http.MethodPost, "machines/"+sid+"/", "release", url.Values{"erase": {"true"}})
				require.Equal(t, http.StatusOK, r.code, "body: %s", r.body)
				assert.Equal(t, http.StatusOK, h.bootstrap(t, "gpu-1").code, "still there while erasing")
				h.clock.Advance(4 * time.Minute)
				require.Equal(t, "Ready", h.statusName(t, sid))
				return http.StatusNotFound, ""
			}},
		{"a release without erase keeps it", Faults{},
			func(t *testing.T, h *harness, sid, _ string) (int, string) {
				t.Helper()
				r := h.call(t, http.MethodPost, "machines/"+sid+"/", "release", nil)
				require.Equal(t, http.StatusOK, r.code, "body: %s", r.body)
				h.clock.Advance(time.Minute)
				require.Equal(t, "Ready", h.statusName(t, sid))
				return http.StatusOK, "token-node-1"
			}},
		{"a new deployment replaces it", Faults{},
			func(t *testing.T, h *harness, sid, enrollURL string) (int, string) {
				t.Helper()
				r := h.call(t, http.MethodPost, "machines/"+sid+"/", "release", nil)
				require.Equal(t, http.StatusOK, r.code, "body: %s", r.body)
				h.clock.Advance(time.Minute)
				r = h.call(t, http.MethodPost, "machines/"+sid+"/", "deploy", url.Values{"user_data": {firstBootUserData(t, enrollURL, "node-2")}})
				require.Equal(t, http.StatusOK, r.code, "body: %s", r.body)
				h.clock.Advance(2 * time.Minute)
				assert.Equal(t, http.StatusNotFound, h.bootstrap(t, "gpu-1").code, "curtin rewrote the disk")
				h.clock.Advance(6 * time.Minute)
				require.Equal(t, "Deployed", h.statusName(t, sid))
				return http.StatusOK, "token-node-2"
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			er := newEnrollRecorder(t, http.StatusOK)
			sid := h.ready(t, "gpu-1", 1, tc.faults)
			h.deployed(t, sid, firstBootUserData(t, er.srv.URL, "node-1"))
			code, token := tc.after(t, h, sid, er.srv.URL)
			r := h.bootstrap(t, "gpu-1")
			require.Equal(t, code, r.code, "body: %s", r.body)
			if code != http.StatusOK {
				assert.Contains(t, string(r.body), "no node bootstrap bundle on its disk")
				return
			}
			var bundle map[string]any
			r.json(t, &bundle)
			assert.Equal(t, token, bundle["GPUAAS_ENROLLMENT_TOKEN"])
		})
	}
}

func TestNodeBootstrapLookup(t *testing.T) {
	h := newHarness(t)
	er := newEnrollRecorder(t, http.StatusOK)
	// The host's own name differs from the MAAS hostname: both find it.
	require.NoError(t, h.sim.AddHardware(Hardware{BMCIP: "10.10.0.7", PXEMAC: "0c:c4:7a:00:00:07", Hostname: "rack-a-u07"}))
	sid := h.create(t, "gpu-7", "10.10.0.7", false)
	r := h.call(t, http.MethodPost, "machines/"+sid+"/", "commission", url.Values{"skip_bmc_config": {"1"}})
	require.Equal(t, http.StatusOK, r.code, "body: %s", r.body)
	h.clock.Advance(3 * time.Minute)
	h.deployed(t, sid, firstBootUserData(t, er.srv.URL, "node-7"))
	require.NoError(t, h.sim.AddHardware(Hardware{BMCIP: "10.10.0.8", PXEMAC: "0c:c4:7a:00:00:08", Hostname: "twin"}))
	require.NoError(t, h.sim.AddHardware(Hardware{BMCIP: "10.10.0.9", PXEMAC: "0c:c4:7a:00:00:09", Hostname: "twin"}))

	tests := []struct {
		name   string
		method string
		host   string
		code   int
		part   string
	}{
		{"by MAAS hostname", http.MethodGet, "gpu-7", http.StatusOK, "token-node-7"},
		{"by the host's own name", http.MethodGet, "rack-a-u07", http.StatusOK, "token-node-7"},
		{"unknown host", http.MethodGet, "gpu-404", http.StatusNotFound, "host gpu-404: no such host"},
		{"two hosts of one name", http.MethodGet, "twin", http.StatusBadRequest, "2 hosts have that name"},
		{"read only", http.MethodPost, "gpu-7", http.StatusMethodNotAllowed, "method not allowed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := h.control(t, tc.method, "/_sim/hardware/"+tc.host+"/bootstrap", "")
			assert.Equal(t, tc.code, r.code)
			assert.Contains(t, string(r.body), tc.part)
		})
	}
	_, err := h.sim.NodeBootstrap("gpu-404")
	var nf *SimulatorNotFoundError
	require.ErrorAs(t, err, &nf)
	assert.Equal(t, "gpu-404", nf.Hostname)
	assert.Equal(t, http.StatusNotFound, h.control(t, http.MethodGet, "/_sim/hardware/a/b/bootstrap", "").code)
}
