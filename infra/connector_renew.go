package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2integrations"
	"github.com/aws/jsii-runtime-go"
)

// routeConnectorRenew is where a connector renews its certificate with its
// current one (shared/api connector_renew.go).
const routeConnectorRenew = "/api/v1/connectors/{id}/certificate"

// connectorRenewRoute serves the connectors' renewal outside the admin JWT
// authorizer when the stack has a connector CA: a connector has no
// operator token; the handler authenticates it by its current certificate.
func (b *builder) connectorRenewRoute(integration awsapigatewayv2integrations.HttpLambdaIntegration) {
	if !b.servesConnectorRenewal() {
		return
	}
	for _, r := range *b.api.AddRoutes(&awsapigatewayv2.AddRoutesOptions{
		Path:        jsii.String(routeConnectorRenew),
		Methods:     &[]awsapigatewayv2.HttpMethod{awsapigatewayv2.HttpMethod_POST},
		Integration: integration,
	}) {
		nagSuppress(r, "AwsSolutions-APIG4", "a connector has no operator JWT: the handler authenticates it by its current "+
			"certificate from the connector CA and a CSR over that certificate's key, and the stage's per-route throttle bounds the route")
	}
}

// servesConnectorRenewal reports whether the stack has the renewal route
// (and so its throttle: a stage's settings may name only routes that exist).
func (b *builder) servesConnectorRenewal() bool {
	return b.props.ConnectorCA != nil && b.connector.table != nil
}
