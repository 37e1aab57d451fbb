package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/maas"
)

func TestCorrelationID(t *testing.T) {
	h := newHarness(t)
	tests := []struct {
		name, header string
		kept         bool
	}{
		{"valid is kept", "req-2026.03.02:abc_1", true},
		{"absent is generated", "", false},
		{"invalid is replaced", "bad id\nwith newline", false},
		{"too long is replaced", strings.Repeat("a", 200), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := call{method: "GET", path: "/api/v1/admin/maas-sites/nope", token: adminToken, header: map[string]string{}}
			if tc.header != "" {
				c.header[HeaderCorrelationID] = tc.header
			}
			r := h.do(c)
			got := r.header.Get(HeaderCorrelationID)
			require.NotEmpty(t, got)
			if tc.kept {
				assert.Equal(t, tc.header, got)
			} else {
				assert.NotEqual(t, tc.header, got)
			}
			_, _ = r.errorOf(t) // checks the envelope carries the same id
		})
	}
}

func TestUnknownRoutesAndMethodsAnswerJSON(t *testing.T) {
	h := newHarness(t)
	r := h.admin("GET", "/api/v1/admin/nothing-here", nil)
	require.Equal(t, http.StatusNotFound, r.status)
	code, _ := r.errorOf(t)
	assert.Equal(t, CodeNotFound, code)

	r = h.admin("PUT", "/api/v1/admin/maas-sites", map[string]any{})
	require.Equal(t, http.StatusMethodNotAllowed, r.status)
	code, _ = r.errorOf(t)
	assert.Equal(t, CodeMethodNotAllowed, code)
	assert.Equal(t, "GET, POST", r.header.Get("Allow"))
}

func TestBodyLimit(t *testing.T) {
	h := newHarness(t)
	big := `{"name":"x","maas_url":"http://m/","description":"` + strings.Repeat("a", 2<<20) + `"}`
	r := h.admin("POST", "/api/v1/admin/maas-sites", big)
	require.Equal(t, http.StatusRequestEntityTooLarge, r.status)
	code, _ := r.errorOf(t)
	assert.Equal(t, CodePayloadTooLarge, code)
}

