package maassim

import (
	"encoding/base64"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEnrollment(t *testing.T) {
	t.Run("the deployed node enrolls once with its token", func(t *testing.T) {
		h := newHarness(t)
		er := newEnrollRecorder(t, http.StatusOK)
		sid := h.ready(t, "gpu-1", 1, Faults{})
		h.deployed(t, sid, firstBootUserData(t, er.srv.URL+"/", "node-7"))
		require.Equal(t, "Deployed", h.statusName(t, sid))
		c := er.wait(t, "node-7")
		assert.Equal(t, "token-node-7", c.token)
		assert.Equal(t, "application/json", c.contentType)
		h.sim.enrollWG.Wait()
		assert.Equal(t, 1, er.count("node-7"))
		assert.True(t, hasEvent(h.events(t, sid), "Node agent enrolled", "node-7"))
		views := h.hardware(t)
		require.Len(t, views, 1)
		assert.Equal(t, 1, views[0].Enrollment.Succeeded)
		assert.Equal(t, []string{sid}, views[0].SystemIDs)
	})
	t.Run("a rejected token is recorded, not retried", func(t *testing.T) {
		h := newHarness(t)
		er := newEnrollRecorder(t, http.StatusUnauthorized)
		sid := h.ready(t, "gpu-1", 1, Faults{})
		h.deployed(t, sid, firstBootUserData(t, er.srv.URL, "node-8"))
		er.wait(t, "node-8")
		h.sim.enrollWG.Wait()
		assert.Equal(t, 1, er.count("node-8"))
		views := h.hardware(t)
		assert.Equal(t, 401, views[0].Enrollment.LastCode)
		assert.Contains(t, views[0].Enrollment.LastError, "token_rejected")
		assert.Equal(t, "Deployed", h.statusName(t, sid), "MAAS does not know the agent failed")
	})
	t.Run("never_enrolls keeps quiet", func(t *testing.T) {
		h := newHarness(t)
		er := newEnrollRecorder(t, http.StatusOK)
		sid := h.ready(t, "gpu-1", 1, Faults{NeverEnrolls: true})
		h.deployed(t, sid, firstBootUserData(t, er.srv.URL, "node-9"))
		require.Equal(t, "Deployed", h.statusName(t, sid))
		h.sim.enrollWG.Wait()
		assert.Zero(t, er.count("node-9"))
		assert.Zero(t, h.hardware(t)[0].Enrollment.Attempts)
	})
	t.Run("an unreadable payload is an event, and the token stays out of it", func(t *testing.T) {
		h := newHarness(t)
		sid := h.ready(t, "gpu-1", 1, Faults{})
		ud := base64.StdEncoding.EncodeToString([]byte("#cloud-config\nwrite_files:\n  - path: /etc/gpuaas/bootstrap-bundle.json\n    content: '{\"GPUAAS_ENROLLMENT_TOKEN\":\"tok-secret\"}'\n"))
		h.deployed(t, sid, ud)
		require.Equal(t, "Deployed", h.statusName(t, sid))
		evs := h.events(t, sid)
		assert.True(t, hasEvent(evs, "Node agent enrollment failure", "missing GPUAAS_NODE_ID, GPUAAS_API_URL"), "events: %+v", evs)
		for _, e := range evs {
			assert.NotContains(t, e.Description, "tok-secret")
		}
	})
}

func TestParseFirstBoot(t *testing.T) {
	bundle := base64.StdEncoding.EncodeToString([]byte(`{"GPUAAS_NODE_ID":"n1","GPUAAS_ENROLLMENT_TOKEN":"sekret","GPUAAS_API_URL":"https://api"}`))
	tests := []struct {
		name    string
		ud      string
		wantErr string
	}{
		{"b64 bundle", "#cloud-config\nwrite_files:\n  - path: /etc/gpuaas/bootstrap-bundle.json\n    encoding: b64\n    content: " + bundle + "\n", ""},
		{"plain bundle", "#cloud-config\nwrite_files:\n  - path: /etc/gpuaas/bootstrap-bundle.json\n    content: '{\"GPUAAS_NODE_ID\":\"n1\",\"GPUAAS_ENROLLMENT_TOKEN\":\"sekret\",\"GPUAAS_API_URL\":\"https://api\"}'\n", ""},
		{"not YAML", "#cloud-config\n\t: [sekret", "not cloud-config YAML"},
		{"no bundle file", "#cloud-config\nwrite_files: []\n", "writes no /etc/gpuaas/bootstrap-bundle.json"},
		{"bad base64", "#cloud-config\nwrite_files:\n  - path: /etc/gpuaas/bootstrap-bundle.json\n    encoding: b64\n    content: 'sekret!!'\n", "not valid base64"},
		{"gzip", "#cloud-config\nwrite_files:\n  - path: /etc/gpuaas/bootstrap-bundle.json\n    encoding: gz+b64\n    content: sekret\n", "unsupported encoding"},
		{"not JSON", "#cloud-config\nwrite_files:\n  - path: /etc/gpuaas/bootstrap-bundle.json\n    content: sekret\n", "not a JSON bootstrap bundle"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := parseFirstBoot([]byte(tc.ud))
			if tc.wantErr == "" {
				require.NoError(t, err)
				assert.Equal(t, bootstrapBundle{NodeID: "n1", Token: "sekret", APIURL: "https://api"}, b)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
			assert.NotContains(t, err.Error(), "sekret", "error text must not quote the payload")
		})
	}
}
