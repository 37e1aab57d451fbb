package api

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRefusedRequestsDoNotGrowState reproduces a flood a security review sent: enrollments with a
// 60 KB path id and admin calls without a credential. None may add an audit
// entry; each is counted; the log gets a sample, never the long id.
func TestRefusedRequestsDoNotGrowState(t *testing.T) {
	h := newHarness(t)
	before, err := h.store.ListAudit(context.Background(), 1000)
	require.NoError(t, err)

	longID := strings.Repeat("n", 60<<10)
	for range 200 {
		r := h.do(call{method: "POST", path: "/api/v1/nodes/" + longID + "/enroll", body: map[string]any{"token": "x"}})
		require.Equal(t, http.StatusNotFound, r.status, "%s", r.body)
		assert.NotContains(t, string(r.body), longID[:300])
	}
	for range 50 {
		r := h.do(call{method: "POST", path: "/api/v1/admin/maas-sites", body: map[string]any{"name": "x", "maas_url": "http://m/"}, token: "wrong"})
		require.Equal(t, http.StatusUnauthorized, r.status)
		r = h.do(call{method: "POST", path: "/api/v1/nodes/n1/enroll", body: map[string]any{"token": "not-ours"}})
		require.Equal(t, http.StatusUnauthorized, r.status)
	}

	after, err := h.store.ListAudit(context.Background(), 1000)
	require.NoError(t, err)
	assert.Len(t, after, len(before), "refused requests wrote no audit entry")
	counts := h.refusals.Counts()
	assert.Equal(t, int64(200), counts[CodeNotFound])
	assert.Equal(t, int64(50), counts[CodeUnauthorized])
	assert.Equal(t, int64(50), counts[CodeTokenRejected])

	logs := h.logs.String()
	assert.NotContains(t, logs, longID[:300], "the long id never reaches the log")
	assert.Equal(t, 1, strings.Count(logs, "request refused (sampled)"), "one sample per interval")
	// The next interval logs again, saying how many it stands for.
	h.clock.Advance(refusalLogInterval)
	h.do(call{method: "GET", path: "/api/v1/admin/skus"})
	logs = h.logs.String()
	assert.Equal(t, 2, strings.Count(logs, "request refused (sampled)"))
	assert.Contains(t, logs, `"refused_since_last_line":299`)
	assert.Contains(t, logs, `"refused_total":301`)
}

// TestPathIDsAreBoundedBeforeRecords: an admin's request with an id no
// record can have is a 404 whose audit target is bounded.
func TestPathIDsAreBoundedBeforeRecords(t *testing.T) {
	h := newHarness(t)
	longID := strings.Repeat("s", 60<<10)
	r := h.admin("PATCH", "/api/v1/admin/maas-sites/"+longID, map[string]any{"description": "d"})
	require.Equal(t, http.StatusNotFound, r.status)
	_, msg := r.errorOf(t)
	assert.Contains(t, msg, "no such id")
	entries := h.auditFor("site.update")
	require.Len(t, entries, 1)
	assert.LessOrEqual(t, len(entries[0].Target), len("site:")+maxPathValue+len("…"))
	assert.Equal(t, "failure:"+CodeNotFound, entries[0].Result)

	// Control characters in an id are refused the same way.
	r = h.admin("GET", "/api/v1/admin/skus/a%0Ab", nil)
	assert.Equal(t, http.StatusNotFound, r.status)
	assert.NotContains(t, h.logs.String(), "a\nb")
}

func TestAuditIsPaginated(t *testing.T) {
	h := newHarness(t)
	for i := range 7 {
		h.mustAdmin(http.StatusCreated, "POST", "/api/v1/admin/skus", map[string]any{"id": "sku-" + string(rune('a'+i)), "gpu_model": "H100", "gpus_total": 8})
		h.clock.Advance(time.Second)
	}
	var seen []string
	cursor := ""
	for pages := 0; ; pages++ {
		require.Less(t, pages, 5)
		path := "/api/v1/admin/audit?limit=3"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		page := h.mustAdmin(http.StatusOK, "GET", path, nil)
		items := page["items"].([]any)
		assert.LessOrEqual(t, len(items), 3)
		for _, it := range items {
			seen = append(seen, it.(map[string]any)["target"].(string))
		}
		cursor = page["next_cursor"].(string)
		if cursor == "" {
			break
		}
	}
	assert.Equal(t, []string{"sku:sku-g", "sku:sku-f", "sku:sku-e", "sku:sku-d", "sku:sku-c", "sku:sku-b", "sku:sku-a"}, seen)

	r := h.admin("GET", "/api/v1/admin/audit?cursor=bm9wZQ", nil)
	require.Equal(t, http.StatusBadRequest, r.status)
	assert.Equal(t, "cursor", r.json(t)["error"].(map[string]any)["field"])
}

func TestUnauthorizedCarriesAChallenge(t *testing.T) {
	h := newHarness(t)
	r := h.do(call{method: "GET", path: "/api/v1/admin/skus"})
	require.Equal(t, http.StatusUnauthorized, r.status)
	assert.Equal(t, `Bearer realm="maasflow"`, r.header.Get("WWW-Authenticate"))
	r = h.do(call{method: "GET", path: "/api/v1/admin/skus", token: "wrong"})
	assert.Equal(t, `Bearer realm="maasflow", error="invalid_token"`, r.header.Get("WWW-Authenticate"))
	r = h.do(call{method: "POST", path: "/api/v1/nodes/n1/enroll", body: map[string]any{"token": "nope"}})
	require.Equal(t, http.StatusUnauthorized, r.status)
	assert.Equal(t, `Bearer realm="maasflow", error="invalid_token"`, r.header.Get("WWW-Authenticate"))
	// Other refusals carry none.
	r = h.do(call{method: "GET", path: "/api/v1/admin/skus", token: userToken})
	require.Equal(t, http.StatusForbidden, r.status)
	assert.Empty(t, r.header.Get("WWW-Authenticate"))
}

func TestLongMethodIsNotEchoed(t *testing.T) {
	h := newHarness(t)
	method := strings.Repeat("M", 4096)
	r := h.do(call{method: method, path: "/api/v1/admin/maas-sites", token: adminToken})
	require.Contains(t, []int{http.StatusNotFound, http.StatusMethodNotAllowed}, r.status)
	assert.NotContains(t, string(r.body), method[:64])
	assert.NotContains(t, h.logs.String(), method[:64])
}
