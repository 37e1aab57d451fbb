package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
	"github.com/maasflow/maasflow/shared/secrets"
	"github.com/maasflow/maasflow/shared/store"
)

func TestHealthz(t *testing.T) {
	h := newHarness(t)
	r := h.do(call{method: "GET", path: "/api/v1/healthz"})
	require.Equal(t, http.StatusOK, r.status)
	assert.JSONEq(t, `{"status":"ok"}`, string(r.body))
	assert.Equal(t, "application/json", r.header.Get("Content-Type"))
	assert.NotEmpty(t, r.header.Get(HeaderCorrelationID))
}

func TestSiteLifecycle(t *testing.T) {
	h := newHarness(t)
	created := h.mustAdmin(http.StatusCreated, "POST", "/api/v1/admin/maas-sites", map[string]any{
		"name": "dc1", "maas_url": "http://maas.dc1:5240/MAAS", "description": "first region",
		"policy": map[string]any{"auto_claim_new": true, "deploy_retries": 2},
	})
	id := created["id"].(string)
	assert.Equal(t, "active", created["status"])
	assert.Equal(t, false, created["credentials_set"])
	eff := created["effective_policy"].(map[string]any)
	assert.Equal(t, true, eff["auto_claim_new"])
	assert.InDelta(t, 2, eff["deploy_retries"], 0)
	assert.Equal(t, true, eff["strict_pxe_preflight"], "defaults fill what the site leaves unset")

	got := h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/maas-sites/"+id, nil)
	assert.Equal(t, "dc1", got["name"])

	list := h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/maas-sites", nil)
	require.Len(t, list["items"], 1)

	// Merge patch: set one field, clear another back to inherit.
	patched := h.mustAdmin(http.StatusOK, "PATCH", "/api/v1/admin/maas-sites/"+id, map[string]any{
		"description": "renamed", "policy": map[string]any{"deploy_retries": nil, "storage_layout": "lvm"},
	})
	pol := patched["policy"].(map[string]any)
	assert.Equal(t, true, pol["auto_claim_new"], "untouched policy fields stay")
	assert.NotContains(t, pol, "deploy_retries", "null clears a field")
	assert.Equal(t, "lvm", pol["storage_layout"])
	assert.InDelta(t, 1, patched["effective_policy"].(map[string]any)["deploy_retries"], 0)
	assert.Equal(t, "renamed", patched["description"])

	disabled := h.mustAdmin(http.StatusOK, "DELETE", "/api/v1/admin/maas-sites/"+id, nil)
	assert.Equal(t, "disabled", disabled["status"])
	enabled := h.mustAdmin(http.StatusOK, "PATCH", "/api/v1/admin/maas-sites/"+id, map[string]any{"status": "active"})
	assert.Equal(t, "active", enabled["status"])

	r := h.admin("GET", "/api/v1/admin/maas-sites/nope", nil)
	assert.Equal(t, http.StatusNotFound, r.status)
	code, _ := r.errorOf(t)
	assert.Equal(t, CodeNotFound, code)
}

