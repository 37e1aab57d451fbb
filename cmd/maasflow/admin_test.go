package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	adminSiteJSON = `{"id":"5e000000-0000-4000-8000-000000000001","name":"lab","maas_url":"http://maas.lab:5240/MAAS","status":"active",` +
		`"policy":{"auto_claim_new":true},"credentials_set":true,` +
		`"probe":{"healthy":true,"version":"3.5.0","is_admin":true,"checked_at":"2026-01-01T00:00:00Z"},` +
		`"created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z",` +
		`"effective_policy":{"auto_claim_new":true,"deploy_retries":1,"storage_layout":"flat"}}`
	adminProfileJSON = `{"id":"9f000000-0000-4000-8000-000000000001","site_id":"5e000000-0000-4000-8000-000000000001","name":"gpu","architecture":"amd64/generic","distro_series":"jammy",` +
		`"status":"active","policy":{},"created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z",` +
		`"effective_policy":{"auto_claim_new":true}}`
	adminSKUJSON        = `{"id":"h100x8","gpu_model":"H100","gpus_total":8,"active":true,"created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z"}`
	adminOnboardingJSON = `{"id":"0b000000-0000-4000-8000-000000000001","site_id":"5e000000-0000-4000-8000-000000000001","profile_id":"9f000000-0000-4000-8000-000000000001","sku_id":"h100x8","hostname":"gpu-01","ipmi_ip":"10.0.0.5",` +
		`"node_id":"n1","status":"pending","stage":"validate","attempt":1,"maas_system_id":"","correlation_id":"c1",` +
		`"created_by":"admin","created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z"}`
)

