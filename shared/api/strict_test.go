package api

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStrictJSON pins the decoder's refusals that encoding/json alone does
// not make: each request below used to be accepted.
func TestStrictJSON(t *testing.T) {
	h := newHarness(t)
	f := h.fixture()
	sites := "/api/v1/admin/maas-sites"
	tests := []struct {
		name, method, path, body string
		field, message           string
	}{
		{"member name in another case", "POST", sites,
			`{"NAME":"s1","maas_url":"http://maas.example/MAAS"}`, "NAME", `did you mean "name"`},
		{"duplicate member", "POST", sites,
			`{"name":"s2","name":"s3","maas_url":"http://maas.example/MAAS"}`, "name", "more than once"},
		{"duplicate member in a nested policy", "POST", sites,
			`{"name":"s4","maas_url":"http://maas.example/MAAS","policy":{"deploy_retries":1,"deploy_retries":9}}`, "policy.deploy_retries", "more than once"},
		{"policy member in another case", "POST", sites,
			`{"name":"s5","maas_url":"http://maas.example/MAAS","policy":{"Deploy_Retries":9}}`, "policy.Deploy_Retries", `did you mean "deploy_retries"`},
		{"policy patch member in another case", "PATCH", sites + "/" + f.site,
			`{"policy":{"STORAGE_LAYOUT":"nonsense"}}`, "policy.STORAGE_LAYOUT", "case-sensitive"},
		{"900 KB architecture", "POST", sites + "/" + f.site + "/profiles",
			`{"name":"p1","architecture":"` + strings.Repeat("a", 900<<10) + `","distro_series":"jammy"}`, "architecture", "at most"},
		{"long architecture under the member bound", "POST", sites + "/" + f.site + "/profiles",
			`{"name":"p2","architecture":"` + strings.Repeat("a", 1000) + `","distro_series":"jammy"}`, "architecture", "MAAS architecture"},
		{"long string in an unknown member", "POST", "/api/v1/admin/skus",
			`{"id":"x","gpu_model":"H100","gpus_total":8,"zz":"` + strings.Repeat("z", 5000) + `"}`, "zz", "at most 4096"},
		{"duplicate item member", "POST", sites + "/" + f.site + "/roce-assignments",
			`{"items":[{"hostname":"h1","interface":"eth0","ipv4_cidr":"10.0.0.1/31","interface":"eth1"}]}`, "items[0].interface", "more than once"},
		{"RoCE network instead of a host route", "POST", sites + "/" + f.site + "/roce-assignments",
			`{"items":[{"hostname":"h1","interface":"eth0","ipv4_cidr":"10.0.0.0/8"}]}`, "items[0].ipv4_cidr", "/31 or /32"},
		{"RoCE /24 interface address", "POST", sites + "/" + f.site + "/roce-assignments",
			`{"items":[{"hostname":"h1","interface":"eth0","ipv4_cidr":"10.20.0.61/24"}]}`, "items[0].ipv4_cidr", "not a /24"},
		{"RoCE loopback", "POST", sites + "/" + f.site + "/roce-assignments",
			`{"items":[{"hostname":"h1","interface":"eth0","ipv4_cidr":"127.0.0.1/32"}]}`, "items[0].ipv4_cidr", "unicast"},
		{"deep nesting", "POST", sites,
			`{"name":"s6","maas_url":"http://maas.example/MAAS","policy":{"bootstrap":` + strings.Repeat(`[`, 40) + strings.Repeat(`]`, 40) + `}}`, "policy.bootstrap", "deeper"},
		{"body on a GET", "GET", sites, `{"name":"x"}`, "request body", "takes no body"},
		{"body on a DELETE", "DELETE", sites + "/" + f.site, `{"status":"active"}`, "request body", "takes no body"},
		{"body on probe", "POST", sites + "/" + f.site + "/probe", `{"maas_url":"http://elsewhere/"}`, "request body", "takes no body"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := h.do(call{method: tc.method, path: tc.path, body: tc.body, token: adminToken})
			require.Equal(t, http.StatusBadRequest, r.status, "%s", r.body)
			code, msg := r.errorOf(t)
			assert.Equal(t, CodeInvalidRequest, code)
			field, _ := r.json(t)["error"].(map[string]any)["field"].(string)
			assert.True(t, strings.HasPrefix(field, tc.field), "field %q, want %q", field, tc.field)
			assert.Contains(t, msg, tc.message)
			assert.Less(t, len(r.body), 1024, "the answer never echoes the value")
		})
	}

	// What stays accepted: exact names, a /31 and a /32, white space as the
	// body of a route that takes none.
	h.mustAdmin(http.StatusOK, "POST", sites+"/"+f.site+"/roce-assignments",
		`{"items":[{"hostname":"h1","interface":"eth0","ipv4_cidr":"172.30.9.61/31"},{"hostname":"h1","interface":"eth1","ipv4_cidr":"172.29.1.219/32"}]}`)
	r := h.do(call{method: "GET", path: sites, body: " \n", token: adminToken})
	assert.Equal(t, http.StatusOK, r.status, "%s", r.body)
	// The refused site creations wrote nothing.
	list := h.mustAdmin(http.StatusOK, "GET", sites, nil)
	assert.Len(t, list["items"], 1)
}

func TestQueryParametersAreBounded(t *testing.T) {
	h := newHarness(t)
	long := strings.Repeat("q", 10<<10)
	r := h.admin("GET", "/api/v1/admin/onboardings?cursor="+long, nil)
	require.Equal(t, http.StatusBadRequest, r.status)
	assert.Contains(t, string(r.body), "at most 2048")
	r = h.admin("GET", "/api/v1/admin/onboardings?"+long+"=1", nil)
	require.Equal(t, http.StatusBadRequest, r.status)
	assert.NotContains(t, string(r.body), long[:100])
	assert.NotContains(t, h.logs.String(), long[:100])
}