// TestValidationNamesField runs every validation error through the handler
// and checks that the message names the field.
func TestValidationNamesField(t *testing.T) {
	h := newHarness(t)
	fx := h.fixture()
	sites := "/api/v1/admin/maas-sites"
	site := sites + "/" + fx.site
	goodSite := func(mod func(m map[string]any)) map[string]any {
		m := map[string]any{"name": "x1", "maas_url": "http://m:5240/MAAS"}
		mod(m)
		return m
	}
	goodProfile := func(mod func(m map[string]any)) map[string]any {
		m := map[string]any{"name": "p1", "architecture": "amd64/generic", "distro_series": "jammy"}
		mod(m)
		return m
	}
	goodOnboarding := func(mod func(m map[string]any)) map[string]any {
		m := fx.onboarding("node-a")
		mod(m)
		return m
	}
	items := func(bad map[string]any) map[string]any {
		rows := []any{}
		for i := range 3 {
			rows = append(rows, map[string]any{"hostname": "c07u31", "interface": "enp" + string(rune('a'+i)), "ipv4_cidr": "172.30.9.61/31"})
		}
		return map[string]any{"items": append(rows, bad)}
	}
	tests := []struct {
		name   string
		method string
		path   string
		body   any
		status int
		code   string
		field  string
	}{
		{"site unknown field", "POST", sites, goodSite(func(m map[string]any) { m["colour"] = "red" }), 400, CodeInvalidRequest, "colour"},
		{"site missing name", "POST", sites, goodSite(func(m map[string]any) { delete(m, "name") }), 400, CodeInvalidRequest, "name"},
		{"site bad url", "POST", sites, goodSite(func(m map[string]any) { m["maas_url"] = "maas:5240" }), 400, CodeInvalidRequest, "maas_url"},
		{"site url with credentials", "POST", sites, goodSite(func(m map[string]any) { m["maas_url"] = "http://u:p@m/MAAS" }), 400, CodeInvalidRequest, "maas_url"},
		{"site wrong type", "POST", sites, goodSite(func(m map[string]any) { m["name"] = 7 }), 400, CodeInvalidRequest, "name"},
		{"site policy range", "POST", sites, goodSite(func(m map[string]any) { m["policy"] = map[string]any{"deploy_retries": 9} }), 400, CodeInvalidRequest, "policy.deploy_retries"},
		{"site policy unknown", "POST", sites, goodSite(func(m map[string]any) { m["policy"] = map[string]any{"retries": 1} }), 400, CodeInvalidRequest, "policy.retries"},
		{"site policy type", "POST", sites, goodSite(func(m map[string]any) { m["policy"] = map[string]any{"auto_claim_new": "yes"} }), 400, CodeInvalidRequest, "policy.auto_claim_new"},
		{"site bootstrap version", "POST", sites, goodSite(func(m map[string]any) {
			m["policy"] = map[string]any{"bootstrap": map[string]any{"url": "https://b.example/x.tgz"}}
		}), 400, CodeInvalidRequest, "policy.bootstrap.version"},
		{"site duplicate name", "POST", sites, map[string]any{"name": "site-" + strings.TrimPrefix(fx.site, "id-"), "maas_url": "http://m/MAAS"}, 0, "", ""},
		{"site not json", "POST", sites, "name=x", 400, CodeInvalidRequest, "request body"},
		{"site empty body", "POST", sites, "", 400, CodeInvalidRequest, "request body"},
		{"site trailing data", "POST", sites, `{"name":"a","maas_url":"http://m/"} {}`, 400, CodeInvalidRequest, "request body"},
		{"patch status", "PATCH", site, map[string]any{"status": "gone"}, 400, CodeInvalidRequest, "status"},
		{"patch policy layout", "PATCH", site, map[string]any{"policy": map[string]any{"storage_layout": "zfs"}}, 400, CodeInvalidRequest, "policy.storage_layout"},
		{"patch policy not object", "PATCH", site, map[string]any{"policy": []int{1}}, 400, CodeInvalidRequest, "policy"},
		{"patch name type", "PATCH", site, map[string]any{"name": 5}, 400, CodeInvalidRequest, "name"},
		{"patch unknown field", "PATCH", site, map[string]any{"architecture": "amd64/generic"}, 400, CodeInvalidRequest, "architecture"},
		{"credentials key form", "POST", site + "/credentials", map[string]any{"maas_api_key": "nocolons", "bmc_username": "u", "bmc_password": "p"}, 400, CodeInvalidRequest, "maas_api_key"},
		{"credentials no password", "POST", site + "/credentials", map[string]any{"maas_api_key": "a:b:c", "bmc_username": "u"}, 400, CodeInvalidRequest, "bmc_password"},
		{"credentials no user", "POST", site + "/credentials", map[string]any{"maas_api_key": "a:b:c", "bmc_password": "p"}, 400, CodeInvalidRequest, "bmc_username"},
		{"credentials unknown", "POST", site + "/credentials", map[string]any{"maas_api_key": "a:b:c", "bmc_username": "u", "bmc_password": "p", "ssh_key": "x"}, 400, CodeInvalidRequest, "ssh_key"},
		{"profile architecture", "POST", site + "/profiles", goodProfile(func(m map[string]any) { delete(m, "architecture") }), 400, CodeInvalidRequest, "architecture"},
		{"profile series", "POST", site + "/profiles", goodProfile(func(m map[string]any) { m["distro_series"] = "Jammy Jellyfish" }), 400, CodeInvalidRequest, "distro_series"},
		{"profile policy", "POST", site + "/profiles", goodProfile(func(m map[string]any) { m["policy"] = map[string]any{"token_ttl_seconds": 1} }), 400, CodeInvalidRequest, "policy.token_ttl_seconds"},
		{"profile enrollment url", "POST", site + "/profiles", goodProfile(func(m map[string]any) { m["policy"] = map[string]any{"enrollment_url": "ftp://x"} }), 400, CodeInvalidRequest, "policy.enrollment_url"},
		{"profile patch name", "PATCH", site + "/profiles/" + fx.profile, map[string]any{"name": ""}, 400, CodeInvalidRequest, "name"},
		{"profile patch status type", "PATCH", site + "/profiles/" + fx.profile, map[string]any{"status": true}, 400, CodeInvalidRequest, "status"},
		{"profile patch policy", "PATCH", site + "/profiles/" + fx.profile, map[string]any{"policy": map[string]any{"deploy_retries": 9}}, 400, CodeInvalidRequest, "policy.deploy_retries"},
		{"roce bad cidr", "POST", site + "/roce-assignments", items(map[string]any{"hostname": "c07u31", "interface": "enp9", "ipv4_cidr": "172.30.9.61"}), 400, CodeInvalidRequest, "items[3].ipv4_cidr"},
		{"roce ipv6", "POST", site + "/roce-assignments", items(map[string]any{"hostname": "c07u31", "interface": "enp9", "ipv4_cidr": "fd00::1/64"}), 400, CodeInvalidRequest, "items[3].ipv4_cidr"},
		{"roce bad hostname", "POST", site + "/roce-assignments", items(map[string]any{"hostname": "c07_u31", "interface": "enp9", "ipv4_cidr": "10.0.0.1/31"}), 400, CodeInvalidRequest, "items[3].hostname"},
		{"roce bad interface", "POST", site + "/roce-assignments", items(map[string]any{"hostname": "c07u31", "interface": "a-very-long-interface", "ipv4_cidr": "10.0.0.1/31"}), 400, CodeInvalidRequest, "items[3].interface"},
		{"roce unknown field", "POST", site + "/roce-assignments", items(map[string]any{"hostname": "c07u31", "interface": "enp9", "ipv4_cidr": "10.0.0.1/31", "mtu": 9000}), 400, CodeInvalidRequest, "items[3].mtu"},
		{"roce duplicate", "POST", site + "/roce-assignments", items(map[string]any{"hostname": "C07U31", "interface": "enpa", "ipv4_cidr": "10.0.0.1/31"}), 400, CodeInvalidRequest, "items[3].interface"},
		{"roce empty", "POST", site + "/roce-assignments", map[string]any{"items": []any{}}, 400, CodeInvalidRequest, "items"},
		{"roce list unknown param", "GET", site + "/roce-assignments?host=x", nil, 400, CodeInvalidRequest, "host"},
		{"sku id", "POST", "/api/v1/admin/skus", map[string]any{"id": "H100 SXM", "gpu_model": "H100", "gpus_total": 8}, 400, CodeInvalidRequest, "id"},
		{"sku gpus", "POST", "/api/v1/admin/skus", map[string]any{"id": "h1", "gpu_model": "H100", "gpus_total": 0}, 400, CodeInvalidRequest, "gpus_total"},
		{"sku gpus missing", "POST", "/api/v1/admin/skus", map[string]any{"id": "h1", "gpu_model": "H100"}, 400, CodeInvalidRequest, "gpus_total"},
		{"sku model", "POST", "/api/v1/admin/skus", map[string]any{"id": "h1", "gpus_total": 8}, 400, CodeInvalidRequest, "gpu_model"},
		{"sku duplicate", "POST", "/api/v1/admin/skus", map[string]any{"id": fx.sku, "gpu_model": "H100", "gpus_total": 8}, 409, CodeConflict, "id"},
		{"sku patch model", "PATCH", "/api/v1/admin/skus/" + fx.sku, map[string]any{"gpu_model": "A100"}, 400, CodeInvalidRequest, "gpu_model"},
		{"sku patch active type", "PATCH", "/api/v1/admin/skus/" + fx.sku, map[string]any{"active": "no"}, 400, CodeInvalidRequest, "active"},
		{"onboarding unknown field", "POST", "/api/v1/admin/onboardings", goodOnboarding(func(m map[string]any) { m["pxe_mac"] = "00:11:22:33:44:55" }), 400, CodeInvalidRequest, "pxe_mac"},
		{"onboarding policy override", "POST", "/api/v1/admin/onboardings", goodOnboarding(func(m map[string]any) { m["deploy_retries"] = 3 }), 400, CodeInvalidRequest, "deploy_retries"},
		{"onboarding no hostname", "POST", "/api/v1/admin/onboardings", goodOnboarding(func(m map[string]any) { delete(m, "hostname") }), 400, CodeInvalidRequest, "hostname"},
		{"onboarding bad hostname", "POST", "/api/v1/admin/onboardings", goodOnboarding(func(m map[string]any) { m["hostname"] = "-bad-.example" }), 400, CodeInvalidRequest, "hostname"},
		{"onboarding underscore", "POST", "/api/v1/admin/onboardings", goodOnboarding(func(m map[string]any) { m["hostname"] = "gpu_01" }), 400, CodeInvalidRequest, "hostname"},
		{"onboarding bad ip", "POST", "/api/v1/admin/onboardings", goodOnboarding(func(m map[string]any) { m["ipmi_ip"] = "10.0.0.256" }), 400, CodeInvalidRequest, "ipmi_ip"},
		{"onboarding ipv6", "POST", "/api/v1/admin/onboardings", goodOnboarding(func(m map[string]any) { m["ipmi_ip"] = "fe80::1" }), 400, CodeInvalidRequest, "ipmi_ip"},
		{"onboarding no ip", "POST", "/api/v1/admin/onboardings", goodOnboarding(func(m map[string]any) { delete(m, "ipmi_ip") }), 400, CodeInvalidRequest, "ipmi_ip"},
		{"onboarding no site", "POST", "/api/v1/admin/onboardings", goodOnboarding(func(m map[string]any) { delete(m, "site_id") }), 400, CodeInvalidRequest, "site_id"},
		{"onboarding unknown site", "POST", "/api/v1/admin/onboardings", goodOnboarding(func(m map[string]any) { m["site_id"] = "nope" }), 422, CodeInvalidReference, "site_id"},
		{"onboarding unknown profile", "POST", "/api/v1/admin/onboardings", goodOnboarding(func(m map[string]any) { m["profile_id"] = "nope" }), 422, CodeInvalidReference, "profile_id"},
		{"onboarding unknown sku", "POST", "/api/v1/admin/onboardings", goodOnboarding(func(m map[string]any) { m["sku_id"] = "nope" }), 422, CodeInvalidReference, "sku_id"},
		{"onboarding list status", "GET", "/api/v1/admin/onboardings?status=done", nil, 400, CodeInvalidRequest, "status"},
		{"onboarding list limit", "GET", "/api/v1/admin/onboardings?limit=0", nil, 400, CodeInvalidRequest, "limit"},
		{"onboarding list hostname", "GET", "/api/v1/admin/onboardings?hostname=a_b", nil, 400, CodeInvalidRequest, "hostname"},
		{"onboarding list unknown", "GET", "/api/v1/admin/onboardings?sort=asc", nil, 400, CodeInvalidRequest, "sort"},
		{"onboarding list cursor", "GET", "/api/v1/admin/onboardings?cursor=garbage", nil, 400, CodeInvalidRequest, "cursor"},
		{"audit limit", "GET", "/api/v1/admin/audit?limit=x", nil, 400, CodeInvalidRequest, "limit"},
		{"enroll no token", "POST", "/api/v1/nodes/n1/enroll", map[string]any{}, 400, CodeInvalidRequest, "token"},
		{"enroll unknown field", "POST", "/api/v1/nodes/n1/enroll", map[string]any{"token": "t", "node": "n1"}, 400, CodeInvalidRequest, "node"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.status == 0 {
				// The duplicate-name row needs the fixture's real name.
				s := h.mustAdmin(http.StatusOK, "GET", site, nil)
				tc.body = map[string]any{"name": s["name"], "maas_url": "http://m/MAAS"}
				tc.status, tc.code, tc.field = 409, CodeConflict, "name"
			}
			r := h.admin(tc.method, tc.path, tc.body)
			require.Equal(t, tc.status, r.status, "%s", r.body)
			code, msg := r.errorOf(t)
			assert.Equal(t, tc.code, code)
			assert.True(t, strings.HasPrefix(msg, tc.field+": "), "message %q names %q", msg, tc.field)
			assert.Equal(t, tc.field, r.json(t)["error"].(map[string]any)["field"])
		})
	}
}