func TestAdminCommandsSendRequests(t *testing.T) {
	const (
		sites = "/api/v1/admin/maas-sites"
		obs   = "/api/v1/admin/onboardings"
	)
	cases := []struct {
		name      string
		args      []string
		reply     adminReply
		method    string
		path      string
		query     string
		body      string // JSON; "" means no body
		wantOut   []string
		wantCode  int
		skipRoute bool
	}{
		{
			name:   "sites create",
			args:   []string{"sites", "create", "--name", "lab", "--maas-url", "http://maas.lab:5240/MAAS", "--policy-json", `{"auto_claim_new":true}`},
			reply:  adminReply{http.StatusCreated, adminSiteJSON},
			method: http.MethodPost, path: sites,
			body:    `{"name":"lab","maas_url":"http://maas.lab:5240/MAAS","policy":{"auto_claim_new":true}}`,
			wantOut: []string{"ID:", "5e000000-0000-4000-8000-000000000001", "healthy (MAAS 3.5.0", "Effective policy:", "storage_layout", "flat"},
		},
		{
			name:   "sites list",
			args:   []string{"sites", "list"},
			reply:  adminReply{http.StatusOK, `{"items":[` + adminSiteJSON + `]}`},
			method: http.MethodGet, path: sites,
			wantOut: []string{"NAME", "lab", "healthy", "http://maas.lab:5240/MAAS"},
		},
		{
			name:   "sites get",
			args:   []string{"sites", "get", "5e000000-0000-4000-8000-000000000001"},
			reply:  adminReply{http.StatusOK, adminSiteJSON},
			method: http.MethodGet, path: sites + "/5e000000-0000-4000-8000-000000000001",
			wantOut: []string{"Credentials:", "set", "auto_claim_new"},
		},
		{
			name:   "sites patch",
			args:   []string{"sites", "patch", "5e000000-0000-4000-8000-000000000001", "--policy-json", `{"deploy_retries":2}`, "--description", "lab A"},
			reply:  adminReply{http.StatusOK, adminSiteJSON},
			method: http.MethodPatch, path: sites + "/5e000000-0000-4000-8000-000000000001",
			body: `{"policy":{"deploy_retries":2},"description":"lab A"}`,
		},
		{
			name:   "sites disable",
			args:   []string{"sites", "disable", "5e000000-0000-4000-8000-000000000001", "--yes"},
			reply:  adminReply{http.StatusOK, adminSiteJSON},
			method: http.MethodDelete, path: sites + "/5e000000-0000-4000-8000-000000000001",
		},
		{
			name:   "sites probe healthy",
			args:   []string{"sites", "probe", "5e000000-0000-4000-8000-000000000001"},
			reply:  adminReply{http.StatusOK, `{"site_id":"5e000000-0000-4000-8000-000000000001","healthy":true,"version":"3.5.0","capabilities":["networks-management"],"user":"maasflow","is_admin":true,"checked_at":"2026-01-01T00:00:00Z"}`},
			method: http.MethodPost, path: sites + "/5e000000-0000-4000-8000-000000000001/probe",
			wantOut: []string{"3.5.0", "networks-management", "maasflow (admin)"},
		},
		{
			name:   "sites probe unhealthy exits 1",
			args:   []string{"sites", "probe", "5e000000-0000-4000-8000-000000000001"},
			reply:  adminReply{http.StatusOK, `{"site_id":"5e000000-0000-4000-8000-000000000001","healthy":false,"error":"connection refused","is_admin":false,"checked_at":"2026-01-01T00:00:00Z"}`},
			method: http.MethodPost, path: sites + "/5e000000-0000-4000-8000-000000000001/probe",
			wantOut: []string{"connection refused"}, wantCode: 1,
		},
		{
			name:   "profiles create",
			args:   []string{"profiles", "create", "5e000000-0000-4000-8000-000000000001", "--name", "gpu", "--architecture", "amd64/generic", "--distro-series", "jammy", "--policy-json", `{"roce_phase2":true}`},
			reply:  adminReply{http.StatusCreated, adminProfileJSON},
			method: http.MethodPost, path: sites + "/5e000000-0000-4000-8000-000000000001/profiles",
			body:    `{"name":"gpu","architecture":"amd64/generic","distro_series":"jammy","policy":{"roce_phase2":true}}`,
			wantOut: []string{"9f000000-0000-4000-8000-000000000001", "amd64/generic", "none (everything inherited)"},
		},
		{
			name:   "profiles create with flags before the site",
			args:   []string{"profiles", "create", "--name", "gpu", "--architecture", "amd64/generic", "5e000000-0000-4000-8000-000000000001", "--distro-series", "jammy"},
			reply:  adminReply{http.StatusCreated, adminProfileJSON},
			method: http.MethodPost, path: sites + "/5e000000-0000-4000-8000-000000000001/profiles",
			body: `{"name":"gpu","architecture":"amd64/generic","distro_series":"jammy"}`,
		},
		{
			name:   "profiles list",
			args:   []string{"profiles", "list", "5e000000-0000-4000-8000-000000000001"},
			reply:  adminReply{http.StatusOK, `{"items":[` + adminProfileJSON + `]}`},
			method: http.MethodGet, path: sites + "/5e000000-0000-4000-8000-000000000001/profiles",
			wantOut: []string{"DISTRO_SERIES", "jammy"},
		},
		{
			name:   "profiles get",
			args:   []string{"profiles", "get", "5e000000-0000-4000-8000-000000000001", "9f000000-0000-4000-8000-000000000001"},
			reply:  adminReply{http.StatusOK, adminProfileJSON},
			method: http.MethodGet, path: sites + "/5e000000-0000-4000-8000-000000000001/profiles/9f000000-0000-4000-8000-000000000001",
		},
		{
			name:   "profiles patch",
			args:   []string{"profiles", "patch", "5e000000-0000-4000-8000-000000000001", "9f000000-0000-4000-8000-000000000001", "--status", "active", "--hwe-kernel", "hwe-22.04"},
			reply:  adminReply{http.StatusOK, adminProfileJSON},
			method: http.MethodPatch, path: sites + "/5e000000-0000-4000-8000-000000000001/profiles/9f000000-0000-4000-8000-000000000001",
			body: `{"status":"active","hwe_kernel":"hwe-22.04"}`,
		},
		{
			name:   "profiles disable",
			args:   []string{"profiles", "disable", "5e000000-0000-4000-8000-000000000001", "9f000000-0000-4000-8000-000000000001"},
			reply:  adminReply{http.StatusOK, adminProfileJSON},
			method: http.MethodDelete, path: sites + "/5e000000-0000-4000-8000-000000000001/profiles/9f000000-0000-4000-8000-000000000001",
		},
		{
			name:   "roce list",
			args:   []string{"roce", "list", "5e000000-0000-4000-8000-000000000001", "--hostname", "c07u31"},
			reply:  adminReply{http.StatusOK, `{"items":[{"id":"a1","site_id":"5e000000-0000-4000-8000-000000000001","hostname":"c07u31","interface":"enp28s0np0","ipv4_cidr":"172.30.9.61/31","updated_at":"2026-01-01T00:00:00Z"}]}`},
			method: http.MethodGet, path: sites + "/5e000000-0000-4000-8000-000000000001/roce-assignments", query: "hostname=c07u31",
			wantOut: []string{"enp28s0np0", "172.30.9.61/31"},
		},
		{
			name:   "roce delete",
			args:   []string{"roce", "delete", "5e000000-0000-4000-8000-000000000001", "a1"},
			reply:  adminReply{http.StatusNoContent, ""},
			method: http.MethodDelete, path: sites + "/5e000000-0000-4000-8000-000000000001/roce-assignments/a1",
			wantOut: []string{"deleted RoCE assignment a1"},
		},
		{
			name:   "skus create",
			args:   []string{"skus", "create", "--id", "h100x8", "--gpu-model", "H100", "--gpus-total", "8"},
			reply:  adminReply{http.StatusCreated, adminSKUJSON},
			method: http.MethodPost, path: "/api/v1/admin/skus",
			body:    `{"id":"h100x8","gpu_model":"H100","gpus_total":8}`,
			wantOut: []string{"GPU model:", "H100"},
		},
		{
			name:   "skus list",
			args:   []string{"skus", "list"},
			reply:  adminReply{http.StatusOK, `{"items":[` + adminSKUJSON + `]}`},
			method: http.MethodGet, path: "/api/v1/admin/skus",
			wantOut: []string{"GPU_MODEL", "h100x8"},
		},
		{
			name:   "skus get",
			args:   []string{"skus", "get", "h100x8"},
			reply:  adminReply{http.StatusOK, adminSKUJSON},
			method: http.MethodGet, path: "/api/v1/admin/skus/h100x8",
		},
		{
			name:   "skus patch deactivates",
			args:   []string{"skus", "patch", "h100x8", "--active=false"},
			reply:  adminReply{http.StatusOK, adminSKUJSON},
			method: http.MethodPatch, path: "/api/v1/admin/skus/h100x8",
			body: `{"active":false}`,
		},
		{
			name:   "onboard sends exactly the five request fields",
			args:   []string{"onboard", "--site", "5e000000-0000-4000-8000-000000000001", "--profile", "9f000000-0000-4000-8000-000000000001", "--sku", "h100x8", "--hostname", "gpu-01", "--ipmi-ip", "10.0.0.5"},
			reply:  adminReply{http.StatusAccepted, adminOnboardingJSON},
			method: http.MethodPost, path: obs,
			body:    `{"site_id":"5e000000-0000-4000-8000-000000000001","profile_id":"9f000000-0000-4000-8000-000000000001","sku_id":"h100x8","hostname":"gpu-01","ipmi_ip":"10.0.0.5"}`,
			wantOut: []string{"onboarding 0b000000-0000-4000-8000-000000000001 accepted (status pending)", "maasflow onboardings watch 0b000000-0000-4000-8000-000000000001"},
		},
		{
			name:   "onboardings list filters",
			args:   []string{"onboardings", "list", "--status", "running", "--site", "5e000000-0000-4000-8000-000000000001", "--hostname", "gpu-01", "--limit", "10"},
			reply:  adminReply{http.StatusOK, `{"items":[` + adminOnboardingJSON + `],"next_cursor":""}`},
			method: http.MethodGet, path: obs, query: "hostname=gpu-01&limit=10&site_id=5e000000-0000-4000-8000-000000000001&status=running",
			wantOut: []string{"MAAS_SYSTEM_ID", "0b000000-0000-4000-8000-000000000001", "gpu-01"},
		},
		{
			name:   "onboardings get",
			args:   []string{"onboardings", "get", "0b000000-0000-4000-8000-000000000001"},
			reply:  adminReply{http.StatusOK, adminOnboardingJSON},
			method: http.MethodGet, path: obs + "/0b000000-0000-4000-8000-000000000001",
			wantOut: []string{"Status:", "pending", "Timeline:", "(empty)"},
		},
		{
			name:   "audit",
			args:   []string{"audit", "--limit", "5"},
			reply:  adminReply{http.StatusOK, `{"items":[{"id":"e1","time":"2026-01-01T00:00:00Z","actor":"admin","action":"site.create","target":"site:5e000000-0000-4000-8000-000000000001","result":"success","correlation_id":"c9"}]}`},
			method: http.MethodGet, path: "/api/v1/admin/audit", query: "limit=5",
			wantOut: []string{"ACTION", "site.create", "site:5e000000-0000-4000-8000-000000000001", "c9"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			api := newAdminFakeAPI(t)
			api.on(tc.method+" "+tc.path, tc.reply)
			res := api.run(t, adminInvocation{}, tc.args...)

			assert.Equal(t, tc.wantCode, res.code, "stderr: %s", res.stderr)
			reqs := api.requests()
			require.Len(t, reqs, 1)
			got := reqs[0]
			assert.Equal(t, tc.method, got.Method)
			assert.Equal(t, tc.path, got.Path)
			assert.Equal(t, tc.query, got.Query)
			assert.Equal(t, "Bearer "+adminTestToken, got.Auth)
			if tc.body == "" {
				assert.Empty(t, got.Body)
			} else {
				assert.JSONEq(t, tc.body, got.Body)
			}
			for _, w := range tc.wantOut {
				assert.Contains(t, res.stdout, w)
			}
			assert.NotContains(t, res.stdout+res.stderr, adminTestToken)
		})
	}
}

