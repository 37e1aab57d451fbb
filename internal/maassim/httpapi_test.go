package maassim

import (
	"bytes"
	"context"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAuth(t *testing.T) {
	h := newHarness(t)
	tests := []struct {
		name   string
		key    string
		header string // raw Authorization header, when set
		method string
		path   string
		op     string
		code   int
		body   string
	}{
		{"whoami signed", testKey, "", http.MethodGet, "users/", "whoami", http.StatusOK, ""},
		{"whoami anonymous", "", "", http.MethodGet, "users/", "whoami", http.StatusUnauthorized, "Forbidden"},
		{"anonymous machines list goes to the anonymous handler", "", "", http.MethodGet, "machines/", "", http.StatusBadRequest,
			"Unrecognised signature: method=GET op=None"},
		{"anonymous version", "", "", http.MethodGet, "version/", "", http.StatusOK, ""},
		{"unknown consumer", "nope:tk1234567890:topsecretsignaturevalue", "", http.MethodGet, "users/", "whoami",
			http.StatusUnauthorized, "Authorization Error: Invalid API key."},
		{"unknown token", "ck1234567890:wrongtoken:topsecretsignaturevalue", "", http.MethodGet, "users/", "whoami",
			http.StatusUnauthorized, "Authorization Error: 'Invalid access token: wrongtoken'"},
		{"wrong secret", "ck1234567890:tk1234567890:guessed", "", http.MethodGet, "machines/", "",
			http.StatusUnauthorized, "Authorization Error: 'Invalid signature.'"},
		{"timestamp not an integer", "", `OAuth oauth_consumer_key="ck1234567890", oauth_token="tk1234567890", oauth_signature="%26topsecretsignaturevalue", oauth_signature_method="PLAINTEXT", oauth_timestamp="soon", oauth_nonce="1"`,
			http.MethodGet, "users/", "whoami", http.StatusBadRequest, "Bad Request: Invalid oauth_timestamp"},
		{"incomplete OAuth is anonymous", "", `OAuth oauth_consumer_key="ck1234567890"`, http.MethodGet, "users/", "whoami",
			http.StatusUnauthorized, "Forbidden"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var r apiResp
			if tc.header != "" {
				req, err := http.NewRequestWithContext(context.Background(), tc.method, h.srv.URL+apiPrefix+tc.path+"?op="+tc.op, nil)
				require.NoError(t, err)
				req.Header.Set("Authorization", tc.header)
				resp, err := http.DefaultClient.Do(req)
				require.NoError(t, err)
				b, _ := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				r = apiResp{code: resp.StatusCode, body: b}
			} else {
				r = h.callAs(t, tc.key, tc.method, tc.path, tc.op, nil)
			}
			assert.Equal(t, tc.code, r.code)
			if tc.body != "" {
				assert.Equal(t, tc.body, string(r.body))
			}
			assert.NotContains(t, string(r.body), "topsecretsignaturevalue")
		})
	}
	r := h.call(t, http.MethodGet, "users/", "whoami", nil)
	assert.JSONEq(t, `{"username":"admin","email":"admin@example.com","is_local":true,"is_superuser":true,"resource_uri":"/MAAS/api/2.0/users/admin/"}`, string(r.body))
}