func TestCredentialsAreWriteOnly(t *testing.T) {
	h := newHarness(t)
	id := h.mustAdmin(http.StatusCreated, "POST", "/api/v1/admin/maas-sites", map[string]any{"name": "dc1", "maas_url": "http://m/MAAS"})["id"].(string)

	r := h.admin("POST", "/api/v1/admin/maas-sites/"+id+"/credentials",
		map[string]any{"maas_api_key": seedAPIKey, "bmc_username": "maasflow", "bmc_password": seedBMCPass})
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	assert.Equal(t, true, r.json(t)["credentials_set"])

	creds, err := secrets.GetSiteCredentials(context.Background(), h.secrets, id)
	require.NoError(t, err)
	assert.Equal(t, seedAPIKey, creds.MAASAPIKey.Reveal())
	assert.Equal(t, "maasflow", creds.BMCUsername)
	assert.Equal(t, seedBMCPass, creds.BMCPassword.Reveal())

	got := h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/maas-sites/"+id, nil)
	assert.Equal(t, true, got["credentials_set"])

	r = h.admin("POST", "/api/v1/admin/maas-sites/missing/credentials", map[string]any{"maas_api_key": "a:b:c", "bmc_username": "u", "bmc_password": "p"})
	assert.Equal(t, http.StatusNotFound, r.status)
	_, err = h.secrets.Get(context.Background(), domain.SiteCredentialsSecretName("missing"))
	var nf *secrets.SecretNotFoundError
	assert.ErrorAs(t, err, &nf, "nothing is written for an unknown site")
}