func TestAdminJSONOutputIsVerbatim(t *testing.T) {
	api := newAdminFakeAPI(t)
	api.on("GET /api/v1/admin/maas-sites/5e000000-0000-4000-8000-000000000001", adminReply{http.StatusOK, adminSiteJSON})
	res := api.run(t, adminInvocation{}, "sites", "get", "5e000000-0000-4000-8000-000000000001", "-o", "json")
	require.Equal(t, 0, res.code, res.stderr)
	assert.Equal(t, adminSiteJSON+"\n", res.stdout)

	res = api.run(t, adminInvocation{}, "sites", "get", "--output=json", "5e000000-0000-4000-8000-000000000001")
	require.Equal(t, 0, res.code, res.stderr)
	assert.Equal(t, adminSiteJSON+"\n", res.stdout)
}

func TestAdminCredentialsNeverEchoed(t *testing.T) {
	const (
		key      = "ck4Xq9:tk8Wz2:ts5Rv7Lm3Np"
		user     = "bmc-admin"
		password = "Pw-9s8d7f6g5h"
	)
	want := fmt.Sprintf(`{"maas_api_key":%q,"bmc_username":%q,"bmc_password":%q}`, key, user, password)
	secretParts := []string{key, password, "ck4Xq9", "tk8Wz2", "ts5Rv7Lm3Np"}
	cases := []struct {
		name     string
		inv      adminInvocation
		args     []string
		reply    adminReply
		wantCode int
		wantSent bool
		wantErr  string
	}{
		{
			name:     "stdin JSON",
			inv:      adminInvocation{stdin: want},
			reply:    adminReply{http.StatusOK, adminSiteJSON},
			wantSent: true,
		},
		{
			name: "environment",
			inv: adminInvocation{env: map[string]string{
				envMAASAPIKey: key, envBMCUsername: user, envBMCPassword: password,
			}},
			reply:    adminReply{http.StatusOK, adminSiteJSON},
			wantSent: true,
		},
		{
			name:     "API rejects the credentials",
			inv:      adminInvocation{stdin: want},
			reply:    adminReply{http.StatusBadRequest, `{"error":{"code":"invalid_request","field":"maas_api_key","message":"maas_api_key: must be a MAAS API key of the form consumer_key:token_key:token_secret","correlation_id":"c-7"}}`},
			wantSent: true, wantCode: 1,
			wantErr: "error: invalid_request: maas_api_key: must be a MAAS API key",
		},
		{
			name:     "environment incomplete",
			inv:      adminInvocation{env: map[string]string{envMAASAPIKey: key, envBMCPassword: password}},
			wantCode: 2, wantErr: "$BMC_USERNAME is not set",
		},
		{
			name:     "invalid JSON holding the secrets",
			inv:      adminInvocation{stdin: fmt.Sprintf(`{"maas_api_key":%q,"bmc_password":%s}`, key, password)},
			wantCode: 2, wantErr: "credentials on stdin: not one JSON object",
		},
		{
			name:     "unknown field",
			inv:      adminInvocation{stdin: fmt.Sprintf(`{"maas_api_key":%q,"bmc_username":%q,"bmc_pass":%q}`, key, user, password)},
			wantCode: 2, wantErr: "credentials on stdin",
		},
		{
			name:     "missing field",
			inv:      adminInvocation{stdin: fmt.Sprintf(`{"maas_api_key":%q,"bmc_username":%q}`, key, user)},
			wantCode: 2, wantErr: "bmc_password is missing",
		},
		{
			name:     "stdin is a terminal",
			inv:      adminInvocation{stdinTTY: true},
			wantCode: 2, wantErr: "stdin is a terminal",
		},
		{
			name:     "secrets are not flags",
			args:     []string{"--bmc-password", password},
			inv:      adminInvocation{stdin: want},
			wantCode: 2, wantErr: "unknown flag: --bmc-password",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			api := newAdminFakeAPI(t)
			api.on("POST /api/v1/admin/maas-sites/5e000000-0000-4000-8000-000000000001/credentials", tc.reply)
			args := append([]string{"sites", "credentials", "5e000000-0000-4000-8000-000000000001"}, tc.args...)
			res := api.run(t, tc.inv, args...)

			assert.Equal(t, tc.wantCode, res.code, "stderr: %s", res.stderr)
			for _, s := range secretParts {
				assert.NotContains(t, res.stdout, s)
				assert.NotContains(t, res.stderr, s)
			}
			reqs := api.requests()
			if !tc.wantSent {
				assert.Empty(t, reqs)
			} else {
				require.Len(t, reqs, 1)
				assert.JSONEq(t, want, reqs[0].Body)
			}
			if tc.wantErr != "" {
				assert.Contains(t, res.stderr, tc.wantErr)
			} else {
				assert.Contains(t, res.stdout, "credentials stored for site 5e000000-0000-4000-8000-000000000001")
			}
		})
	}
}

