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
	// Public like the enroll route, so throttled as low: a connector
	// renews every few days, a flood is an attack or a bug.
	_, stage := cfn.one(t, "AWS::ApiGatewayV2::Stage")
	settings, _ := stage.Properties["RouteSettings"].(map[string]any)
	throttle, _ := settings["POST "+routeConnectorRenew].(map[string]any)
	assert.InDelta(t, enrollRateLimit, throttle["ThrottlingRateLimit"], 0, "the renewal route's own throttle; route settings: %v", settings)
	assert.InDelta(t, enrollBurstLimit, throttle["ThrottlingBurstLimit"], 0)
}

// checkNoConnectorRenewRoute checks that a stack without the connector CA
// has no renewal route, nor route settings naming it (a deploy refuses
// settings for a route that does not exist).
func checkNoConnectorRenewRoute(t *testing.T, cfn *cfnTemplate) {
	t.Helper()
	for _, r := range cfn.Resources {
		if r.Type == "AWS::ApiGatewayV2::Route" {
			assert.NotEqual(t, "POST "+routeConnectorRenew, r.Properties["RouteKey"])
		}
	}
	_, stage := cfn.one(t, "AWS::ApiGatewayV2::Stage")
	settings, _ := stage.Properties["RouteSettings"].(map[string]any)
	assert.NotContains(t, settings, "POST "+routeConnectorRenew)
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