func TestProbe(t *testing.T) {
	h := newHarness(t)
	id := h.mustAdmin(http.StatusCreated, "POST", "/api/v1/admin/maas-sites", map[string]any{"name": "dc1", "maas_url": "http://maas.dc1:5240/MAAS"})["id"].(string)
	probe := "/api/v1/admin/maas-sites/" + id + "/probe"

	r := h.admin("POST", probe, nil)
	require.Equal(t, http.StatusUnprocessableEntity, r.status)
	code, msg := r.errorOf(t)
	assert.Equal(t, CodeCredentialsUnset, code)
	assert.Contains(t, msg, "maas_api_key")

	h.mustAdmin(http.StatusOK, "POST", "/api/v1/admin/maas-sites/"+id+"/credentials",
		map[string]any{"maas_api_key": seedAPIKey, "bmc_username": "maasflow", "bmc_password": seedBMCPass})

	ok := h.mustAdmin(http.StatusOK, "POST", probe, nil)
	assert.Equal(t, true, ok["healthy"])
	assert.Equal(t, "3.5.4", ok["version"])
	assert.Equal(t, []any{"networks-management"}, ok["capabilities"])
	require.Len(t, h.prober.calls, 1)
	assert.Equal(t, "http://maas.dc1:5240/MAAS", h.prober.calls[0].url)
	assert.Equal(t, seedAPIKey, h.prober.calls[0].key.Reveal())
	site := h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/maas-sites/"+id, nil)
	assert.Equal(t, true, site["probe"].(map[string]any)["healthy"], "the result is stored on the site")

	// A failing probe is an answer, not an error; even an error text that
	// quotes the key does not carry it through.
	h.prober.set(maas.ProbeResult{}, errors.New("dial tcp: connection refused (key "+seedAPIKey+")"))
	bad := h.mustAdmin(http.StatusOK, "POST", probe, nil)
	assert.Equal(t, false, bad["healthy"])
	assert.Contains(t, bad["error"], "connection refused")
	assert.NotContains(t, bad["error"], seedAPIKey)
	site = h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/maas-sites/"+id, nil)
	assert.Equal(t, false, site["probe"].(map[string]any)["healthy"])

	// A key that works but belongs to a user who is not a MAAS admin
	// cannot onboard anything: the probe says so.
	h.prober.set(maas.ProbeResult{Version: "3.5.4", Username: "operator", IsAdmin: false}, nil)
	notAdmin := h.mustAdmin(http.StatusOK, "POST", probe, nil)
	assert.Equal(t, false, notAdmin["healthy"])
	assert.Contains(t, notAdmin["error"], `user "operator" is not a MAAS administrator`)

	assert.Equal(t, http.StatusNotFound, h.admin("POST", "/api/v1/admin/maas-sites/nope/probe", nil).status)
}

