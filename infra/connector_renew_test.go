package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// checkConnectorRenewRoute checks that a stack with the connector CA serves
// the connectors' renewal outside the admin JWT authorizer, and the admin
// routes still behind it.
func checkConnectorRenewRoute(t *testing.T, cfn *cfnTemplate) {
	t.Helper()
	routes := map[string]map[string]any{}
	for _, r := range cfn.Resources {
		if r.Type == "AWS::ApiGatewayV2::Route" {
			if key, ok := r.Properties["RouteKey"].(string); ok {
				routes[key] = r.Properties
			}
		}
	}
	renew, ok := routes["POST "+routeConnectorRenew]
	if assert.True(t, ok, "the renewal route; routes: %v", keys(routes)) {
		assert.NotEqual(t, "JWT", renew["AuthorizationType"], "a connector has no operator token")
		assert.Nil(t, renew["AuthorizerId"])
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