func TestAuditTrail(t *testing.T) {
	h := newHarness(t)
	r := h.do(call{method: "POST", path: "/api/v1/admin/maas-sites", token: adminToken,
		body: map[string]any{"name": "dc1", "maas_url": "http://m/MAAS"}, header: map[string]string{HeaderCorrelationID: "corr-1"}})
	require.Equal(t, http.StatusCreated, r.status)
	id := r.json(t)["id"].(string)
	h.clock.Advance(time.Second)
	h.do(call{method: "PATCH", path: "/api/v1/admin/maas-sites/" + id, token: adminToken,
		body: map[string]any{"policy": map[string]any{"deploy_retries": -1}}, header: map[string]string{HeaderCorrelationID: "corr-2"}})
	h.clock.Advance(time.Second)
	h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/maas-sites", nil) // reads are not audited

	out := h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/audit?limit=10", nil)
	items := out["items"].([]any)
	require.Len(t, items, 2)
	newest := items[0].(map[string]any)
	assert.Equal(t, "site.update", newest["action"])
	assert.Equal(t, "alice", newest["actor"])
	assert.Equal(t, "site:"+id, newest["target"])
	assert.Equal(t, "failure:"+CodeInvalidRequest, newest["result"])
	assert.Equal(t, "corr-2", newest["correlation_id"])
	oldest := items[1].(map[string]any)
	assert.Equal(t, "site.create", oldest["action"])
	assert.Equal(t, "success", oldest["result"])
	assert.Equal(t, "site:"+id, oldest["target"])
	assert.Equal(t, "corr-1", oldest["correlation_id"])

	assert.Len(t, h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/audit?limit=1", nil)["items"], 1)
}

// TestEveryMutationIsAudited drives each mutating route once and checks an
// audit entry names its action.
func TestEveryMutationIsAudited(t *testing.T) {
	h := newHarness(t)
	fx := h.fixture()
	site := "/api/v1/admin/maas-sites/" + fx.site
	h.mustAdmin(http.StatusOK, "PATCH", site, map[string]any{"description": "d"})
	h.mustAdmin(http.StatusOK, "POST", site+"/roce-assignments", map[string]any{"items": []any{map[string]any{"hostname": "h1", "interface": "e1", "ipv4_cidr": "10.0.0.1/31"}}})
	rows := h.mustAdmin(http.StatusOK, "GET", site+"/roce-assignments", nil)["items"].([]any)
	h.mustAdmin(http.StatusNoContent, "DELETE", site+"/roce-assignments/"+rows[0].(map[string]any)["id"].(string), nil)
	h.mustAdmin(http.StatusOK, "PATCH", site+"/profiles/"+fx.profile, map[string]any{"name": "renamed"})
	h.mustAdmin(http.StatusOK, "DELETE", site+"/profiles/"+fx.profile, nil)
	h.mustAdmin(http.StatusOK, "PATCH", "/api/v1/admin/skus/"+fx.sku, map[string]any{"description": "d"})
	h.mustAdmin(http.StatusOK, "POST", site+"/power-overrides", map[string]any{"hostname": "h1", "bmc_username": "u", "bmc_password": "p"})
	h.deactivateSKU(fx.sku)
	h.mustAdmin(http.StatusConflict, "POST", "/api/v1/admin/skus/"+fx.sku+"/reject", map[string]any{"proposal_id": "none"})
	h.mustAdmin(http.StatusNotFound, "POST", "/api/v1/admin/onboardings/nope/cancel", nil)
	h.mustAdmin(http.StatusNotFound, "POST", "/api/v1/admin/onboardings/nope/mark-manual-intervention", nil)
	h.mustAdmin(http.StatusNotFound, "POST", "/api/v1/admin/onboardings/nope/rerun", nil)
	h.mustAdmin(http.StatusNotFound, "POST", "/api/v1/admin/onboardings/nope/restart-clean", nil)
	h.mustAdmin(http.StatusNotFound, "POST", "/api/v1/admin/onboardings/nope/adopt", nil)
	h.mustAdmin(http.StatusNotFound, "POST", "/api/v1/admin/onboardings/nope/retry", nil)
	h.mustAdmin(http.StatusNotFound, "POST", "/api/v1/admin/onboardings/nope/resume", nil)
	h.mustAdmin(http.StatusBadRequest, "POST", "/api/v1/admin/onboardings/batch", map[string]any{"site_id": fx.site, "profile_id": fx.profile, "sku_id": fx.sku, "nodes": []any{}})
	h.mustAdmin(http.StatusServiceUnavailable, "POST", "/api/v1/admin/reconciliation/run", nil)
	h.mustAdmin(http.StatusServiceUnavailable, "POST", "/api/v1/admin/reconciliation/drift/n1/resolve", map[string]any{"kind": "power_off", "action": "acknowledge", "reason": "r"})
	badDesign := []any{map[string]any{"name": "x", "networks": []any{map[string]any{"name": "n", "cidr": "bad"}}}}
	h.mustAdmin(http.StatusUnprocessableEntity, "POST", site+"/design/plan", map[string]any{"documents": badDesign})
	h.mustAdmin(http.StatusBadRequest, "POST", site+"/design/apply", map[string]any{"documents": badDesign})
	h.mustAdmin(http.StatusServiceUnavailable, "POST", site+"/connector/certificate", map[string]any{"csr": "x"}) // no connector CA here
	h.mustAdmin(http.StatusOK, "DELETE", site, nil)
	h.enroll("node-x", "whatever")
	for _, op := range []string{"retire", "reactivate", "remove", "bootstrap-bundle", "storage-cleanup"} {
		h.mustAdmin(http.StatusNotFound, "POST", "/api/v1/admin/nodes/nope/"+op, nil)
	}
	h.mustAdmin(http.StatusNotFound, "POST", "/api/v1/admin/nodes/nope/decommission", map[string]any{"mode": "full"})
	for _, op := range decommissionRecoveryOps() {
		h.mustAdmin(http.StatusNotFound, "POST", "/api/v1/admin/decommissions/nope/"+string(op.op), nil)
	}
	e := h.enrollable("gpu-audit", seedEnrollToken, time.Hour, "")
	require.Equal(t, http.StatusOK, h.enroll(e.nodeID, seedEnrollToken).status)
	ne, c := h.enrolledNode("gpu-identity", "")
	cert := certOf(t, c.CertificatePEM)
	h.nodeCall("POST", "/node/v1/nodes/"+ne.nodeID+"/tasks/t1/result", map[string]any{"status": "ok"}, cert)
	renewed := decodeCreds(t, h.nodeCall("POST", "/node/v1/nodes/"+ne.nodeID+"/certificate", map[string]any{"csr": newNodeKey(t).csr}, cert))
	decodeCreds(t, h.do(call{method: "POST", path: "/api/v1/nodes/" + ne.nodeID + "/recover",
		body: map[string]any{"recovery_token": renewed.RecoveryToken, "csr": newNodeKey(t).csr}}))

	var mutating []string
	for _, rt := range routeTable() {
		if rt.method != http.MethodGet {
			mutating = append(mutating, rt.action)
			assert.NotEmpty(t, rt.action, "%s %s must name an audit action", rt.method, rt.pattern)
		}
	}
	for _, action := range mutating {
		if action == "onboarding.create" {
			continue // covered by the onboarding tests
		}
		if action == "site.connector.certificate.renew" {
			continue // needs a connector CA: TestConnectorRenewsWithItsCurrentCertificate checks its entry
		}
		assert.NotEmpty(t, h.auditFor(action), "no audit entry for %s", action)
	}
}

func TestPanicsBecomeInternalErrors(t *testing.T) {
	h := newHarness(t)
	h.prober.set(maas.ProbeResult{IsAdmin: true}, nil)
	site := h.readySite("dc1")
	// A nil prober makes the probe handler panic.
	h.handler = New(Config{}, Deps{Store: h.store, Secrets: h.secrets, Auth: NewStaticTokens(map[string]Principal{adminToken: {Subject: "alice", Admin: true}}), Logger: newLogger(h.logs)})
	r := h.admin("POST", "/api/v1/admin/maas-sites/"+site+"/probe", nil)
	require.Equal(t, http.StatusInternalServerError, r.status)
	code, msg := r.errorOf(t)
	assert.Equal(t, CodeInternal, code)
	assert.Equal(t, "internal error", msg)
	assert.Contains(t, h.logs.String(), "handler panic")
}

// TestSeededSecretsNeverLeak runs a whole session, failures included, and
// checks that no seeded secret appears in any response body, log line or
// audit entry.
func TestSeededSecretsNeverLeak(t *testing.T) {
	h := newHarness(t)
	fx := h.fixture() // writes seedAPIKey and seedBMCPass through the API
	site := "/api/v1/admin/maas-sites/" + fx.site

	// Bad credential requests echo nothing back.
	h.admin("POST", site+"/credentials", map[string]any{"maas_api_key": seedBMCPass, "bmc_username": "u", "bmc_password": seedBMCPass})
	h.admin("POST", site+"/credentials", map[string]any{"maas_api_key": seedAPIKey, "bmc_username": "u", "bmc_password": seedBMCPass, "extra": seedBMCPass})
	h.admin("POST", site+"/credentials", `{"maas_api_key":"`+seedAPIKey+`","bmc_password":"`+seedBMCPass)
	h.admin("POST", site+"/credentials", `{"maas_api_key":"`+seedAPIKey+`","bmc_password":`+seedBMCPass+`}`)
	h.admin("POST", site+"/credentials", map[string]any{"maas_api_key": seedAPIKey, "bmc_username": 7, "bmc_password": seedBMCPass})
	h.mustAdmin(http.StatusOK, "POST", site+"/credentials", map[string]any{"maas_api_key": seedAPIKey, "bmc_username": "maasflow", "bmc_password": seedBMCPass})
	// A transport error that quotes the key.
	h.prober.set(maas.ProbeResult{}, errors.New("GET http://m/MAAS/api/2.0/version/ oauth_token="+strings.Split(seedAPIKey, ":")[1]+" "+seedAPIKey+" failed"))
	h.admin("POST", site+"/probe", nil)
	h.prober.set(maas.ProbeResult{Version: "3.5.4", IsAdmin: true}, nil)
	h.mustAdmin(http.StatusOK, "POST", site+"/probe", nil)

	e := h.enrollable("gpu-01", seedEnrollToken, time.Hour, "task-1")
	h.enroll(e.nodeID, seedEnrollToken)
	h.enroll(e.nodeID, seedEnrollToken)
	h.enroll("someone-else", seedEnrollToken)
	h.do(call{method: "POST", path: "/api/v1/nodes/" + e.nodeID + "/enroll", body: `{"token":"` + seedEnrollToken})
	h.do(call{method: "POST", path: "/api/v1/nodes/" + e.nodeID + "/enroll", body: `{"token":` + seedEnrollToken + `}`})
	h.do(call{method: "GET", path: "/api/v1/admin/skus", token: "Bearer-" + adminToken + "x"})
	h.do(call{method: "GET", path: "/api/v1/admin/skus", token: userToken})
	for _, p := range []string{site, site + "/profiles", "/api/v1/admin/maas-sites", "/api/v1/admin/onboardings", "/api/v1/admin/onboardings/" + e.onboardingID, "/api/v1/admin/audit?limit=1000"} {
		h.mustAdmin(http.StatusOK, "GET", p, nil)
	}

	all, err := h.store.ListAudit(t.Context(), 1000)
	require.NoError(t, err)
	auditAll, err := json.Marshal(all)
	require.NoError(t, err)
	haystacks := map[string]string{"responses": h.bodies.String(), "logs": h.logs.String(), "audit": string(auditAll)}
	require.NotEmpty(t, haystacks["logs"])
	secretsSeeded := []string{seedAPIKey, strings.Split(seedAPIKey, ":")[2], strings.Split(seedAPIKey, ":")[1], seedBMCPass, seedEnrollToken, adminToken, userToken}
	for name, hay := range haystacks {
		for _, s := range secretsSeeded {
			assert.NotContains(t, hay, s, "%s leak a seeded secret", name)
		}
	}
}