func TestAdminRoCECSVConversion(t *testing.T) {
	const twoRows = `[{"hostname":"c07u31","interface":"enp28s0np0","ipv4_cidr":"172.30.9.61/31"},` +
		`{"hostname":"c07u31","interface":"enp29s0np0","ipv4_cidr":"172.29.1.219/31"}]`
	cases := []struct {
		name     string
		input    string
		csv      bool
		want     string // items sent
		wantCode int
		wantErr  string
	}{
		{
			name:  "header",
			input: "hostname,interface,ipv4_cidr\nc07u31,enp28s0np0,172.30.9.61/31\nc07u31,enp29s0np0,172.29.1.219/31\n",
			csv:   true, want: twoRows,
		},
		{
			name:  "header in another order, spaces, comments and blank lines",
			input: "# rack 7\nipv4_cidr, Hostname, interface\n\n172.30.9.61/31, c07u31, enp28s0np0\r\n172.29.1.219/31,c07u31 ,enp29s0np0\n",
			csv:   true, want: twoRows,
		},
		{
			name:  "no header",
			input: "c07u31,enp28s0np0,172.30.9.61/31\nc07u31,enp29s0np0,172.29.1.219/31",
			csv:   true, want: twoRows,
		},
		{
			name:  "JSON items",
			input: `{"items":` + twoRows + `}`,
			want:  twoRows,
		},
		{
			name:     "CSV row with a missing field",
			input:    "hostname,interface,ipv4_cidr\nc07u31,enp28s0np0,172.30.9.61/31\nc07u31,enp29s0np0\n",
			csv:      true,
			wantCode: 2, wantErr: "CSV line 3: 2 fields, want 3",
		},
		{
			name:     "CSV row with an empty field",
			input:    "c07u31,,172.30.9.61/31\n",
			csv:      true,
			wantCode: 2, wantErr: "CSV line 1: interface is empty",
		},
		{
			name:     "empty CSV",
			input:    "hostname,interface,ipv4_cidr\n",
			csv:      true,
			wantCode: 2, wantErr: "no assignments",
		},
		{
			name:     "JSON with another top-level field",
			input:    `{"rows":` + twoRows + `}`,
			wantCode: 2, wantErr: "JSON input",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			api := newAdminFakeAPI(t)
			api.on("POST /api/v1/admin/maas-sites/5e000000-0000-4000-8000-000000000001/roce-assignments", adminReply{http.StatusOK, `{"items":[{"id":"a1","site_id":"5e000000-0000-4000-8000-000000000001","hostname":"c07u31","interface":"enp28s0np0","ipv4_cidr":"172.30.9.61/31","updated_at":"2026-01-01T00:00:00Z"}]}`})
			args := []string{"roce", "upsert", "5e000000-0000-4000-8000-000000000001", "--file", "-"}
			if tc.csv {
				args = append(args, "--csv")
			}
			res := api.run(t, adminInvocation{stdin: tc.input}, args...)

			assert.Equal(t, tc.wantCode, res.code, "stderr: %s", res.stderr)
			reqs := api.requests()
			if tc.wantErr != "" {
				assert.Contains(t, res.stderr, tc.wantErr)
				assert.Contains(t, res.stderr, "Usage:")
				assert.Empty(t, reqs)
				return
			}
			require.Len(t, reqs, 1)
			assert.JSONEq(t, `{"items":`+tc.want+`}`, reqs[0].Body)
			assert.Contains(t, res.stdout, "upserted 1 assignment(s) for site 5e000000-0000-4000-8000-000000000001 in 1 request(s)")
		})
	}
}

func TestAdminRoCEFromFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rows.csv")
	require.NoError(t, os.WriteFile(path, []byte("gpu-01,enp1s0,10.1.0.0/31\n"), 0o600))
	api := newAdminFakeAPI(t)
	api.on("POST /api/v1/admin/maas-sites/5e000000-0000-4000-8000-000000000001/roce-assignments", adminReply{http.StatusOK, `{"items":[]}`})

	res := api.run(t, adminInvocation{}, "roce", "upsert", "5e000000-0000-4000-8000-000000000001", "--csv", "--file", path)
	require.Equal(t, 0, res.code, res.stderr)
	reqs := api.requests()
	require.Len(t, reqs, 1)
	assert.JSONEq(t, `{"items":[{"hostname":"gpu-01","interface":"enp1s0","ipv4_cidr":"10.1.0.0/31"}]}`, reqs[0].Body)

	res = api.run(t, adminInvocation{}, "roce", "upsert", "5e000000-0000-4000-8000-000000000001", "--file", filepath.Join(t.TempDir(), "missing.json"))
	assert.Equal(t, 2, res.code)
	assert.Contains(t, res.stderr, "--file:")
}

func TestAdminRoCEBatchesLargeInputs(t *testing.T) {
	var csv strings.Builder
	csv.WriteString("hostname,interface,ipv4_cidr\n")
	for i := range 250 {
		fmt.Fprintf(&csv, "gpu-%03d,enp1s0,10.1.%d.%d/31\n", i, i/128, (i%128)*2)
	}

	t.Run("all batches stored", func(t *testing.T) {
		api := newAdminFakeAPI(t)
		api.on("POST /api/v1/admin/maas-sites/5e000000-0000-4000-8000-000000000001/roce-assignments",
			adminReply{http.StatusOK, `{"items":[{"id":"a1"}]}`},
			adminReply{http.StatusOK, `{"items":[{"id":"a2"}]}`},
			adminReply{http.StatusOK, `{"items":[{"id":"a3"}]}`})
		res := api.run(t, adminInvocation{stdin: csv.String()}, "roce", "upsert", "5e000000-0000-4000-8000-000000000001", "--csv", "--file", "-", "-o", "json")
		require.Equal(t, 0, res.code, res.stderr)

		reqs := api.requests()
		require.Len(t, reqs, 3)
		for i, want := range []int{97, 97, 56} {
			var body struct {
				Items []map[string]string `json:"items"`
			}
			require.NoError(t, json.Unmarshal([]byte(reqs[i].Body), &body))
			assert.Len(t, body.Items, want, "request %d", i)
		}
		var body struct {
			Items []map[string]string `json:"items"`
		}
		require.NoError(t, json.Unmarshal([]byte(reqs[2].Body), &body))
		assert.Equal(t, "gpu-194", body.Items[0]["hostname"])
		assert.JSONEq(t, `{"items":[{"id":"a1"},{"id":"a2"},{"id":"a3"}]}`, res.stdout)
	})

	t.Run("an error in a later batch names the CSV line", func(t *testing.T) {
		api := newAdminFakeAPI(t)
		api.on("POST /api/v1/admin/maas-sites/5e000000-0000-4000-8000-000000000001/roce-assignments",
			adminReply{http.StatusOK, `{"items":[]}`},
			adminReply{http.StatusBadRequest, `{"error":{"code":"invalid_request","field":"items[3].ipv4_cidr","message":"items[3].ipv4_cidr: must be an IPv4 CIDR","correlation_id":"c-2"}}`})
		res := api.run(t, adminInvocation{stdin: csv.String()}, "roce", "upsert", "5e000000-0000-4000-8000-000000000001", "--csv", "--file", "-")

		assert.Equal(t, 1, res.code)
		assert.Len(t, api.requests(), 2)
		assert.Contains(t, res.stderr, "error: invalid_request: items[3].ipv4_cidr: must be an IPv4 CIDR (correlation_id c-2)")
		// items[3] of the second batch is row 100, after the header: line 102.
		assert.Contains(t, res.stderr, "hint: items[3] of that request is CSV line 102 of -")
		assert.Contains(t, res.stderr, "the first 97 of 250 assignment(s) were stored")
	})
}

