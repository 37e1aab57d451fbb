package api

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/design"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/enroll"
)

// designDocs is a small valid design: a base with one profile chain and a
// rack file with nodes gpu-01..gpu-<n>.
func designDocs(n int) []design.Document {
	base := design.Document{
		Name:             "site.yaml",
		HardwareProfiles: []design.HardwareProfile{{Name: "board", DeviceAliases: []design.DeviceAlias{{Alias: "pxe0", PCIAddress: "0000:17:00.0"}}}},
		Networks:         []design.Network{{Name: "mgmt", CIDR: "10.0.0.0/24", MTU: 1500, Gateway: "10.0.0.1"}},
		NetworkLinks:     []design.NetworkLink{{Name: "pxe", Members: []string{"pxe0"}}},
		HostProfiles: []design.HostProfile{
			{Name: "base", HardwareProfile: "board", Interfaces: []design.InterfaceSpec{{Name: "eno1", Link: "pxe", Networks: []string{"mgmt"}}}},
			{Name: "gpu", Parent: "base", DistroSeries: "noble"},
		},
	}
	rack := design.Document{Name: "rack-a.yaml"}
	for i := 1; i <= n; i++ {
		rack.Nodes = append(rack.Nodes, design.NodeAssignment{Hostname: fmt.Sprintf("gpu-%02d", i), BMCAddress: fmt.Sprintf("10.10.0.%d", i),
			HostProfile: "gpu", Addresses: []design.Address{{Interface: "eno1", Network: "mgmt", Address: fmt.Sprintf("10.0.0.%d", 10+i)}}})
	}
	return []design.Document{base, rack}
}

func TestDesignPlanApplyAndRead(t *testing.T) {
	h := newHarness(t)
	fx := h.fixture()
	base := "/api/v1/admin/maas-sites/" + fx.site + "/design"
	docs := designDocs(2)

	plan := h.mustAdmin(http.StatusOK, "POST", base+"/plan", map[string]any{"documents": docs})
	assert.Equal(t, []any{"gpu-01", "gpu-02"}, plan["onboard"])
	assert.Contains(t, plan["lines"], "+ node gpu-01 (onboard)")
	h.mustAdmin(http.StatusNotFound, "GET", base, nil) // a dry run stores nothing
	require.NotEmpty(t, h.auditFor("design.plan"), "a dry run is audited")

	// An apply of new hosts needs their onboarding profile and SKU.
	r := h.admin("POST", base+"/apply", map[string]any{"documents": docs, "plan_hash": plan["hash"]})
	require.Equal(t, http.StatusBadRequest, r.status, r.body)
	_, msg := r.errorOf(t)
	assert.Contains(t, msg, "onboard")

	applied := h.mustAdmin(http.StatusOK, "POST", base+"/apply", map[string]any{"documents": docs, "plan_hash": plan["hash"],
		"onboard": map[string]any{"profile_id": fx.profile, "sku_id": fx.sku}})
	assert.EqualValues(t, 1, applied["version"])
	batch := applied["batch"].(map[string]any)
	assert.Equal(t, map[string]any{"pending": 2.0}, batch["counts"], "new hosts go through the batch path")
	require.Len(t, h.starter.started(), 2)
	assert.Equal(t, "10.10.0.1", h.starter.started()[0].IPMIIP)
	audits := h.auditFor("design.apply")
	require.Len(t, audits, 2, "the refused apply and the applied one")
	assert.Equal(t, "success", audits[0].Result)
	assert.Equal(t, "site:"+fx.site+"/design", audits[0].Target)

	stored := h.mustAdmin(http.StatusOK, "GET", base, nil)
	assert.EqualValues(t, 1, stored["version"])
	eff := h.mustAdmin(http.StatusOK, "GET", base+"/nodes/gpu-02", nil)
	assert.Equal(t, "noble", eff["distro_series"])
	assert.Equal(t, "host_profile/gpu@site.yaml", eff["sources"].(map[string]any)["distro_series"])
	h.mustAdmin(http.StatusNotFound, "GET", base+"/nodes/gpu-09", nil)

	// Changing one address is a one-line plan; applying a stale hash does nothing.
	docs[1].Nodes[1].Addresses[0].Address = "10.0.0.99"
	plan2 := h.mustAdmin(http.StatusOK, "POST", base+"/plan", map[string]any{"documents": docs})
	assert.Equal(t, []any{"~ node gpu-02: addresses[0].address: 10.0.0.12 -> 10.0.0.99 (network reconfigured)"}, plan2["lines"])
	r = h.admin("POST", base+"/apply", map[string]any{"documents": docs, "plan_hash": plan["hash"]})
	require.Equal(t, http.StatusConflict, r.status, r.body)
	applied = h.mustAdmin(http.StatusOK, "POST", base+"/apply", map[string]any{"documents": docs, "plan_hash": plan2["hash"]})
	assert.EqualValues(t, 2, applied["version"])
	assert.Nil(t, applied["batch"])
	assert.Len(t, h.starter.started(), 2, "no new onboarding")
}

