package api

import (
	_ "embed"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

//go:embed openapi.yaml
var openapiDoc []byte

func TestOpenAPIMatchesRoutes(t *testing.T) {
	var doc struct {
		OpenAPI string                    `yaml:"openapi"`
		Paths   map[string]map[string]any `yaml:"paths"`
	}
	require.NoError(t, yaml.Unmarshal(openapiDoc, &doc))
	assert.True(t, strings.HasPrefix(doc.OpenAPI, "3.1"), "OpenAPI 3.1")

	var documented []string
	for path, item := range doc.Paths {
		for method := range item {
			switch method {
			case "get", "put", "post", "delete", "patch", "head", "options", "trace":
				documented = append(documented, strings.ToUpper(method)+" "+path)
			}
		}
	}
	var routed []string
	for _, rt := range routeTable() {
		routed = append(routed, rt.method+" "+rt.pattern)
	}
	sort.Strings(documented)
	sort.Strings(routed)
	assert.Equal(t, routed, documented)

	// Every $ref resolves inside the document.
	var tree map[string]any
	require.NoError(t, yaml.Unmarshal(openapiDoc, &tree))
	refs := 0
	var walk func(v any)
	walk = func(v any) {
		switch n := v.(type) {
		case map[string]any:
			for k, c := range n {
				if ref, ok := c.(string); ok && k == "$ref" {
					refs++
					assert.True(t, resolves(tree, ref), "unresolved $ref %s", ref)
				}
				walk(c)
			}
		case []any:
			for _, c := range n {
				walk(c)
			}
		}
	}
	walk(tree)
	assert.Positive(t, refs)

	// Public routes say so in the document; every other one inherits bearer.
	for _, rt := range routeTable() {
		op, ok := doc.Paths[rt.pattern][strings.ToLower(rt.method)].(map[string]any)
		require.True(t, ok, "%s %s", rt.method, rt.pattern)
		sec, hasSec := op["security"]
		if rt.access == accessAdmin {
			assert.False(t, hasSec, "%s %s inherits the bearer requirement", rt.method, rt.pattern)
		} else {
			assert.Equal(t, []any{}, sec, "%s %s is documented as public", rt.method, rt.pattern)
		}
	}
}

// resolves reports whether a local JSON pointer ("#/components/x/y") names
// a node of the document.
func resolves(tree map[string]any, ref string) bool {
	if !strings.HasPrefix(ref, "#/") {
		return false
	}
	var cur any = tree
	for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
		m, ok := cur.(map[string]any)
		if !ok {
			return false
		}
		if cur, ok = m[part]; !ok {
			return false
		}
	}
	return true
}
