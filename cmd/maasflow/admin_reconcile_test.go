package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	adminRunJSON = `{"id":"run-1","trigger":"api","status":"running","started_at":"2026-01-02T03:04:05Z","sites":[],` +
		`"nodes_checked":0,"drift_by_kind":{},"joined":false}`
	adminFinishedJSON = `{"id":"run-1","trigger":"api","status":"succeeded","started_at":"2026-01-02T03:04:05Z","ended_at":"2026-01-02T03:04:09Z",` +
		`"sites":[{"site_id":"5e0c0a4e-1f0e-4c39-9a55-3f5a8f1d2c11","started_at":"2026-01-02T03:04:05Z","ended_at":"2026-01-02T03:04:09Z","nodes_checked":3,` +
		`"drift_by_kind":{"power_off":1,"status_mismatch":2},"new":3,"closed":0,"maas_calls":2,"power_queries":1}],` +
		`"nodes_checked":3,"drift_by_kind":{"power_off":1,"status_mismatch":2}}`
	adminDriftJSON = `{"id":"d1","node_id":"n1","hostname":"gpu-01","site_id":"5e0c0a4e-1f0e-4c39-9a55-3f5a8f1d2c11","kind":"status_mismatch","expected":"Deployed",` +
		`"observed":"Broken","state":"open","first_seen":"2026-01-02T03:04:05Z","last_seen":"2026-01-02T03:04:05Z","run_id":"run-1"}`
)

func TestAdminReconcileRunWaits(t *testing.T) {
	api := newAdminFakeAPI(t)
	api.on("POST /api/v1/admin/reconciliation/run", adminReply{http.StatusAccepted, adminRunJSON})
	api.on("GET /api/v1/admin/reconciliation/status",
		adminReply{http.StatusOK, `{"current":` + adminRunJSON + `}`},
		adminReply{http.StatusOK, `{"last":` + adminFinishedJSON + `}`})
	res := api.run(t, adminInvocation{clock: clockwork.NewFakeClock(), advance: 2 * time.Second},
		"reconcile", "run", "--site", "5e0c0a4e-1f0e-4c39-9a55-3f5a8f1d2c11", "--wait")
	require.Equal(t, 0, res.code, res.stderr)
	assert.Contains(t, res.stdout, "reconcile run run-1 started")
	assert.Contains(t, res.stdout, "power_off=1 status_mismatch=2")
	reqs := api.requests()
	require.GreaterOrEqual(t, len(reqs), 3)
	assert.JSONEq(t, `{"site_id":"5e0c0a4e-1f0e-4c39-9a55-3f5a8f1d2c11"}`, reqs[0].Body)
}

func TestAdminDrift(t *testing.T) {
	api := newAdminFakeAPI(t)
	api.on("GET /api/v1/admin/reconciliation/drift", adminReply{http.StatusOK, `{"items":[` + adminDriftJSON + `],"next_cursor":"abc"}`})
	res := api.run(t, adminInvocation{}, "drift", "list", "--site", "5e0c0a4e-1f0e-4c39-9a55-3f5a8f1d2c11", "--kind", "status_mismatch")
	require.Equal(t, 0, res.code, res.stderr)
	assert.Contains(t, res.stdout, "gpu-01")
	assert.Contains(t, res.stdout, "Broken")
	assert.Contains(t, res.stdout, "more: --cursor abc")
	assert.Equal(t, "kind=status_mismatch&site_id=5e0c0a4e-1f0e-4c39-9a55-3f5a8f1d2c11", api.requests()[0].Query)

	api.on("POST /api/v1/admin/reconciliation/drift/n1/resolve", adminReply{http.StatusOK,
		`{"id":"d1","node_id":"n1","hostname":"gpu-01","site_id":"5e0c0a4e-1f0e-4c39-9a55-3f5a8f1d2c11","kind":"status_mismatch","expected":"Deployed","observed":"Broken",` +
			`"state":"closed","first_seen":"2026-01-02T03:04:05Z","last_seen":"2026-01-02T03:04:05Z","run_id":"run-1",` +
			`"resolution":{"action":"adopt","reason":"RMA","by":"ops","at":"2026-01-02T03:05:00Z","detail":"node status active → retired (MAAS shows Broken)"}}`})
	res = api.run(t, adminInvocation{}, "drift", "resolve", "n1", "--kind", "status_mismatch", "--action", "adopt", "--reason", "RMA")
	require.Equal(t, 0, res.code, res.stderr)
	assert.Contains(t, res.stdout, "status_mismatch drift of node n1 is closed (adopt)")
	assert.Contains(t, res.stdout, "changed: node status active → retired")
	reqs := api.requests()
	assert.JSONEq(t, `{"kind":"status_mismatch","action":"adopt","reason":"RMA"}`, reqs[len(reqs)-1].Body)

	res = api.run(t, adminInvocation{}, "drift", "resolve", "n1", "--kind", "power_off", "--action", "adopt")
	assert.Equal(t, 2, res.code)
	assert.Contains(t, res.stderr, "--reason is required")
}