func TestDesignInvalidStoresNothing(t *testing.T) {
	h := newHarness(t)
	fx := h.fixture()
	base := "/api/v1/admin/maas-sites/" + fx.site + "/design"
	docs := designDocs(2)
	docs[1].Nodes[1].BMCAddress = "10.10.0.1"
	docs[1].Nodes[0].Addresses[0].Address = "10.9.9.9"
	r := h.admin("POST", base+"/apply", map[string]any{"documents": docs, "plan_hash": strings.Repeat("0", 64),
		"onboard": map[string]any{"profile_id": fx.profile, "sku_id": fx.sku}})
	require.Equal(t, http.StatusUnprocessableEntity, r.status, r.body)
	code, msg := r.errorOf(t)
	assert.Equal(t, CodeInvalidDesign, code)
	assert.Contains(t, msg, `rack-a.yaml: node "gpu-02": bmc_address 10.10.0.1 is also node "gpu-01"'s BMC address`)
	assert.Contains(t, msg, `rack-a.yaml: node "gpu-01": addresses[0].address 10.9.9.9 is outside the network 10.0.0.0/24`)
	h.mustAdmin(http.StatusNotFound, "GET", base, nil)
	assert.Empty(t, h.starter.started())

	r = h.admin("POST", base+"/plan", map[string]any{"documents": []any{map[string]any{"name": "x", "bogus": 1}}})
	require.Equal(t, http.StatusBadRequest, r.status, r.body)

	r = h.do(call{method: "POST", path: base + "/plan", body: map[string]any{"documents": docs}, token: userToken})
	assert.Equal(t, http.StatusForbidden, r.status, "admin only")
}

// A node reads its own effective design with its enrollment token, before
// it enrolls, and is refused another node's.
func TestNodeReadsOnlyItsOwnDesign(t *testing.T) {
	h := newHarness(t)
	fx := h.fixture()
	base := "/api/v1/admin/maas-sites/" + fx.site + "/design"
	docs := designDocs(2)
	plan := h.mustAdmin(http.StatusOK, "POST", base+"/plan", map[string]any{"documents": docs})
	applied := h.mustAdmin(http.StatusOK, "POST", base+"/apply", map[string]any{"documents": docs, "plan_hash": plan["hash"],
		"onboard": map[string]any{"profile_id": fx.profile, "sku_id": fx.sku}})
	var nodes []string
	for _, it := range applied["batch"].(map[string]any)["items"].([]any) {
		o := h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/onboardings/"+it.(map[string]any)["onboarding_id"].(string), nil)
		nodes = append(nodes, o["node_id"].(string))
	}
	require.Len(t, nodes, 2)
	tokens := []string{"node-one-token-7Hq2pLx9", "node-two-token-3Vb8kMz1"}
	for i, n := range nodes {
		require.NoError(t, h.store.PutEnrollmentToken(context.Background(), domain.EnrollmentToken{
			Hash: enroll.HashToken(tokens[i]), NodeID: n, Attempt: 1, ExpiresAt: h.clock.Now().Add(time.Hour)}))
	}
	read := func(node, token string) response {
		c := call{method: "GET", path: "/api/v1/nodes/" + node + "/design"}
		if token != "" {
			c.header = map[string]string{"Authorization": "Bearer " + token}
		}
		return h.do(c)
	}

	r := read(nodes[0], tokens[0])
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	own := r.json(t)
	assert.Equal(t, "gpu-01", own["hostname"])
	assert.Equal(t, "10.0.0.11", own["interfaces"].([]any)[0].(map[string]any)["networks"].([]any)[0].(map[string]any)["address"])
	// Reading does not spend the token: a second read works.
	require.Equal(t, http.StatusOK, read(nodes[0], tokens[0]).status)

	r = read(nodes[1], tokens[0])
	require.Equal(t, http.StatusForbidden, r.status, "%s", r.body)
	assert.NotContains(t, string(r.body), "gpu-02")
	r = read(nodes[0], "")
	require.Equal(t, http.StatusUnauthorized, r.status)
	r = read(nodes[0], "not-a-token")
	require.Equal(t, http.StatusUnauthorized, r.status)
	h.clock.Advance(2 * time.Hour)
	r = read(nodes[0], tokens[0])
	require.Equal(t, http.StatusUnauthorized, r.status)
	code, msg := r.errorOf(t)
	assert.Equal(t, CodeTokenRejected, code)
	assert.Contains(t, msg, "expired")
	assert.NotContains(t, h.logs.String(), tokens[0])
}