func TestRequestConventions(t *testing.T) {
	h := newHarness(t)
	sid := h.ready(t, "gpu-1", 1, Faults{})
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	t.Run("API version and the removed 1.0", func(t *testing.T) {
		resp := httpGet(t, h.srv.URL+"/MAAS/api/version/")
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		assert.Equal(t, "2.0", string(b))
		resp = httpGet(t, h.srv.URL+"/MAAS/api/1.0/machines/")
		_ = resp.Body.Close()
		assert.Equal(t, http.StatusGone, resp.StatusCode)
	})
	t.Run("missing slash redirects", func(t *testing.T) {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, h.srv.URL+apiPrefix+"machines/"+sid+"?op=query_power_state", nil)
		require.NoError(t, err)
		resp, err := noRedirect.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		assert.Equal(t, http.StatusMovedPermanently, resp.StatusCode)
		assert.Equal(t, apiPrefix+"machines/"+sid+"/?op=query_power_state", resp.Header.Get("Location"))
	})
	t.Run("unknown op and wrong method", func(t *testing.T) {
		r := h.call(t, http.MethodPost, "machines/"+sid+"/", "explode", nil)
		assert.Equal(t, http.StatusBadRequest, r.code)
		assert.Equal(t, "Unrecognised signature: method=POST op=explode", string(r.body))
		r = h.call(t, http.MethodPost, "machines/"+sid+"/", "query_power_state", nil)
		assert.Equal(t, "Unrecognised signature: method=POST op=query_power_state", string(r.body))
		r = h.call(t, http.MethodPut, "events/", "", nil)
		assert.Equal(t, http.StatusMethodNotAllowed, r.code)
	})
	t.Run("op in the body, op-name path, multipart", func(t *testing.T) {
		r := h.call(t, http.MethodPost, "machines/", "", url.Values{"op": {"allocate"}, "system_id": {sid}})
		require.Equal(t, http.StatusOK, r.code, "body: %s", r.body)
		assert.Equal(t, "Allocated", r.obj(t)["status_name"])

		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		require.NoError(t, mw.WriteField("distro_series", "jammy"))
		require.NoError(t, mw.Close())
		req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, h.srv.URL+apiPrefix+"machines/"+sid+"/op-deploy", &body)
		require.NoError(t, err)
		req.Header.Set("Content-Type", mw.FormDataContentType())
		req.Header.Set("Authorization", authHeader(testKey))
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, "body: %s", b)
		assert.Contains(t, string(b), `"status_name":"Deploying"`)
		assert.NotEmpty(t, resp.Header.Get("X-MAAS-API-Hash"))
	})
	t.Run("machine JSON carries MAAS's fields", func(t *testing.T) {
		m := h.machine(t, sid)
		for _, k := range []string{
			"system_id", "hostname", "fqdn", "domain", "zone", "pool", "status", "status_name", "status_message",
			"status_action", "error_description", "owner", "locked", "power_type", "power_state", "architecture",
			"hwe_kernel", "osystem", "distro_series", "cpu_count", "memory", "storage", "ip_addresses",
			"interface_set", "boot_interface", "boot_disk", "blockdevice_set", "physicalblockdevice_set",
			"tag_names", "node_type_name", "default_gateways", "current_commissioning_result_id",
			"current_testing_result_id", "current_installation_result_id", "commissioning_status",
			"testing_status_name", "hardware_info", "numanode_set", "resource_uri", "netboot",
		} {
			assert.Contains(t, m, k)
		}
		assert.Equal(t, "gpu-1.maas", m["fqdn"])
		assert.Equal(t, "/MAAS/api/2.0/machines/"+sid+"/", m["resource_uri"])
	})
}

// TestNoSecretsLeak checks that the BMC password, the API secret and the
// enrollment token appear in no log line, event or answer other than MAAS's
// own power_parameters (which returns passwords by design, maas-behaviour §8).
func TestNoSecretsLeak(t *testing.T) {
	var logs bytes.Buffer
	h := newHarness(t, func(o *Options) { o.Logger = newTestLogger(&logs) })
	er := newEnrollRecorder(t, http.StatusUnauthorized)
	sid := h.ready(t, "gpu-1", 1, Faults{})
	h.deployed(t, sid, firstBootUserData(t, er.srv.URL, "node-1"))
	er.wait(t, "node-1")
	h.sim.enrollWG.Wait()

	var answers strings.Builder
	for _, path := range []string{"machines/", "machines/" + sid + "/", "nodes/" + sid + "/interfaces/"} {
		answers.Write(h.call(t, http.MethodGet, path, "", nil).body)
	}
	answers.Write(h.call(t, http.MethodGet, "events/", "query", url.Values{"level": {"DEBUG"}}).body)
	answers.Write(h.call(t, http.MethodGet, "nodes/"+sid+"/results/", "", url.Values{"include_output": {"1"}}).body)
	for _, secret := range []string{"bmc-password-1", "topsecretsignaturevalue", "token-node-1"} {
		assert.NotContains(t, logs.String(), secret)
		assert.NotContains(t, answers.String(), secret)
	}
	assert.Contains(t, logs.String(), "node enrollment failed", "the failure is logged")
	assert.True(t, hasEvent(h.events(t, sid), "Node agent enrollment failure", "token_rejected"), "events: %+v", h.events(t, sid))
}
