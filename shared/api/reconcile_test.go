package api

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
	"github.com/maasflow/maasflow/shared/reconcile"
)

const reconPath = "/api/v1/admin/reconciliation"

// fakeSiteMAAS shows one machine per system id.
type fakeSiteMAAS struct{ machines map[string]maas.Machine }

func (f fakeSiteMAAS) ListByIDs(_ context.Context, ids []string) ([]maas.Machine, error) {
	var out []maas.Machine
	for _, id := range ids {
		if m, ok := f.machines[id]; ok {
			out = append(out, m)
		}
	}
	return out, nil
}

func (f fakeSiteMAAS) ListByHostnames(context.Context, []string) ([]maas.Machine, error) {
	return nil, nil
}

func (f fakeSiteMAAS) PowerState(context.Context, string) (string, error) { return "on", nil }

func (f fakeSiteMAAS) ForSite(context.Context, string) (reconcile.MachineReader, error) {
	return f, nil
}

type noExecutions struct{}

func (noExecutions) ExecutionStatus(context.Context, string) (string, error) {
	return reconcile.ExecutionRunning, nil
}

// withReconciler rebuilds the harness handler with a runner over its store.
func withReconciler(h *harness, m fakeSiteMAAS) *reconcile.Runner {
	r := reconcile.New(reconcile.Config{}, reconcile.Deps{Store: h.store, MAAS: m, Executions: noExecutions{}, Clock: h.clock,
		NewID: func() string { return fmt.Sprintf("r%04d", h.seq.Add(1)) }})
	h.handler = New(Config{}, Deps{
		Store: h.store, Secrets: h.secrets, Starter: h.starter, Stopper: h.stopper, Completer: h.completer, Prober: h.prober,
		Auth:  NewStaticTokens(map[string]Principal{adminToken: {Subject: "alice", Admin: true}, userToken: {Subject: "bob"}}),
		Clock: h.clock, NewID: func() string { return fmt.Sprintf("id-%04d", h.seq.Add(1)) },
		Logger:     slog.New(slog.NewJSONHandler(h.logs, nil)),
		Reconciler: r,
	})
	return r
}

func TestReconciliationAPI(t *testing.T) {
	h := newHarness(t)
	site := h.readySite("dc1")
	ctx := context.Background()
	require.NoError(t, h.store.CreateNode(ctx, domain.Node{ID: "n1", SiteID: site, Hostname: "gpu1", MAASSystemID: "aaa", Status: domain.NodeActive}))
	r := withReconciler(h, fakeSiteMAAS{machines: map[string]maas.Machine{
		"aaa": {SystemID: "aaa", Hostname: "gpu1-new", StatusName: "Deployed", PowerState: "on"},
	}})

	run := h.mustAdmin(http.StatusAccepted, "POST", reconPath+"/run", map[string]any{"site_id": site})
	assert.Equal(t, false, run["joined"])
	assert.Equal(t, site, run["site_id"])
	r.Wait()

	st := h.mustAdmin(http.StatusOK, "GET", reconPath+"/status", nil)
	last := st["last"].(map[string]any)
	assert.Equal(t, run["id"], last["id"])
	assert.Equal(t, "succeeded", last["status"])
	assert.Equal(t, map[string]any{"hostname_changed": float64(1)}, last["drift_by_kind"])
	assert.Nil(t, st["current"])

	list := h.mustAdmin(http.StatusOK, "GET", reconPath+"/drift?site_id="+site+"&kind=hostname_changed", nil)
	items := list["items"].([]any)
	require.Len(t, items, 1)
	item := items[0].(map[string]any)
	assert.Equal(t, "gpu1", item["expected"])
	assert.Equal(t, "gpu1-new", item["observed"])

	// Acknowledge, then adopt: the node takes the new hostname, audited.
	ack := h.mustAdmin(http.StatusOK, "POST", reconPath+"/drift/n1/resolve", map[string]any{"kind": "hostname_changed", "action": "acknowledge", "reason": "CHG-1"})
	assert.Equal(t, "acknowledge", ack["resolution"].(map[string]any)["action"])
	adopted := h.mustAdmin(http.StatusOK, "POST", reconPath+"/drift/n1/resolve", map[string]any{"kind": "hostname_changed", "action": "adopt", "reason": "renamed in MAAS"})
	assert.Equal(t, "closed", adopted["state"])
	n, err := h.store.GetNode(ctx, "n1")
	require.NoError(t, err)
	assert.Equal(t, "gpu1-new", n.Hostname)
	audit := h.auditFor("reconciliation.drift.resolve")
	require.Len(t, audit, 2)
	var targets []string
	for _, a := range audit {
		targets = append(targets, a.Target)
	}
	assert.Contains(t, targets, "node:n1/drift:hostname_changed/adopt")
	require.Len(t, h.auditFor("reconciliation.run"), 1)

	// Closed items are history.
	list = h.mustAdmin(http.StatusOK, "GET", reconPath+"/drift?node_id=n1", nil)
	require.Len(t, list["items"].([]any), 1)
	assert.Equal(t, "closed", list["items"].([]any)[0].(map[string]any)["state"])
}