// A region that lacks a script one of the site's active profiles names
// cannot commission that profile's machines: the probe asks for exactly
// those scripts, and a missing one makes it unhealthy, naming it.
func TestProbeChecksTheProfilesScripts(t *testing.T) {
	h := newHarness(t)
	id := h.mustAdmin(http.StatusCreated, "POST", "/api/v1/admin/maas-sites", map[string]any{"name": "dc1", "maas_url": "http://maas.dc1:5240/MAAS"})["id"].(string)
	h.mustAdmin(http.StatusOK, "POST", "/api/v1/admin/maas-sites/"+id+"/credentials",
		map[string]any{"maas_api_key": seedAPIKey, "bmc_username": "maasflow", "bmc_password": seedBMCPass})
	profiles := "/api/v1/admin/maas-sites/" + id + "/profiles"
	h.mustAdmin(http.StatusCreated, "POST", profiles, map[string]any{"name": "h100", "architecture": "amd64/generic", "distro_series": "jammy",
		"commissioning_scripts": []string{"firmware-update", "raid-config"}, "testing_scripts": []string{"gpu-burn"}})
	retired := h.mustAdmin(http.StatusCreated, "POST", profiles, map[string]any{"name": "old", "architecture": "amd64/generic", "distro_series": "jammy",
		"commissioning_scripts": []string{"legacy-bios"}})
	h.mustAdmin(http.StatusOK, "DELETE", profiles+"/"+retired["id"].(string), nil)

	h.prober.set(maas.ProbeResult{Version: "3.5.4", Username: "maasflow", IsAdmin: true}, nil)
	h.prober.missing = []string{"gpu-burn", "legacy-bios"}
	probe := h.mustAdmin(http.StatusOK, "POST", "/api/v1/admin/maas-sites/"+id+"/probe", nil)
	require.Len(t, h.prober.calls, 1)
	assert.ElementsMatch(t, []string{"firmware-update", "raid-config", "gpu-burn"}, h.prober.calls[0].scripts,
		"the active profiles' scripts, once each; a disabled profile's are not needed")
	assert.Equal(t, false, probe["healthy"])
	assert.Equal(t, []any{"gpu-burn"}, probe["missing_scripts"])
	assert.Contains(t, probe["error"], "gpu-burn")
	site := h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/maas-sites/"+id, nil)
	assert.Equal(t, []any{"gpu-burn"}, site["probe"].(map[string]any)["missing_scripts"], "kept on the site")

	h.prober.missing = nil
	assert.Equal(t, true, h.mustAdmin(http.StatusOK, "POST", "/api/v1/admin/maas-sites/"+id+"/probe", nil)["healthy"])
}

