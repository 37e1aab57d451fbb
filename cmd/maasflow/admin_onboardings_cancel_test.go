package main

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const adminCancelledJSON = `{"id":"0b000000-0000-4000-8000-000000000001","site_id":"5e000000-0000-4000-8000-000000000001","profile_id":"9f000000-0000-4000-8000-000000000001","sku_id":"h100x8","hostname":"gpu-01","ipmi_ip":"10.0.0.5",` +
	`"node_id":"n1","status":"cancelled","stage":"pxe_preflight","attempt":1,"maas_system_id":"4y3h7n","correlation_id":"c1",` +
	`"error":{"code":"Cancelled","message":"host re-cabled","stage":"pxe_preflight"},` +
	`"created_by":"admin","created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:10:00Z","completed_at":"2026-01-01T00:10:00Z"}`

func TestAdminOnboardingsCancel(t *testing.T) {
	const path = "/api/v1/admin/onboardings/0b000000-0000-4000-8000-000000000001/cancel"
	tests := []struct {
		name     string
		args     []string
		reply    adminReply
		wantBody string // "" means no body
		wantCode int
		wantOut  []string
		wantErr  string
	}{
		{
			name:     "with a reason",
			args:     []string{"onboardings", "cancel", "0b000000-0000-4000-8000-000000000001", "--reason", "host re-cabled"},
			reply:    adminReply{http.StatusOK, adminCancelledJSON},
			wantBody: `{"reason":"host re-cabled"}`,
			wantOut: []string{
				"onboarding 0b000000-0000-4000-8000-000000000001 cancelled at stage pxe_preflight: host re-cabled\n",
				"host gpu-01 is free for a new onboarding; the MAAS machine 4y3h7n was left as it is\n",
			},
		},
		{
			name:    "unknown flag",
			args:    []string{"onboardings", "cancel", "--force", "0b000000-0000-4000-8000-000000000001"},
			reply:   adminReply{http.StatusOK, adminCancelledJSON},
			wantErr: "unknown flag: --force", wantCode: 2,
		},
		{
			name:    "without a reason sends no body",
			args:    []string{"onboardings", "cancel", "0b000000-0000-4000-8000-000000000001"},
			reply:   adminReply{http.StatusOK, adminCancelledJSON},
			wantOut: []string{"onboarding 0b000000-0000-4000-8000-000000000001 cancelled"},
		},
		{
			name:     "json output is verbatim",
			args:     []string{"onboardings", "cancel", "0b000000-0000-4000-8000-000000000001", "-o", "json"},
			reply:    adminReply{http.StatusOK, adminCancelledJSON},
			wantOut:  []string{adminCancelledJSON + "\n"},
			wantCode: 0,
		},
		{
			name:     "already closed",
			args:     []string{"onboardings", "cancel", "0b000000-0000-4000-8000-000000000001", "--reason", "x"},
			reply:    adminReply{http.StatusConflict, `{"error":{"code":"conflict","message":"onboarding 0b000000-0000-4000-8000-000000000001 is already completed; only pending, running or manual_intervention onboardings can be cancelled","correlation_id":"c-9"}}`},
			wantBody: `{"reason":"x"}`,
			wantCode: 1,
			wantErr:  "error: conflict: onboarding 0b000000-0000-4000-8000-000000000001 is already completed",
		},
		{
			name:     "workflow unavailable",
			args:     []string{"onboardings", "cancel", "0b000000-0000-4000-8000-000000000001"},
			reply:    adminReply{http.StatusServiceUnavailable, `{"error":{"code":"service_unavailable","message":"the workflow service is unavailable; onboarding 0b000000-0000-4000-8000-000000000001 was not changed, retry later","correlation_id":"c-10"}}`},
			wantCode: 1,
			wantErr:  "was not changed",
		},
		{
			name:     "id is required",
			args:     []string{"onboardings", "cancel"},
			wantCode: 2,
			wantErr:  "expected 1 argument(s) (ONBOARDING), got 0",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			api := newAdminFakeAPI(t)
			api.on("POST "+path, tc.reply)
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
			require.Len(t, reqs, 1)
			assert.Equal(t, http.MethodPost, reqs[0].Method)
			assert.Equal(t, path, reqs[0].Path)
			assert.Equal(t, "Bearer "+adminTestToken, reqs[0].Auth)
			if tc.wantBody == "" {
				assert.Empty(t, reqs[0].Body)
			} else {
				assert.JSONEq(t, tc.wantBody, reqs[0].Body)
			}
		})
	}
}

func TestAdminOnboardingsCancelByHostnameEscapesTheID(t *testing.T) {
	api := newAdminFakeAPI(t)
	api.on("GET /api/v1/admin/onboardings", adminReply{http.StatusOK, `{"items":[{"id":"a/b","site_id":"s"}],"next_cursor":""}`})
	api.on("POST /api/v1/admin/onboardings/a%2Fb/cancel", adminReply{http.StatusOK, adminCancelledJSON})
	res := api.run(t, adminInvocation{}, "onboardings", "cancel", "gpu-01")
	require.Equal(t, 0, res.code, res.stderr)
	reqs := api.requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, "hostname=gpu-01&limit=50", reqs[0].Query, "a host name is looked up")
	assert.Equal(t, "/api/v1/admin/onboardings/a%2Fb/cancel", reqs[1].Path)
}
