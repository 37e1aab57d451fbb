package api

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/design"
)

type roceRowView struct{ ID, CIDR, Source string }

func (h *harness) roceRows(site string) []roceRowView {
	h.t.Helper()
	out := []roceRowView{}
	for _, raw := range h.mustAdmin(http.StatusOK, "GET", site+"/roce-assignments", nil)["items"].([]any) {
		r := raw.(map[string]any)
		out = append(out, roceRowView{r["id"].(string), r["ipv4_cidr"].(string), r["source"].(string)})
	}
	return out
}

func roceRowIn(host, iface, cidr string) map[string]any {
	return map[string]any{"hostname": host, "interface": iface, "ipv4_cidr": cidr}
}

// The site's design owns the RoCE rows of the hosts it names: the plan
// shows the rows an apply changes (a newly designed host's direct rows
// superseded), the RoCE API reads the design's rails as rows and refuses
// to write them, a direct row written after the plan makes its hash stale,
// and rails that leave the design take their rows along.
func TestDesignOwnsTheRoCERowsOfItsHosts(t *testing.T) {
	h := newHarness(t)
	fx := h.fixture()
	site := "/api/v1/admin/maas-sites/" + fx.site
	base := site + "/design"
	onboard := map[string]any{"profile_id": fx.profile, "sku_id": fx.sku}
	h.mustAdmin(http.StatusOK, "POST", site+"/roce-assignments", map[string]any{"items": []any{
		roceRowIn("gpu-01", "ens1f0", "10.1.0.1/31"), roceRowIn("gpu-02", "ens2", "10.1.2.1/31"), roceRowIn("gpu-03", "ens1f0", "10.1.3.1/31"),
	}})

	docs := designDocs(2)
	docs[1].Nodes[0].RoCERails = []design.RoCERail{{Interface: "ens1f0", IPv4CIDR: "10.20.1.0/31"}, {Interface: "ens1f1", IPv4CIDR: "10.20.1.2/31"}}
	plan := h.mustAdmin(http.StatusOK, "POST", base+"/plan", map[string]any{"documents": docs})
	lines := plan["lines"].([]any)
	assert.Contains(t, lines, "~ roce_row gpu-01:ens1f0: ipv4_cidr: 10.1.0.1/31 -> 10.20.1.0/31, source: direct -> design")
	assert.Contains(t, lines, "+ roce_row gpu-01:ens1f1: ipv4_cidr: 10.20.1.2/31")
	assert.Contains(t, lines, "- roce_row gpu-02:ens2: superseded by the design")
	for _, l := range lines {
		assert.NotContains(t, l, "gpu-03", "a host the design does not name keeps its rows")
	}
	assert.Len(t, h.roceRows(site), 3, "a plan changes no row")

	h.mustAdmin(http.StatusOK, "POST", base+"/apply", map[string]any{"documents": docs, "plan_hash": plan["hash"], "onboard": onboard})
	assert.Equal(t, []roceRowView{
		{"gpu-01:ens1f0", "10.20.1.0/31", "design"}, {"gpu-01:ens1f1", "10.20.1.2/31", "design"}, {"gpu-03:ens1f0", "10.1.3.1/31", "direct"},
	}, h.roceRows(site))
	only := h.mustAdmin(http.StatusOK, "GET", site+"/roce-assignments?hostname=gpu-01", nil)["items"].([]any)
	assert.Len(t, only, 2)

	t.Run("the RoCE API refuses a designed host's rows", func(t *testing.T) {
		r := h.admin("POST", site+"/roce-assignments", map[string]any{"items": []any{roceRowIn("gpu-03", "ens1f1", "10.1.3.3/31"), roceRowIn("GPU-01", "ens1f0", "10.9.0.1/31")}})
		require.Equal(t, http.StatusConflict, r.status, r.body)
		code, msg := r.errorOf(t)
		assert.Equal(t, CodeConflict, code)
		assert.Equal(t, "items[1].hostname", r.json(t)["error"].(map[string]any)["field"])
		assert.Contains(t, msg, "items[1].hostname: the RoCE rows of host gpu-01 belong to the site's design")
		r = h.admin("DELETE", site+"/roce-assignments/gpu-01:ens1f0", nil)
		require.Equal(t, http.StatusConflict, r.status, r.body)
		assert.Equal(t, "assignment_id", r.json(t)["error"].(map[string]any)["field"])
		assert.Len(t, h.roceRows(site), 3, "nothing written")
	})

	t.Run("a direct row written after the plan makes it stale", func(t *testing.T) {
		docs := designDocs(3)
		docs[1].Nodes[0].RoCERails = []design.RoCERail{{Interface: "ens1f0", IPv4CIDR: "10.20.1.0/31"}, {Interface: "ens1f1", IPv4CIDR: "10.20.1.2/31"}}
		plan := h.mustAdmin(http.StatusOK, "POST", base+"/plan", map[string]any{"documents": docs})
		assert.Contains(t, plan["lines"], "- roce_row gpu-03:ens1f0: superseded by the design")
		h.mustAdmin(http.StatusOK, "POST", site+"/roce-assignments", map[string]any{"items": []any{roceRowIn("gpu-03", "ens1f1", "10.1.3.3/31")}})
		r := h.admin("POST", base+"/apply", map[string]any{"documents": docs, "plan_hash": plan["hash"], "onboard": onboard})
		require.Equal(t, http.StatusConflict, r.status, r.body)

		plan = h.mustAdmin(http.StatusOK, "POST", base+"/plan", map[string]any{"documents": docs})
		assert.Contains(t, plan["lines"], "- roce_row gpu-03:ens1f1: superseded by the design")
		h.mustAdmin(http.StatusOK, "POST", base+"/apply", map[string]any{"documents": docs, "plan_hash": plan["hash"], "onboard": onboard})
		assert.Equal(t, []roceRowView{{"gpu-01:ens1f0", "10.20.1.0/31", "design"}, {"gpu-01:ens1f1", "10.20.1.2/31", "design"}}, h.roceRows(site))

		// gpu-01's rails leave the design: so do its rows.
		docs[1].Nodes[0].RoCERails = nil
		plan = h.mustAdmin(http.StatusOK, "POST", base+"/plan", map[string]any{"documents": docs})
		assert.Contains(t, plan["lines"], "- roce_row gpu-01:ens1f0")
		assert.Contains(t, plan["lines"], "- roce_row gpu-01:ens1f1")
		h.mustAdmin(http.StatusOK, "POST", base+"/apply", map[string]any{"documents": docs, "plan_hash": plan["hash"]})
		assert.Empty(t, h.roceRows(site))
	})
}