func TestAdminOnboardingsListAll(t *testing.T) {
	ob := func(id string) string {
		return strings.Replace(adminOnboardingJSON, `"id":"0b000000-0000-4000-8000-000000000001"`, `"id":"`+id+`"`, 1)
	}
	pages := []adminReply{
		{http.StatusOK, `{"items":[` + ob("0b000000-0000-4000-8000-000000000001") + `,` + ob("0b000000-0000-4000-8000-000000000002") + `],"next_cursor":"c2"}`},
		{http.StatusOK, `{"items":[` + ob("0b000000-0000-4000-8000-000000000003") + `,` + ob("0b000000-0000-4000-8000-000000000004") + `],"next_cursor":"c3"}`},
		{http.StatusOK, `{"items":[` + ob("0b000000-0000-4000-8000-000000000005") + `],"next_cursor":""}`},
	}

	t.Run("table", func(t *testing.T) {
		api := newAdminFakeAPI(t)
		api.on("GET /api/v1/admin/onboardings", pages...)
		res := api.run(t, adminInvocation{}, "onboardings", "list", "--all", "--status", "running", "--limit", "2")
		require.Equal(t, 0, res.code, res.stderr)

		reqs := api.requests()
		require.Len(t, reqs, 3)
		assert.Equal(t, "limit=2&status=running", reqs[0].Query)
		assert.Equal(t, "cursor=c2&limit=2&status=running", reqs[1].Query)
		assert.Equal(t, "cursor=c3&limit=2&status=running", reqs[2].Query)
		for _, id := range []string{"0b000000-0000-4000-8000-000000000001", "0b000000-0000-4000-8000-000000000002", "0b000000-0000-4000-8000-000000000003", "0b000000-0000-4000-8000-000000000004", "0b000000-0000-4000-8000-000000000005"} {
			assert.Contains(t, res.stdout, id)
		}
		assert.Empty(t, res.stderr)
	})

	t.Run("json merges the pages", func(t *testing.T) {
		api := newAdminFakeAPI(t)
		api.on("GET /api/v1/admin/onboardings", pages...)
		res := api.run(t, adminInvocation{}, "onboardings", "list", "--all", "-o", "json")
		require.Equal(t, 0, res.code, res.stderr)
		var out struct {
			Items      []map[string]any `json:"items"`
			NextCursor string           `json:"next_cursor"`
		}
		require.NoError(t, json.Unmarshal([]byte(res.stdout), &out))
		require.Len(t, out.Items, 5)
		assert.Equal(t, "0b000000-0000-4000-8000-000000000005", out.Items[4]["id"])
		assert.Empty(t, out.NextCursor)
	})

	t.Run("without --all one page and a hint", func(t *testing.T) {
		api := newAdminFakeAPI(t)
		api.on("GET /api/v1/admin/onboardings", pages...)
		res := api.run(t, adminInvocation{}, "onboardings", "list")
		require.Equal(t, 0, res.code, res.stderr)
		assert.Len(t, api.requests(), 1)
		assert.Contains(t, res.stdout, "0b000000-0000-4000-8000-000000000002")
		assert.NotContains(t, res.stdout, "0b000000-0000-4000-8000-000000000003")
		assert.Contains(t, res.stderr, "--cursor c2")
	})

	t.Run("a repeated cursor stops", func(t *testing.T) {
		api := newAdminFakeAPI(t)
		api.on("GET /api/v1/admin/onboardings", adminReply{http.StatusOK, `{"items":[],"next_cursor":"same"}`})
		res := api.run(t, adminInvocation{}, "onboardings", "list", "--all")
		assert.Equal(t, 1, res.code)
		assert.Len(t, api.requests(), 2)
		assert.Contains(t, res.stderr, `cursor "same" twice`)
	})
}

// adminState renders one onboarding snapshot.
func adminState(status, stage string, attempt int, errJSON string) adminReply {
	return adminStateWith(status, stage, attempt, errJSON)
}

// adminStateWith renders one onboarding snapshot with timeline rows.
func adminStateWith(status, stage string, attempt int, errJSON string, timeline ...string) adminReply {
	body := fmt.Sprintf(`{"id":"0b000000-0000-4000-8000-000000000001","site_id":"5e000000-0000-4000-8000-000000000001","hostname":"gpu-01","node_id":"n1","status":%q,"stage":%q,"attempt":%d,"maas_system_id":"abc123","updated_at":"2026-01-01T00:00:%02dZ"%s,"timeline":[%s]}`,
		status, stage, attempt, attempt, errJSON, strings.Join(timeline, ","))
	return adminReply{http.StatusOK, body}
}

// Timeline rows of a watched onboarding, in the API's form.
const (
	tlEnterValidate   = `{"time":"2026-01-01T00:00:01Z","attempt":1,"kind":"stage_entered","stage":"validate","detail":"from start; status running"}`
	tlExitValidate    = `{"time":"2026-01-01T00:00:02Z","attempt":1,"kind":"stage_exited","stage":"validate","outcome":"ok","detail":"guardrails passed"}`
	tlEnterCommission = `{"time":"2026-01-01T00:00:03Z","attempt":1,"kind":"stage_entered","stage":"commission","detail":"from validate"}`
	tlExitCommission  = `{"time":"2026-01-01T00:00:04Z","attempt":1,"kind":"stage_exited","stage":"commission","outcome":"ok","detail":"commissioning started"}`
	tlEnterWaitReady  = `{"time":"2026-01-01T00:00:05Z","attempt":1,"kind":"stage_entered","stage":"wait_ready","detail":"from commission"}`
	// Copied after the fact: its time is before rows already shown.
	tlMAASCommissioning = `{"time":"2026-01-01T00:00:04Z","attempt":1,"kind":"maas_event","stage":"wait_ready","detail":"INFO: Commissioning","source":"maas","maas_event_id":7}`
	tlClassification    = `{"time":"2026-01-01T00:00:09Z","attempt":1,"kind":"note","stage":"wait_deployed","source":"classification","detail":"class datasource, retry"}`
)