func TestProfiles(t *testing.T) {
	h := newHarness(t)
	site := h.mustAdmin(http.StatusCreated, "POST", "/api/v1/admin/maas-sites", map[string]any{
		"name": "dc1", "maas_url": "http://m/MAAS", "policy": map[string]any{"auto_claim_new": true, "storage_layout": "lvm"},
	})["id"].(string)
	base := "/api/v1/admin/maas-sites/" + site + "/profiles"

	p := h.mustAdmin(http.StatusCreated, "POST", base, map[string]any{
		"name": "h100-jammy", "architecture": "amd64/generic", "distro_series": "jammy", "hwe_kernel": "hwe-22.04",
		"policy": map[string]any{"auto_claim_new": false, "roce_phase2": true},
	})
	pid := p["id"].(string)
	assert.Equal(t, site, p["site_id"])
	eff := p["effective_policy"].(map[string]any)
	assert.Equal(t, false, eff["auto_claim_new"], "the profile overrides the site")
	assert.Equal(t, "lvm", eff["storage_layout"], "the profile inherits what it leaves unset")
	assert.Equal(t, true, eff["roce_phase2"])
	assert.Equal(t, true, eff["enable_ssh"], "built-in default")

	got := h.mustAdmin(http.StatusOK, "GET", base+"/"+pid, nil)
	assert.Equal(t, "h100-jammy", got["name"])
	assert.Equal(t, eff, got["effective_policy"])
	list := h.mustAdmin(http.StatusOK, "GET", base, nil)
	require.Len(t, list["items"], 1)
	assert.Contains(t, list["items"].([]any)[0], "effective_policy")

	// A site change shows through the profile's effective policy.
	h.mustAdmin(http.StatusOK, "PATCH", "/api/v1/admin/maas-sites/"+site, map[string]any{"policy": map[string]any{"storage_layout": "flat"}})
	got = h.mustAdmin(http.StatusOK, "GET", base+"/"+pid, nil)
	assert.Equal(t, "flat", got["effective_policy"].(map[string]any)["storage_layout"])

	patched := h.mustAdmin(http.StatusOK, "PATCH", base+"/"+pid, map[string]any{"distro_series": "noble", "policy": map[string]any{"auto_claim_new": nil}})
	assert.Equal(t, "noble", patched["distro_series"])
	assert.Equal(t, true, patched["effective_policy"].(map[string]any)["auto_claim_new"], "cleared: inherits the site again")

	disabled := h.mustAdmin(http.StatusOK, "DELETE", base+"/"+pid, nil)
	assert.Equal(t, "disabled", disabled["status"])

	assert.Equal(t, http.StatusNotFound, h.admin("GET", base+"/nope", nil).status)
	assert.Equal(t, http.StatusNotFound, h.admin("GET", "/api/v1/admin/maas-sites/nope/profiles", nil).status)
	assert.Equal(t, http.StatusNotFound, h.admin("POST", "/api/v1/admin/maas-sites/nope/profiles",
		map[string]any{"name": "x", "architecture": "amd64/generic", "distro_series": "jammy"}).status)
}

