package api

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
	"github.com/maasflow/maasflow/shared/reconcile"
	"github.com/maasflow/maasflow/shared/store"
)

// Each list the console shows is followed by its stream, and a change to
// the list reaches an open stream. The fallback re-read is an hour away:
// only the store's write notification can bring the change in time.
func TestStreamLists(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name, path, event string
		change            func(t *testing.T, h *harness, fx fixture)
		want              string
	}{
		{name: "sites", path: "/api/v1/admin/maas-sites/stream", event: "sites",
			change: func(_ *testing.T, h *harness, _ fixture) { h.readySite("dc-pushed") },
			want:   `"name":"dc-pushed"`},
		{name: "nodes", path: "/api/v1/admin/nodes/stream?limit=50", event: "nodes",
			change: func(t *testing.T, h *harness, fx fixture) {
				t.Helper()
				require.NoError(t, h.store.CreateNode(ctx, domain.Node{ID: "n2", SiteID: fx.site, Hostname: "gpu-pushed", Status: domain.NodeActive}))
			},
			want: `"hostname":"gpu-pushed"`},
		{name: "node", path: "/api/v1/admin/nodes/n1/stream", event: "node",
			change: func(t *testing.T, h *harness, _ fixture) {
				t.Helper()
				_, err := h.store.UpdateNode(ctx, "n1", func(n *domain.Node) error { n.Hostname = "gpu-renamed"; return nil })
				require.NoError(t, err)
			},
			want: `"hostname":"gpu-renamed"`},
		{name: "batches", path: "/api/v1/admin/onboarding-batches/stream", event: "batches",
			change: func(_ *testing.T, h *harness, fx fixture) {
				h.mustAdmin(http.StatusAccepted, "POST", "/api/v1/admin/onboardings/batch", fx.batch(node("gpu-batch", "10.0.0.9")))
			},
			want: `"hostname":"gpu-batch"`},
		{name: "decommissions", path: "/api/v1/admin/decommissions/stream?limit=50", event: "decommissions",
			change: func(t *testing.T, h *harness, fx fixture) {
				t.Helper()
				require.NoError(t, h.store.CreateDecommission(ctx, domain.Decommission{ID: "dec-pushed", NodeID: "n1", SiteID: fx.site,
					Hostname: "gpu1", Mode: domain.DecommissionStorageCleanup, Status: "running", Stage: domain.DecomStageRelease,
					Attempt: 1, MAASSystemID: "aaa", NodeStatusBefore: "active", ExecutionID: "exec-d", CorrelationID: "c0", CreatedBy: "alice"}))
			},
			want: `"id":"dec-pushed"`},
		{name: "drift", path: "/api/v1/admin/reconciliation/drift/stream?state=open", event: "drift",
			change: func(_ *testing.T, h *harness, fx fixture) {
				h.mustAdmin(http.StatusAccepted, "POST", reconPath+"/run", map[string]any{"site_id": fx.site})
			},
			want: `"observed":"gpu1-new"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, fx := listStreamHarness(t)
			srv := httptest.NewServer(h.handler)
			t.Cleanup(srv.Close)
			events := openStream(t, srv, tc.path)
			first := nextEvent(t, events)
			assert.Equal(t, tc.event, first.name)
			assert.NotContains(t, first.data, tc.want)
			tc.change(t, h, fx)
			// Another write may come first (a batch's row before its
			// onboarding): read until the change shows.
			deadline := time.After(20 * time.Second)
			for {
				select {
				case ev, ok := <-events:
					require.True(t, ok, "the stream ended")
					assert.Equal(t, tc.event, ev.name)
					if assert.NotContains(t, ev.data, `"error"`) && !strings.Contains(ev.data, tc.want) {
						continue
					}
					assert.Contains(t, ev.data, tc.want)
					return
				case <-deadline:
					t.Fatalf("%s was not pushed within 20s", tc.want)
				}
			}
		})
	}
}

// listStreamHarness is the harness with every list's source wired (a
// reconciler over a MAAS where node n1 was renamed), streams woken by the
// store's writes, and node n1 on the fixture's site.
func listStreamHarness(t *testing.T) (*harness, fixture) {
	t.Helper()
	var notifying *store.Notifying
	h := newHarness(t, func(db store.DynamoDB) store.DynamoDB { notifying = store.NewNotifying(db); return notifying })
	fx := h.fixture()
	require.NoError(t, h.store.CreateNode(context.Background(), domain.Node{ID: "n1", SiteID: fx.site, Hostname: "gpu1", MAASSystemID: "aaa", Status: domain.NodeActive}))
	r := reconcile.New(reconcile.Config{}, reconcile.Deps{Store: h.store, Executions: noExecutions{}, Clock: h.clock,
		MAAS:  fakeSiteMAAS{machines: map[string]maas.Machine{"aaa": {SystemID: "aaa", Hostname: "gpu1-new", StatusName: "Deployed", PowerState: "on"}}},
		NewID: func() string { return fmt.Sprintf("r%04d", h.seq.Add(1)) }})
	t.Cleanup(r.Wait)
	h.handler = New(Config{StreamFallback: time.Hour}, Deps{
		Store: h.store, Secrets: h.secrets, Starter: h.starter, Stopper: h.stopper, Completer: h.completer, Prober: h.prober,
		Auth:  NewStaticTokens(map[string]Principal{adminToken: {Subject: "alice", Admin: true}}),
		Clock: h.clock, NewID: func() string { return fmt.Sprintf("id-%04d", h.seq.Add(1)) },
		Reconciler: r, Changes: notifying,
	})
	return h, fx
}