func TestAdminWatchExitCodes(t *testing.T) {
	running := []adminReply{
		adminStateWith("pending", "validate", 1, ""),
		adminStateWith("running", "commission", 1, "", tlEnterValidate, tlExitValidate, tlEnterCommission),
		adminStateWith("running", "commission", 1, "", tlEnterValidate, tlExitValidate, tlEnterCommission),
		adminStateWith("running", "wait_ready", 1, "", tlEnterValidate, tlExitValidate, tlEnterCommission, tlExitCommission, tlEnterWaitReady),
	}
	all := []string{tlEnterValidate, tlExitValidate, tlEnterCommission, tlMAASCommissioning, tlExitCommission, tlEnterWaitReady, tlClassification}
	failure := `,"error":{"code":"DeployDatasourceError","message":"datasource not found","stage":"wait_deployed"}`
	cases := []struct {
		name     string
		final    adminReply
		wantCode int
		wantOut  string
	}{
		{"completed", adminStateWith("completed", "done", 1, "", all...), 0, "onboarding 0b000000-0000-4000-8000-000000000001 completed: node n1, MAAS system abc123"},
		{"manual intervention", adminStateWith("manual_intervention", "wait_deployed", 2, failure, all...), 3,
			"onboarding 0b000000-0000-4000-8000-000000000001 needs manual intervention at stage wait_deployed: DeployDatasourceError: datasource not found"},
		{"failed", adminStateWith("failed", "deploy", 1, failure, all...), 4, "onboarding 0b000000-0000-4000-8000-000000000001 failed at stage deploy"},
		{"cancelled", adminStateWith("cancelled", "deploy", 1, "", all...), 4, "onboarding 0b000000-0000-4000-8000-000000000001 cancelled at stage deploy"},
	}
	for _, tc := range cases {
		for _, cmd := range [][]string{
			{"onboardings", "watch", "0b000000-0000-4000-8000-000000000001", "--interval", "10s"},
			{"onboard", "--site", "5e000000-0000-4000-8000-000000000001", "--profile", "9f000000-0000-4000-8000-000000000001", "--sku", "h100x8", "--hostname", "gpu-01", "--ipmi-ip", "10.0.0.5", "--wait", "--interval", "10s"},
		} {
			t.Run(tc.name+"/"+cmd[0], func(t *testing.T) {
				api := newAdminFakeAPI(t)
				api.on("POST /api/v1/admin/onboardings", adminReply{http.StatusAccepted, adminOnboardingJSON})
				api.on("GET /api/v1/admin/onboardings/0b000000-0000-4000-8000-000000000001", append(append([]adminReply{}, running...), tc.final)...)
				clk := clockwork.NewFakeClockAt(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
				start := clk.Now()
				res := api.run(t, adminInvocation{clock: clk, advance: 10 * time.Second}, cmd...)

				assert.Equal(t, tc.wantCode, res.code, "stderr: %s", res.stderr)
				assert.Contains(t, res.stdout, tc.wantOut)
				gets := 0
				for _, rq := range api.requests() {
					if rq.Method == http.MethodGet {
						gets++
					}
				}
				assert.Equal(t, len(running)+1, gets, "polls until the terminal status, then stops")
				// Four waits between five polls, on the fake clock only.
				assert.Equal(t, 40*time.Second, clk.Since(start))
				// Every stage entered and left prints once, with its time,
				// even when a poll repeats it; so do the MAAS event copied
				// late and the classification note.
				for _, want := range []string{
					"2026-01-01T00:00:01Z  ▶ enter  validate          from start; status running",
					"2026-01-01T00:00:02Z  ◀ exit   validate          ok: guardrails passed",
					"2026-01-01T00:00:03Z  ▶ enter  commission        from validate",
					"2026-01-01T00:00:04Z  ◀ exit   commission        ok: commissioning started",
					"2026-01-01T00:00:05Z  ▶ enter  wait_ready        from commission",
					"2026-01-01T00:00:04Z  MAAS     wait_ready        INFO: Commissioning",
					"2026-01-01T00:00:09Z  note     wait_deployed     classification: class datasource, retry",
				} {
					assert.Equal(t, 1, strings.Count(res.stdout, want), "want once: %s\n%s", want, res.stdout)
				}
				assert.Equal(t, 1, strings.Count(res.stdout, "status   validate          pending"), res.stdout)
				assert.Equal(t, 1, strings.Count(res.stdout, "status   commission        running"), res.stdout)
				lines := strings.Split(res.stdout, "\n")
				for i, l := range lines {
					if strings.HasPrefix(l, "onboarding 0b000000-0000-4000-8000-000000000001 ") && i > 0 && !strings.Contains(l, "accepted") {
						assert.Contains(t, lines[i-1], "  status   ", "the final status comes after the rows that led to it")
						assert.Contains(t, lines[i-2], "classification")
					}
				}
			})
		}
	}
}

func TestAdminWatchJSONLines(t *testing.T) {
	api := newAdminFakeAPI(t)
	states := []adminReply{
		adminStateWith("running", "validate", 1, "", tlEnterValidate),
		adminStateWith("running", "validate", 1, "", tlEnterValidate),
		adminStateWith("completed", "done", 1, "", tlEnterValidate, tlMAASCommissioning),
	}
	api.on("GET /api/v1/admin/onboardings/0b000000-0000-4000-8000-000000000001", states...)
	res := api.run(t, adminInvocation{advance: time.Second}, "onboardings", "watch", "0b000000-0000-4000-8000-000000000001", "--interval", "1s", "-o", "json")
	require.Equal(t, 0, res.code, res.stderr)
	lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
	require.Len(t, lines, 4, res.stdout)
	const ids = `"onboarding_id":"0b000000-0000-4000-8000-000000000001","hostname":"gpu-01",`
	// The backlog first, then the state the watch joined.
	assert.JSONEq(t, `{`+ids+`"time":"2026-01-01T00:00:01Z","attempt":1,"kind":"stage_entered","stage":"validate","detail":"from start; status running"}`, lines[0])
	assert.JSONEq(t, `{`+ids+`"time":"2026-01-01T00:00:01Z","attempt":1,"kind":"status","stage":"validate","status":"running","maas_system_id":"abc123"}`, lines[1])
	assert.JSONEq(t, `{`+ids+`"time":"2026-01-01T00:00:04Z","attempt":1,"kind":"maas_event","stage":"wait_ready","detail":"INFO: Commissioning","source":"maas","maas_event_id":7}`, lines[2])
	assert.JSONEq(t, `{`+ids+`"time":"2026-01-01T00:00:01Z","attempt":1,"kind":"status","stage":"done","status":"completed","maas_system_id":"abc123"}`, lines[3])
}

func TestAdminWatchErrors(t *testing.T) {
	t.Run("transient errors are retried", func(t *testing.T) {
		api := newAdminFakeAPI(t)
		api.on("GET /api/v1/admin/onboardings/0b000000-0000-4000-8000-000000000001",
			adminReply{http.StatusServiceUnavailable, `{"error":{"code":"service_unavailable","message":"retry later","correlation_id":"c-5"}}`},
			adminState("completed", "done", 1, ""))
		res := api.run(t, adminInvocation{advance: time.Second}, "onboardings", "watch", "0b000000-0000-4000-8000-000000000001", "--interval", "1s")
		assert.Equal(t, 0, res.code)
		assert.Contains(t, res.stderr, "warning: poll 1/5 failed")
		assert.Contains(t, res.stdout, "completed")
	})
	t.Run("persistent errors give up", func(t *testing.T) {
		api := newAdminFakeAPI(t)
		api.on("GET /api/v1/admin/onboardings/0b000000-0000-4000-8000-000000000001", adminReply{http.StatusBadGateway, `<html>bad gateway</html>`})
		res := api.run(t, adminInvocation{advance: time.Second}, "onboardings", "watch", "0b000000-0000-4000-8000-000000000001", "--interval", "1s")
		assert.Equal(t, 1, res.code)
		assert.Len(t, api.requests(), adminWatchMaxFailures+1)
		assert.Contains(t, res.stderr, "error: http_502")
	})
	t.Run("an unknown onboarding fails at once", func(t *testing.T) {
		api := newAdminFakeAPI(t)
		api.on("GET /api/v1/admin/onboardings/0b000000-0000-4000-8000-000000000009", adminReply{http.StatusNotFound, `{"error":{"code":"not_found","message":"onboarding 0b000000-0000-4000-8000-000000000009 not found","correlation_id":"c-6"}}`})
		res := api.run(t, adminInvocation{advance: time.Second}, "onboardings", "watch", "0b000000-0000-4000-8000-000000000009")
		assert.Equal(t, 1, res.code)
		assert.Len(t, api.requests(), 1)
		assert.Equal(t, "error: not_found: onboarding 0b000000-0000-4000-8000-000000000009 not found (correlation_id c-6)\n", res.stderr)
	})
}

func TestAdminErrorEnvelopePrinting(t *testing.T) {
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()

	cases := []struct {
		name    string
		reply   adminReply
		apiURL  string
		wantErr string
		exact   bool
	}{
		{
			name:    "envelope",
			reply:   adminReply{http.StatusBadRequest, `{"error":{"code":"invalid_request","field":"hostname","message":"hostname: must be an RFC 1123 host name","correlation_id":"c-1"}}`},
			wantErr: "error: invalid_request: hostname: must be an RFC 1123 host name (correlation_id c-1)\n",
			exact:   true,
		},
		{
			name:    "conflict",
			reply:   adminReply{http.StatusConflict, `{"error":{"code":"onboarding_exists","field":"hostname","message":"hostname: gpu-01 on site 5e000000-0000-4000-8000-000000000001 already has open onboarding 0b000000-0000-4000-8000-000000000001","correlation_id":"c-3"}}`},
			wantErr: "error: onboarding_exists: hostname: gpu-01 on site 5e000000-0000-4000-8000-000000000001 already has open onboarding 0b000000-0000-4000-8000-000000000001 (correlation_id c-3)\n",
			exact:   true,
		},
		{
			name:    "no envelope uses the header's correlation id",
			reply:   adminReply{http.StatusBadGateway, `<html>bad gateway</html>`},
			wantErr: "error: http_502: bad gateway (the answer carried no error envelope) (correlation_id cid-test)\n",
			exact:   true,
		},
		{
			name:    "control characters are neutralised",
			reply:   adminReply{http.StatusBadRequest, `{"error":{"code":"invalid_request","message":"bad \u001b[31mred\u001b[0m","correlation_id":"c-4"}}`},
			wantErr: "error: invalid_request: bad \ufffd[31mred\ufffd[0m (correlation_id c-4)\n",
			exact:   true,
		},
		{
			name:    "unreachable API",
			apiURL:  closedURL,
			wantErr: "error: cannot reach the admin API",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			api := newAdminFakeAPI(t)
			api.on("POST /api/v1/admin/onboardings", tc.reply)
			inv := adminInvocation{}
			if tc.apiURL != "" {
				inv.env = map[string]string{envAdminAPIURL: tc.apiURL}
			}
			res := api.run(t, inv, "onboard", "--site", "5e000000-0000-4000-8000-000000000001", "--profile", "9f000000-0000-4000-8000-000000000001", "--sku", "h100x8", "--hostname", "gpu-01", "--ipmi-ip", "10.0.0.5")
			assert.Equal(t, 1, res.code)
			assert.Empty(t, res.stdout)
			if tc.exact {
				assert.Equal(t, tc.wantErr, res.stderr)
			} else {
				assert.Contains(t, res.stderr, tc.wantErr)
			}
			assert.NotContains(t, res.stderr, adminTestToken)
		})
	}
}