func TestRoCEAssignments(t *testing.T) {
	h := newHarness(t)
	site := h.mustAdmin(http.StatusCreated, "POST", "/api/v1/admin/maas-sites", map[string]any{"name": "dc1", "maas_url": "http://m/MAAS"})["id"].(string)
	base := "/api/v1/admin/maas-sites/" + site + "/roce-assignments"

	// The requirements API boundary §4.2 body.
	out := h.mustAdmin(http.StatusOK, "POST", base, map[string]any{"items": []any{
		map[string]any{"hostname": "c07u31", "interface": "enp28s0np0", "ipv4_cidr": "172.30.9.61/31"},
		map[string]any{"hostname": "c07u31", "interface": "enp29s0np0", "ipv4_cidr": "172.29.1.219/31"},
		map[string]any{"hostname": "c07u32", "interface": "enp28s0np0", "ipv4_cidr": "172.30.9.63/31"},
	}})
	require.Len(t, out["items"], 3)

	// Upsert again: same rows update, nothing duplicates.
	h.mustAdmin(http.StatusOK, "POST", base, map[string]any{"items": []any{
		map[string]any{"hostname": "C07U31", "interface": "enp28s0np0", "ipv4_cidr": "172.30.9.65/31"},
	}})
	all := h.mustAdmin(http.StatusOK, "GET", base, nil)["items"].([]any)
	require.Len(t, all, 3)
	host := h.mustAdmin(http.StatusOK, "GET", base+"?hostname=c07u31", nil)["items"].([]any)
	require.Len(t, host, 2)
	cidrs := []string{}
	for _, it := range host {
		cidrs = append(cidrs, it.(map[string]any)["ipv4_cidr"].(string))
	}
	assert.ElementsMatch(t, []string{"172.30.9.65/31", "172.29.1.219/31"}, cidrs)

	// All or nothing: a bad fourth row writes none of the three before it.
	r := h.admin("POST", base, map[string]any{"items": []any{
		map[string]any{"hostname": "c07u40", "interface": "enp1", "ipv4_cidr": "10.0.0.1/31"},
		map[string]any{"hostname": "c07u40", "interface": "enp2", "ipv4_cidr": "10.0.0.3/31"},
		map[string]any{"hostname": "c07u40", "interface": "enp3", "ipv4_cidr": "10.0.0.5/31"},
		map[string]any{"hostname": "c07u40", "interface": "enp4", "ipv4_cidr": "10.0.0.300/31"},
	}})
	require.Equal(t, http.StatusBadRequest, r.status)
	_, msg := r.errorOf(t)
	assert.Contains(t, msg, "items[3].ipv4_cidr")
	assert.Empty(t, h.mustAdmin(http.StatusOK, "GET", base+"?hostname=c07u40", nil)["items"])

	id := host[0].(map[string]any)["id"].(string)
	h.mustAdmin(http.StatusNoContent, "DELETE", base+"/"+id, nil)
	assert.Len(t, h.mustAdmin(http.StatusOK, "GET", base, nil)["items"], 2)
	assert.Equal(t, http.StatusNotFound, h.admin("DELETE", base+"/"+id, nil).status)
	assert.Equal(t, http.StatusNotFound, h.admin("GET", "/api/v1/admin/maas-sites/nope/roce-assignments", nil).status)
}

