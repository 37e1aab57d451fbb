package api

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// openapiSchemas compiles components/schemas of openapi.yaml with a JSON
// Schema 2020-12 validator (OpenAPI 3.1's schema dialect).
func openapiSchemas(t *testing.T) func(name string) *jsonschema.Schema {
	t.Helper()
	var tree any
	require.NoError(t, yaml.Unmarshal(openapiDoc, &tree))
	raw, err := json.Marshal(tree)
	require.NoError(t, err)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	require.NoError(t, c.AddResource("mem:///openapi.json", doc))
	return func(name string) *jsonschema.Schema {
		t.Helper()
		s, err := c.Compile("mem:///openapi.json#/components/schemas/" + name)
		require.NoError(t, err, name)
		return s
	}
}

// TestResponsesMatchOpenAPI checks real answers of every endpoint against
// the schemas the document promises.
func TestResponsesMatchOpenAPI(t *testing.T) {
	schema := openapiSchemas(t)
	h := newHarness(t)
	fx := h.fixture()
	site := "/api/v1/admin/maas-sites/" + fx.site
	e := h.enrollable("gpu-09", seedEnrollToken, time.Hour, "task")

	tests := []struct {
		name   string
		call   call
		status int
		schema string
		list   bool
	}{
		{"site create", call{method: "POST", path: "/api/v1/admin/maas-sites", body: map[string]any{"name": "dc9", "maas_url": "http://m/MAAS", "policy": map[string]any{"bootstrap": map[string]any{"url": "https://b/x", "version": "1.2.0"}}}}, 201, "Site", false},
		{"site get", call{method: "GET", path: site}, 200, "Site", false},
		{"site list", call{method: "GET", path: "/api/v1/admin/maas-sites"}, 200, "Site", true},
		{"probe", call{method: "POST", path: site + "/probe"}, 200, "ProbeAnswer", false},
		{"profile get", call{method: "GET", path: site + "/profiles/" + fx.profile}, 200, "Profile", false},
		{"profile list", call{method: "GET", path: site + "/profiles"}, 200, "Profile", true},
		{"roce upsert", call{method: "POST", path: site + "/roce-assignments", body: map[string]any{"items": []any{map[string]any{"hostname": "h", "interface": "e", "ipv4_cidr": "10.0.0.1/31"}}}}, 200, "RoCEAssignment", true},
		{"sku get", call{method: "GET", path: "/api/v1/admin/skus/" + fx.sku}, 200, "SKU", false},
		{"sku list", call{method: "GET", path: "/api/v1/admin/skus"}, 200, "SKU", true},
		{"onboarding create", call{method: "POST", path: "/api/v1/admin/onboardings", body: fx.onboarding("gpu-10")}, 202, "Onboarding", false},
		{"onboarding list", call{method: "GET", path: "/api/v1/admin/onboardings"}, 200, "Onboarding", true},
		{"onboarding detail", call{method: "GET", path: "/api/v1/admin/onboardings/" + e.onboardingID}, 200, "OnboardingDetail", false},
		{"audit", call{method: "GET", path: "/api/v1/admin/audit"}, 200, "AuditEntry", true},
		{"error 400", call{method: "POST", path: "/api/v1/admin/skus", body: map[string]any{}}, 400, "Error", false},
		{"error 404", call{method: "GET", path: site + "x"}, 404, "Error", false},
		{"error 409", call{method: "POST", path: "/api/v1/admin/onboardings", body: fx.onboarding("gpu-10")}, 409, "Error", false},
		{"onboarding cancel", call{method: "POST", path: "/api/v1/admin/onboardings/" + e.onboardingID + "/cancel", body: map[string]any{"reason": "r"}}, 200, "Onboarding", false},
		{"error 409 cancel", call{method: "POST", path: "/api/v1/admin/onboardings/" + e.onboardingID + "/cancel"}, 409, "Error", false},
		{"error 401 token", call{method: "POST", path: "/api/v1/nodes/" + e.nodeID + "/enroll", body: map[string]any{"token": "nope"}}, 401, "Error", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.call
			c.token = adminToken // the node route ignores it
			r := h.do(c)
			require.Equal(t, tc.status, r.status, "%s", r.body)
			v, err := jsonschema.UnmarshalJSON(bytes.NewReader(r.body))
			require.NoError(t, err)
			if tc.list {
				items, ok := v.(map[string]any)["items"].([]any)
				require.True(t, ok, "%s", r.body)
				require.NotEmpty(t, items)
				for _, it := range items {
					require.NoError(t, schema(tc.schema).Validate(it))
				}
				return
			}
			assert.NoError(t, schema(tc.schema).Validate(v))
		})
	}
	// The schemas do reject what they should.
	require.Error(t, schema("Site").Validate(map[string]any{"id": "x"}))
	assert.Error(t, schema("Error").Validate(map[string]any{"error": map[string]any{"code": "teapot", "message": "m", "correlation_id": "c"}}))
}