func TestAdminMisuseExitsWithUsage(t *testing.T) {
	cases := []struct {
		name    string
		env     map[string]string
		args    []string
		wantErr string
	}{
		{"group without sub-command", nil, []string{"sites"}, "a sub-command is required"},
		{"unknown sub-command", nil, []string{"sites", "explode"}, `unknown command "explode" for "maasflow sites"`},
		{"unknown command", nil, []string{"nope"}, `unknown command "nope" for "maasflow"`},
		{"missing required flag", nil, []string{"sites", "create", "--name", "lab"}, "--maas-url is required"},
		{"missing argument", nil, []string{"profiles", "get", "5e000000-0000-4000-8000-000000000001"}, "expected 2 argument(s) (SITE PROFILE), got 1"},
		{"extra argument", nil, []string{"sites", "get", "5e000000-0000-4000-8000-000000000001", "s2"}, `unexpected argument "s2"`},
		{"dot-dot id", nil, []string{"sites", "get", ".."}, `".." is not a valid id`},
		{"unknown flag", nil, []string{"skus", "list", "--bogus"}, "unknown flag: --bogus"},
		{"bad output", nil, []string{"skus", "list", "-o", "xml"}, `-o must be one of table, json, yaml, not "xml"`},
		{"csv and hostname", nil, []string{"onboard", "--site", "s", "--profile", "p", "--sku", "k", "--csv", "x.csv", "--hostname", "h"}, "give either --csv or --hostname and --ipmi-ip, not both"},
		{"policy not an object", nil, []string{"sites", "patch", "5e000000-0000-4000-8000-000000000001", "--policy-json", "[1]"}, "--policy-json must be one JSON object"},
		{"nothing to patch", nil, []string{"skus", "patch", "h100x8"}, "nothing to change"},
		{"nothing to patch on a site", nil, []string{"sites", "patch", "5e000000-0000-4000-8000-000000000001"}, "nothing to change: give at least one of --name, --maas-url, --description, --status, --policy-json"},
		{"nothing to patch on a profile", nil, []string{"profiles", "patch", "5e000000-0000-4000-8000-000000000001", "9f000000-0000-4000-8000-000000000001"}, "nothing to change: give at least one of --name, --architecture, --distro-series, --hwe-kernel, --status, --policy-json"},
		{"profile create without series", nil, []string{"profiles", "create", "5e000000-0000-4000-8000-000000000001", "--name", "gpu", "--architecture", "amd64/generic"}, "--distro-series is required"},
		{"bad status", nil, []string{"profiles", "patch", "5e000000-0000-4000-8000-000000000001", "9f000000-0000-4000-8000-000000000001", "--status", "gone"}, "--status must be"},
		{"onboard without ipmi", nil, []string{"onboard", "--site", "5e000000-0000-4000-8000-000000000001", "--profile", "9f000000-0000-4000-8000-000000000001", "--sku", "k", "--hostname", "h"}, "--ipmi-ip is required"},
		{"bad interval", nil, []string{"onboardings", "watch", "0b000000-0000-4000-8000-000000000001", "--interval", "0s"}, "--interval must be positive"},
		{"bad limit", nil, []string{"audit", "--limit", "0"}, "--limit must be a positive integer"},
		{"bad onboardings limit", nil, []string{"onboardings", "list", "--limit", "-1"}, "--limit must be a positive integer"},
		{"roce without file", nil, []string{"roce", "upsert", "5e000000-0000-4000-8000-000000000001"}, "--file is required"},
		{"bad api url", nil, []string{"skus", "list", "--api-url", "ftp://x"}, "must be an http or https base URL"},
		{"no token", map[string]string{envAdminToken: ""}, []string{"skus", "list"}, "$MAASFLOW_ADMIN_TOKEN is not set"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			api := newAdminFakeAPI(t)
			res := api.run(t, adminInvocation{env: tc.env}, tc.args...)
			assert.Equal(t, 2, res.code)
			assert.Contains(t, res.stderr, tc.wantErr)
			assert.Contains(t, res.stderr, "Usage:")
			assert.Empty(t, res.stdout)
			assert.Empty(t, api.requests(), "misuse sends nothing")
		})
	}
}