func TestSKUs(t *testing.T) {
	h := newHarness(t)
	created := h.mustAdmin(http.StatusCreated, "POST", "/api/v1/admin/skus", map[string]any{"id": "h100-sxm-8", "gpu_model": "H100 SXM", "gpus_total": 8})
	assert.Equal(t, true, created["active"], "new entries are active unless told otherwise")
	h.mustAdmin(http.StatusCreated, "POST", "/api/v1/admin/skus", map[string]any{"id": "a100-4", "gpu_model": "A100", "gpus_total": 4, "active": false})

	assert.Len(t, h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/skus", nil)["items"], 2)
	got := h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/skus/h100-sxm-8", nil)
	assert.Equal(t, "H100 SXM", got["gpu_model"])
	assert.InDelta(t, 8, got["gpus_total"], 0)

	off := h.deactivateSKU("h100-sxm-8")
	assert.Equal(t, false, off["active"])
	assert.Equal(t, false, h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/skus/h100-sxm-8", nil)["active"])
	assert.Equal(t, http.StatusNotFound, h.admin("GET", "/api/v1/admin/skus/nope", nil).status)
	assert.Equal(t, http.StatusNotFound, h.admin("PATCH", "/api/v1/admin/skus/nope", map[string]any{"active": true}).status)
}

// failAfterSecret is a store whose site updates fail once the secret has
// been written, and the secrets store that flips it.
type failAfterSecret struct {
	Store
	written *bool
}

func (s failAfterSecret) UpdateSite(ctx context.Context, id string, mutate store.Mutator[domain.Site]) (domain.Site, error) {
	if *s.written {
		return domain.Site{}, errors.New("table unavailable")
	}
	return s.Store.UpdateSite(ctx, id, mutate)
}

type flagOnPut struct {
	SecretStore
	written *bool
}

func (s flagOnPut) Put(ctx context.Context, name string, value []byte) error {
	err := s.SecretStore.Put(ctx, name, value)
	*s.written = err == nil
	return err
}

// New credentials are unproven: a failure after the secret is replaced must
// not leave the site showing the old key's healthy probe, which would let
// onboardings run on the new key without a probe.
func TestCredentialsWriteFailureLeavesNoHealthyProbe(t *testing.T) {
	h := newHarness(t)
	id := h.readySite("dc1")
	written := false
	handler := New(Config{}, Deps{
		Store: failAfterSecret{Store: h.store, written: &written}, Secrets: flagOnPut{SecretStore: h.secrets, written: &written},
		Starter: h.starter, Completer: h.completer, Prober: h.prober,
		Auth: NewStaticTokens(map[string]Principal{adminToken: {Subject: "alice", Admin: true}}), Clock: h.clock,
	})
	req := httptest.NewRequestWithContext(t.Context(), "POST", "/api/v1/admin/maas-sites/"+id+"/credentials",
		strings.NewReader(`{"maas_api_key":"new:key:value","bmc_username":"maasflow","bmc_password":"new-password"}`))
	req.Header.Set("Authorization", "Bearer "+adminToken)
	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, req)
	require.Equal(t, http.StatusInternalServerError, rec.Code, "%s", rec.Body)
	require.True(t, written, "the secret was replaced")

	site, err := h.store.GetSite(context.Background(), id)
	require.NoError(t, err)
	assert.Nil(t, site.Probe, "the old key's probe no longer vouches for the site")
}

// TestMovingASiteClearsItsCredentials reproduces a defect a security review found: a PATCH to
// another URL used to make the next probe send the site's key there.
func TestMovingASiteClearsItsCredentials(t *testing.T) {
	h := newHarness(t)
	id := h.readySite("dc1")
	site := "/api/v1/admin/maas-sites/" + id

	// The same URL again changes nothing.
	same := h.mustAdmin(http.StatusOK, "PATCH", site, map[string]any{"maas_url": "http://maas.example:5240/MAAS"})
	assert.Equal(t, true, same["credentials_set"])

	moved := h.mustAdmin(http.StatusOK, "PATCH", site, map[string]any{"maas_url": "http://elsewhere.example/MAAS"})
	assert.Equal(t, false, moved["credentials_set"])
	assert.Nil(t, moved["probe"])

	creds, err := secrets.GetSiteCredentials(context.Background(), h.secrets, id)
	require.NoError(t, err)
	assert.Empty(t, creds.MAASAPIKey.Reveal(), "the stored key is gone")
	assert.Empty(t, creds.BMCPassword.Reveal(), "the stored BMC password is gone")

	probes := h.prober.probes()
	r := h.admin("POST", site+"/probe", nil)
	require.Equal(t, http.StatusUnprocessableEntity, r.status, "%s", r.body)
	code, _ := r.errorOf(t)
	assert.Equal(t, CodeCredentialsUnset, code)
	assert.Equal(t, probes, h.prober.probes(), "nothing was sent to the new URL")

	// New credentials for the new region, then a probe, make it ready again.
	h.mustAdmin(http.StatusOK, "POST", site+"/credentials", map[string]any{"maas_api_key": "a:b:c", "bmc_username": "u", "bmc_password": "p"})
	h.mustAdmin(http.StatusOK, "POST", site+"/probe", nil)
	calls := h.prober.probes()
	require.Len(t, calls, len(probes)+1)
	assert.Equal(t, "http://elsewhere.example/MAAS", calls[len(calls)-1].url)
	assert.Equal(t, "a:b:c", calls[len(calls)-1].key.Reveal())
}

func (f *fakeProber) probes() []probeCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]probeCall(nil), f.calls...)
}

// One upsert request is one store transaction, all or none: it carries no
// more rows than a transaction holds beside the site check, the design
// check and the audit entry.
func TestRoCEUpsertFitsOneTransaction(t *testing.T) {
	h := newHarness(t)
	site := h.mustAdmin(http.StatusCreated, "POST", "/api/v1/admin/maas-sites", map[string]any{"name": "dc1", "maas_url": "http://m/MAAS"})["id"].(string)
	base := "/api/v1/admin/maas-sites/" + site + "/roce-assignments"
	batch := func(n int) map[string]any {
		items := make([]any, n)
		for i := range n {
			items[i] = map[string]any{"hostname": fmt.Sprintf("gpu%03d", i), "interface": "rail0", "ipv4_cidr": fmt.Sprintf("10.1.%d.%d/31", i/100, 2*(i%100))}
		}
		return map[string]any{"items": items}
	}
	h.mustAdmin(http.StatusOK, "POST", base, batch(97))
	r := h.admin("POST", base, batch(98))
	require.Equal(t, http.StatusBadRequest, r.status, "%s", r.body)
	assert.Equal(t, "items", r.json(t)["error"].(map[string]any)["field"])
}