func TestReconciliationAPIRefusals(t *testing.T) {
	h := newHarness(t)
	withReconciler(h, fakeSiteMAAS{})
	tests := []struct {
		name, method, path string
		body               any
		status             int
		field              string
	}{
		{"unknown site", "POST", reconPath + "/run", map[string]any{"site_id": "nope"}, http.StatusUnprocessableEntity, "site_id"},
		{"unknown body field", "POST", reconPath + "/run", map[string]any{"sites": "x"}, http.StatusBadRequest, "sites"},
		{"bad kind filter", "GET", reconPath + "/drift?kind=weird", nil, http.StatusBadRequest, "kind"},
		{"bad state filter", "GET", reconPath + "/drift?state=all", nil, http.StatusBadRequest, "state"},
		{"bad limit", "GET", reconPath + "/drift?limit=0", nil, http.StatusBadRequest, "limit"},
		{"missing kind", "POST", reconPath + "/drift/n1/resolve", map[string]any{"action": "adopt", "reason": "x"}, http.StatusBadRequest, "kind"},
		{"bad action", "POST", reconPath + "/drift/n1/resolve", map[string]any{"kind": "power_off", "action": "fix", "reason": "x"}, http.StatusBadRequest, "action"},
		{"missing reason", "POST", reconPath + "/drift/n1/resolve", map[string]any{"kind": "power_off", "action": "adopt"}, http.StatusBadRequest, "reason"},
		{"no open drift", "POST", reconPath + "/drift/n1/resolve", map[string]any{"kind": "power_off", "action": "adopt", "reason": "x"}, http.StatusNotFound, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := h.admin(tt.method, tt.path, tt.body)
			require.Equal(t, tt.status, r.status, string(r.body))
			var env struct {
				Error struct {
					Field string `json:"field"`
				} `json:"error"`
			}
			require.NoError(t, json.Unmarshal(r.body, &env))
			assert.Equal(t, tt.field, env.Error.Field)
		})
	}

	// Admin only.
	r := h.do(call{method: "POST", path: reconPath + "/run", token: userToken})
	assert.Equal(t, http.StatusForbidden, r.status)
	r = h.do(call{method: "GET", path: reconPath + "/drift"})
	assert.Equal(t, http.StatusUnauthorized, r.status)
}

func TestReconciliationStartIsNotAvailableYet(t *testing.T) {
	h := newHarness(t)
	site := h.readySite("dc1")
	ctx := context.Background()
	require.NoError(t, h.store.CreateNode(ctx, domain.Node{ID: "n1", SiteID: site, Hostname: "gpu1", MAASSystemID: "aaa", Status: domain.NodeActive}))
	r := withReconciler(h, fakeSiteMAAS{machines: map[string]maas.Machine{}})
	h.mustAdmin(http.StatusAccepted, "POST", reconPath+"/run", nil)
	r.Wait()
	res := h.admin("POST", reconPath+"/drift/n1/resolve", map[string]any{"kind": "machine_missing", "action": "start", "reason": "decommission it"})
	require.Equal(t, http.StatusConflict, res.status, string(res.body))
	_, msg := res.errorOf(t)
	assert.Contains(t, msg, "nothing to decommission; adopt")
}

func TestReconciliationUnconfigured(t *testing.T) {
	h := newHarness(t)
	r := h.admin("GET", reconPath+"/status", nil)
	assert.Equal(t, http.StatusServiceUnavailable, r.status)
}