func TestAdminHelp(t *testing.T) {
	api := newAdminFakeAPI(t)
	for _, args := range [][]string{
		{"sites", "--help"}, {"onboard", "-h"}, {"onboardings", "help"}, {"roce", "upsert", "--help"},
		{"help", "onboard"}, {"help", "sites", "create"}, {"batches", "watch", "--help"}, {"audit", "--help"},
	} {
		res := api.run(t, adminInvocation{}, args...)
		assert.Equal(t, 0, res.code, args)
		assert.Contains(t, res.stdout, "Usage:", args)
		assert.Contains(t, res.stdout, "MAASFLOW_ADMIN_TOKEN", args)
		assert.Empty(t, res.stderr, args)
	}
	res := api.run(t, adminInvocation{}, "help", "onboard")
	assert.Contains(t, res.stdout, "maasflow onboard --site SITE", "help <cmd> shows that command's help")
	assert.NotContains(t, res.stdout, "sites create")
	assert.Empty(t, api.requests())
}

func TestAdminAPIURLFlagOverridesEnvironment(t *testing.T) {
	api := newAdminFakeAPI(t)
	api.on("GET /api/v1/admin/skus", adminReply{http.StatusOK, `{"items":[]}`})
	env := map[string]string{envAdminAPIURL: "http://127.0.0.1:1", envAdminToken: adminTestToken}

	res := runAdminTest(t, env, adminInvocation{}, "skus", "list", "--api-url", api.srv.URL+"/")
	require.Equal(t, 0, res.code, res.stderr)
	require.Len(t, api.requests(), 1)
	assert.Equal(t, "/api/v1/admin/skus", api.requests()[0].Path)
}

func TestAdminOnboardingDetail(t *testing.T) {
	detail := `{"id":"0b000000-0000-4000-8000-000000000001","site_id":"5e000000-0000-4000-8000-000000000001","profile_id":"9f000000-0000-4000-8000-000000000001","sku_id":"h100x8","hostname":"gpu-01","ipmi_ip":"10.0.0.5",` +
		`"node_id":"n1","status":"manual_intervention","stage":"wait_deployed","attempt":1,"deploy_attempts":2,` +
		`"maas_system_id":"abc123","correlation_id":"c1","created_by":"admin",` +
		`"error":{"code":"DeployDatasourceError","message":"datasource not found twice","stage":"wait_deployed"},` +
		`"created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:30:00Z",` +
		`"timeline":[` +
		`{"time":"2026-01-01T00:00:01Z","attempt":1,"kind":"stage_entered","stage":"discover"},` +
		`{"time":"2026-01-01T00:00:02Z","attempt":1,"kind":"stage_exited","stage":"discover","outcome":"ok","detail":"matched by hostname"},` +
		`{"time":"2026-01-01T00:10:00Z","attempt":1,"kind":"maas_event","detail":"Node installation failure","source":"maas","maas_event_id":42},` +
		`{"time":"2026-01-01T00:10:01Z","attempt":1,"kind":"diagnostic","stage":"wait_deployed","source":"installation_output"}],` +
		`"diagnostics":{"maas_events":[{"time":"2026-01-01T00:10:00Z","attempt":1,"kind":"maas_event","detail":"Node installation failure"}],` +
		`"installation_output":"curtin: running\n\u001b[31mDataSourceNotFound\u001b[0m\n",` +
		`"script_results":[{"name":"smartctl-validate","stage":"commission","attempt":1,"time":"2026-01-01T00:05:00Z","output":"PASSED"}]}}`
	api := newAdminFakeAPI(t)
	api.on("GET /api/v1/admin/onboardings/0b000000-0000-4000-8000-000000000001", adminReply{http.StatusOK, detail})
	res := api.run(t, adminInvocation{}, "onboardings", "get", "0b000000-0000-4000-8000-000000000001")
	require.Equal(t, 0, res.code, res.stderr)

	for _, want := range []string{
		"Status:", "manual_intervention", "Stage:", "wait_deployed",
		"Attempt:", "1 (deploys in this attempt: 2)", "MAAS system ID:", "abc123",
		"Error:", "DeployDatasourceError: datasource not found twice (stage wait_deployed)",
		"TIME", "KIND", "OUTCOME", "stage_exited", "matched by hostname", "Node installation failure",
		"MAAS events: 1", "Installation output:", "    curtin: running",
		"Script result smartctl-validate (stage commission, attempt 1, 2026-01-01T00:05:00Z):", "    PASSED",
	} {
		assert.Contains(t, res.stdout, want)
	}
	assert.NotContains(t, res.stdout, "\x1b", "terminal escapes from MAAS output are neutralised")
	assert.Contains(t, res.stdout, "\ufffd[31mDataSourceNotFound")
}

func TestAdminCLIDispatchFromMain(t *testing.T) {
	var out, errb strings.Builder
	code := execute(t.Context(), &cliEnv{stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}, []string{"onboardings"})
	assert.Equal(t, 2, code)
	assert.Contains(t, errb.String(), "maasflow onboardings: a sub-command is required")
	assert.Regexp(t, `(?m)^\s+watch\s+follow an onboarding`, errb.String())
	assert.NotContains(t, errb.String(), "create a MAAS site", "only the group's commands")
}

func TestAdminWatchInterrupted(t *testing.T) {
	api := newAdminFakeAPI(t)
	api.on("GET /api/v1/admin/onboardings/0b000000-0000-4000-8000-000000000001", adminState("running", "deploy", 1, ""))
	var out, errb strings.Builder
	clk := clockwork.NewFakeClock()
	env := &cliEnv{stdout: &out, stderr: &errb, getenv: func(k string) string {
		return map[string]string{envAdminAPIURL: api.srv.URL, envAdminToken: adminTestToken}[k]
	}, clock: clk, http: &http.Client{}}
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		// Interrupt once the first poll is done and the watch waits.
		if clk.BlockUntilContext(ctx, 1) == nil {
			cancel()
		}
	}()
	code := execute(ctx, env, []string{"onboardings", "watch", "0b000000-0000-4000-8000-000000000001"})
	cancel()
	assert.Equal(t, 130, code)
	assert.Contains(t, out.String(), "running")
	assert.Equal(t, "error: interrupted\n", errb.String())
	assert.Len(t, api.requests(), 1)
}
