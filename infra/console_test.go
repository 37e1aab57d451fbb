package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/console"
)

// consoleRoutes returns the template's routes by route key.
func consoleRoutes(cfn *cfnTemplate) map[string]map[string]any {
	routes := map[string]map[string]any{}
	for _, r := range cfn.Resources {
		if r.Type == "AWS::ApiGatewayV2::Route" {
			routes[fmt.Sprint(r.Properties["RouteKey"])] = r.Properties
		}
	}
	return routes
}

// The console on AWS: the api function serves its files on public GET
// routes of the same HTTP API, and, with the stack's own pool, the page
// signs in through a public app client of its own whose tokens the admin
// authorizer accepts.
func TestConsoleOnAWS(t *testing.T) {
	requireNode(t)
	t.Run("with the stack's Cognito pool", func(t *testing.T) {
		cfn, _, _, _ := synth(t, cdkContext(t, map[string]any{ctxStage: devStage, ctxCognito: "true"}))
		routes := consoleRoutes(cfn)
		apiRoute := routes["ANY "+routeAdmin]
		require.NotNil(t, apiRoute)
		for _, key := range []string{"GET " + routeConsole, "GET " + routeConsoleFile} {
			r := routes[key]
			require.NotNil(t, r, "route %s in %v", key, routes)
			assert.Equal(t, "NONE", r["AuthorizationType"], "%s: static files, no data", key)
			assert.Equal(t, apiRoute["Target"], r["Target"], "%s: served by the api function's integration", key)
		}

		clientID, client := cfn.byID(t, "AWS::Cognito::UserPoolClient", "OperatorsConsole")
		c := client.Properties
		assert.Equal(t, false, c["GenerateSecret"], "a public client: PKCE, no secret")
		assert.Equal(t, []any{"code"}, c["AllowedOAuthFlows"])
		assert.Equal(t, true, c["AllowedOAuthFlowsUserPoolClient"])
		assert.ElementsMatch(t, []any{"openid", "email", "profile"}, c["AllowedOAuthScopes"])
		assert.NotContains(t, list(c["ExplicitAuthFlows"]), "ALLOW_USER_PASSWORD_AUTH")
		callbacks := fmt.Sprint(c["CallbackURLs"])
		assert.Contains(t, callbacks, consoleCallback, "back to the console's page")
		assert.Contains(t, callbacks, "ApiEndpoint", "at the API's own URL")

		_, auth := cfn.one(t, "AWS::ApiGatewayV2::Authorizer")
		jwt, _ := auth.Properties["JwtConfiguration"].(map[string]any)
		assert.Contains(t, list(jwt["Audience"]), any(ref(clientID)), "the admin API accepts the console's tokens")
		assert.Len(t, list(jwt["Audience"]), 2, "the CLI's client and the console's")

		_, fn := cfn.byID(t, "AWS::Lambda::Function", CamelCase(functionAPI)+"Function")
		env := envVars(fn)
		assert.Equal(t, ref(clientID), env[console.EnvClientID])
		assert.Contains(t, fmt.Sprint(env[console.EnvAuthorizeURL]), "/oauth2/authorize")
		assert.Contains(t, fmt.Sprint(env[console.EnvTokenURL]), "/oauth2/token")
		assert.Contains(t, cfn.Outputs, outputConsoleURL)
	})
	t.Run("with an issuer of the operator's own", func(t *testing.T) {
		caFile := filepath.Join(t.TempDir(), "ca.pem")
		require.NoError(t, os.WriteFile(caFile, []byte(testCA), 0o600))
		cfn, _, _, _ := synth(t, fullContext(t, caFile))
		routes := consoleRoutes(cfn)
		assert.NotNil(t, routes["GET "+routeConsoleFile], "the pages are served")
		_, fn := cfn.byID(t, "AWS::Lambda::Function", CamelCase(functionAPI)+"Function")
		env := envVars(fn)
		for _, k := range []string{console.EnvAuthorizeURL, console.EnvTokenURL, console.EnvClientID} {
			assert.NotContains(t, env, k, "no pool of the stack's: the page asks for a token")
		}
		for id, r := range cfn.Resources {
			assert.NotEqual(t, "AWS::Cognito::UserPoolClient", r.Type, id)
		}
	})
}
