package api

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
)

// A dry run of a destructive request answers exactly what it would do and
// writes nothing: no record, no workflow, no audit entry.
func TestDryRunsSayWhatWouldHappenAndWriteNothing(t *testing.T) {
	h, runner := decomHarness(t, &fakeDecomMachines{})
	ctx := context.Background()
	site := h.readySiteWith("lab", map[string]any{"erase_mode": "quick", "delete_on_full": false})
	require.NoError(t, h.store.CreateNode(ctx, domain.Node{ID: "n1", SiteID: site, Hostname: "gpu-01",
		Status: domain.NodeActive, MAASSystemID: "abc123"}))

	t.Run("full decommission", func(t *testing.T) {
		plan := h.mustAdmin(http.StatusOK, "POST", "/api/v1/admin/nodes/n1/decommission?dry_run=true", map[string]any{"mode": "full"})
		assert.Equal(t, true, plan["dry_run"])
		assert.Equal(t, "node.decommission", plan["action"])
		assert.Equal(t, map[string]any{"id": "n1", "hostname": "gpu-01", "status": "active", "status_after": "removed"}, plan["node"])
		assert.Equal(t, map[string]any{"system_id": "abc123", "release": true, "delete": false}, plan["machine"],
			"the site's delete_on_full false keeps the machine")
		assert.Equal(t, "quick", plan["erase_mode"])
		assert.Equal(t, []any{}, plan["allocations"])
		assert.Equal(t, "drain, release with erase, remove the node", plan["summary"])

		list := h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/decommissions", nil)
		assert.Empty(t, list["items"], "no decommission was created")
		runner.mu.Lock()
		assert.Empty(t, runner.starts, "no workflow was started")
		runner.mu.Unlock()
		node := h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/nodes/n1", nil)
		assert.Equal(t, "active", node["status"])
		assert.Empty(t, h.auditFor("node.decommission"), "a dry run is not audited")
	})

	t.Run("refused exactly as the real request", func(t *testing.T) {
		res := h.admin("POST", "/api/v1/admin/nodes/n1/remove?dry_run=true", nil)
		require.Equal(t, http.StatusConflict, res.status)
		code, msg := res.errorOf(t)
		assert.Equal(t, CodeInvalidRequest, code)
		assert.Contains(t, msg, "only a retired node can be removed")
		res = h.admin("POST", "/api/v1/admin/nodes/n1/decommission?dry_run=true", map[string]any{"mode": "sideways"})
		require.Equal(t, http.StatusBadRequest, res.status)
	})

	t.Run("a bad dry_run names the parameter", func(t *testing.T) {
		res := h.admin("DELETE", "/api/v1/admin/maas-sites/"+site+"?dry_run=maybe", nil)
		require.Equal(t, http.StatusBadRequest, res.status)
		assert.Equal(t, "dry_run", res.json(t)["error"].(map[string]any)["field"])
	})

	t.Run("node remove", func(t *testing.T) {
		h.mustAdmin(http.StatusOK, "POST", "/api/v1/admin/nodes/n1/retire", nil)
		plan := h.mustAdmin(http.StatusOK, "POST", "/api/v1/admin/nodes/n1/remove?dry_run=true", nil)
		assert.Equal(t, "node.remove", plan["action"])
		assert.Equal(t, true, plan["revokes_tokens"])
		assert.Equal(t, "removed", plan["node"].(map[string]any)["status_after"])
		node := h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/nodes/n1", nil)
		assert.Equal(t, "retired", node["status"])
		assert.Empty(t, h.auditFor("node.remove"))
	})

	t.Run("site disable", func(t *testing.T) {
		plan := h.mustAdmin(http.StatusOK, "DELETE", "/api/v1/admin/maas-sites/"+site+"?dry_run=1", nil)
		assert.Equal(t, map[string]any{"id": site, "name": "lab", "status": "active", "status_after": "disabled"}, plan["site"])
		got := h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/maas-sites/"+site, nil)
		assert.Equal(t, "active", got["status"])
		successes := func() int {
			n := 0
			for _, e := range h.auditFor("site.disable") {
				if e.Result == resultSuccess {
					n++
				}
			}
			return n
		}
		assert.Zero(t, successes(), "only the refused dry_run=maybe is on the trail, as a failure")
		h.mustAdmin(http.StatusOK, "DELETE", "/api/v1/admin/maas-sites/"+site, nil)
		assert.Equal(t, 1, successes(), "the real request is audited")
	})
}

// A client asks which dry runs the API knows before sending one: the list
// names exactly the actions whose plans the dry runs above answer.
func TestEveryAnswerListsTheDryRunsItKnows(t *testing.T) {
	h, _ := decomHarness(t, &fakeDecomMachines{})
	r := h.do(call{method: http.MethodGet, path: "/api/v1/healthz"})
	require.Equal(t, http.StatusOK, r.status)
	assert.ElementsMatch(t, []string{"node.decommission", "node.remove", "onboarding.restart-clean", "site.disable"},
		strings.Fields(r.header.Get(HeaderDryRuns)))
	r = h.admin(http.MethodGet, "/api/v1/admin/nodes/no-such-node", nil)
	assert.Equal(t, http.StatusNotFound, r.status)
	assert.NotEmpty(t, r.header.Get(HeaderDryRuns), "on refusals too")
}
