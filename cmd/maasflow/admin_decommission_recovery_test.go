package main

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	adminDecomID = "de000000-0000-4000-8000-000000000001"
	// adminRetriedJSON is a decommission retry's answer.
	adminRetriedJSON = `{"id":"` + adminDecomID + `","node_id":"n1","site_id":"s1","hostname":"gpu-01","mode":"full","status":"pending","stage":"release",` +
		`"attempt":1,"run":1,"maas_system_id":"4y3h7n","erase":{"mode":"secure","outcome":"pending","fallback":false,"maas_events":[],"script_results":[]},` +
		`"machine_deleted":false,"correlation_id":"c1","created_by":"admin","created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:10:00Z",` +
		`"allowed_operations":["cancel","mark-manual-intervention"]}`
	adminStoppedJSON = `{"id":"` + adminDecomID + `","node_id":"n1","site_id":"s1","hostname":"gpu-01","mode":"full","status":"manual_intervention","stage":"release",` +
		`"attempt":1,"maas_system_id":"4y3h7n","erase":{"mode":"secure","outcome":"failed","fallback":false,"maas_events":[],"script_results":[]},` +
		`"machine_deleted":false,"correlation_id":"c1","created_by":"admin","created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:10:00Z",` +
		`"allowed_operations":["retry","resume","rerun","adopt","cancel"],"timeline":[]}`
	adminDecomDoneJSON = `{"id":"` + adminDecomID + `","node_id":"n1","site_id":"s1","hostname":"gpu-01","mode":"full","status":"completed","stage":"finish",` +
		`"attempt":1,"run":1,"maas_system_id":"4y3h7n","erase":{"mode":"secure","outcome":"erased","fallback":false,"maas_events":[],"script_results":[]},` +
		`"machine_deleted":true,"correlation_id":"c1","created_by":"admin","created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:20:00Z",` +
		`"allowed_operations":[],"timeline":[]}`
)

func TestAdminDecommissionRecovery(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		path     string
		reply    adminReply
		get      *adminReply // the decommission, read after a 409
		wantBody string
		wantCode int
		wantOut  []string
		wantErr  string
	}{
		{
			name: "retry with a reason", path: "/retry",
			args:     []string{"decommissions", "retry", adminDecomID, "--reason", "cable replaced"},
			reply:    adminReply{http.StatusOK, adminRetriedJSON},
			wantBody: `{"reason":"cable replaced"}`,
			wantOut: []string{
				"retry: decommission " + adminDecomID + " (full) of node n1 attempt 1 run 1 is pending at stage release\n",
				"allowed operations now: cancel, mark-manual-intervention\n",
				"follow it with: maasflow decommission watch " + adminDecomID + "\n",
			},
		},
		{
			name: "freeze is mark-manual-intervention", path: "/mark-manual-intervention",
			args:    []string{"decommission", "freeze", adminDecomID},
			reply:   adminReply{http.StatusOK, adminRetriedJSON},
			wantOut: []string{"freeze: decommission " + adminDecomID},
		},
		{
			name: "json output is verbatim", path: "/cancel",
			args:    []string{"decommissions", "cancel", adminDecomID, "-o", "json"},
			reply:   adminReply{http.StatusOK, adminRetriedJSON},
			wantOut: []string{adminRetriedJSON + "\n"},
		},
		{
			name: "a refused operation names what is allowed", path: "/resume",
			args: []string{"decommissions", "resume", adminDecomID},
			reply: adminReply{http.StatusConflict, `{"error":{"code":"conflict","message":"decommission ` + adminDecomID +
				` cannot resume at release: MAAS shows Failed disk erasing; the release failed; retry sends it again","correlation_id":"c-9"}}`},
			get:      &adminReply{http.StatusOK, adminStoppedJSON},
			wantCode: 1,
			wantErr:  "retry sends it again",
		},
		{
			name: "cancel takes no --wait", path: "/cancel",
			args:     []string{"decommissions", "cancel", adminDecomID, "--wait"},
			wantCode: 2,
			wantErr:  "unknown flag: --wait",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			api := newAdminFakeAPI(t)
			path := "/api/v1/admin/decommissions/" + adminDecomID + tc.path
			api.on("POST "+path, tc.reply)
			if tc.get != nil {
				api.on("GET /api/v1/admin/decommissions/"+adminDecomID, *tc.get)
			}
			res := api.run(t, adminInvocation{}, tc.args...)

			require.Equal(t, tc.wantCode, res.code, "stdout: %s\nstderr: %s", res.stdout, res.stderr)
			for _, w := range tc.wantOut {
				assert.Contains(t, res.stdout, w)
			}
			if tc.wantErr != "" {
				assert.Contains(t, res.stderr, tc.wantErr)
			}
			reqs := api.requests()
			if tc.wantCode == 2 {
				assert.Empty(t, reqs, "a misuse sends nothing")
				return
			}
			if tc.get != nil {
				require.Len(t, reqs, 2, "the refusal, then what is allowed")
				assert.Contains(t, res.stderr, "decommission "+adminDecomID+" is manual_intervention at stage release (attempt 1, run 0); allowed operations: retry, resume, rerun, adopt, cancel")
			} else {
				require.Len(t, reqs, 1)
			}
			assert.Equal(t, http.MethodPost, reqs[0].Method)
			assert.Equal(t, path, reqs[0].Path)
			if tc.wantBody == "" {
				assert.Empty(t, reqs[0].Body)
			} else {
				assert.JSONEq(t, tc.wantBody, reqs[0].Body)
			}
		})
	}
}

func TestAdminDecommissionRetryWaitFollowsTheRun(t *testing.T) {
	api := newAdminFakeAPI(t)
	api.on("POST /api/v1/admin/decommissions/"+adminDecomID+"/retry", adminReply{http.StatusOK, adminRetriedJSON})
	api.on("GET /api/v1/admin/decommissions/"+adminDecomID, adminReply{http.StatusOK, adminDecomDoneJSON})
	res := api.run(t, adminInvocation{}, "decommissions", "retry", adminDecomID, "--wait", "--interval", "1ms")
	require.Equal(t, 0, res.code, "stdout: %s\nstderr: %s", res.stdout, res.stderr)
	assert.Contains(t, res.stdout, "retry: decommission "+adminDecomID)
	assert.NotContains(t, res.stdout, "follow it with")
	assert.Contains(t, res.stdout, "completed at stage finish, disks erased")
}
