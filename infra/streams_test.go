package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/api"
	"github.com/maasflow/maasflow/shared/config"
	"github.com/maasflow/maasflow/shared/console"
)

// The streams on AWS: the stream function behind a public function URL in
// RESPONSE_STREAM mode, readable from the console's origin only, checking
// tokens against the admin API's issuer and audiences, reading the table
// only; the console learns the URL from the api function.
func TestStreamsOnAWS(t *testing.T) {
	requireNode(t)
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(caFile, []byte(testCA), 0o600))
	cfn, _, _, fns := synth(t, fullContext(t, caFile))
	require.Contains(t, fns, functionStream)

	fnID, fn := cfn.byID(t, "AWS::Lambda::Function", CamelCase(functionStream)+"Function")
	assert.InDelta(t, streamTimeoutSec, fn.Properties["Timeout"], 0, "Lambda's longest invocation bounds a stream")
	env := envVars(fn)
	assert.Equal(t, testIssuer, env[config.EnvJWTIssuer], "the admin API's issuer")
	assert.Contains(t, fmt.Sprint(env[config.EnvJWTAudiences]), "client-a,client-b", "the admin API's audiences")
	assert.Equal(t, testAdminGroup, env[config.EnvAdminGroup])
	assert.Equal(t, "groups", env[config.EnvAdminGroupsClaim])

	urlID, u := cfn.one(t, "AWS::Lambda::Url")
	p := u.Properties
	assert.Equal(t, "NONE", p["AuthType"], "a browser cannot sign: the function checks the JWT")
	assert.Equal(t, "RESPONSE_STREAM", p["InvokeMode"], "API Gateway buffers; the URL streams")
	target, _ := getAtt(p["TargetFunctionArn"])
	assert.Equal(t, fnID, target)
	cors, _ := p["Cors"].(map[string]any)
	require.NotNil(t, cors)
	origins := list(cors["AllowOrigins"])
	require.Len(t, origins, 2, "the API's own URL and its custom domain, nothing else")
	assert.Contains(t, fmt.Sprint(origins[0]), "HttpApi", "the console's origin is the HTTP API's URL")
	assert.Equal(t, "https://"+testAPIDomain, origins[1])
	assert.NotContains(t, origins, any("*"))
	assert.Equal(t, []any{"GET"}, cors["AllowMethods"])
	assert.Equal(t, false, cors["AllowCredentials"])
	assert.ElementsMatch(t, []any{"authorization", "accept", "x-correlation-id"}, cors["AllowHeaders"])
	assert.ElementsMatch(t, []any{api.HeaderCorrelationID, api.HeaderTimeScale}, cors["ExposeHeaders"])

	_, apiFn := cfn.byID(t, "AWS::Lambda::Function", CamelCase(functionAPI)+"Function")
	assert.Equal(t, map[string]any{"Fn::GetAtt": []any{urlID, "FunctionUrl"}}, envVars(apiFn)[console.EnvStreamURL],
		"the console's config.json names the stream URL")
	require.Contains(t, cfn.Outputs, outputStreamURL)

	roleID, _ := cfn.byID(t, "AWS::IAM::Role", CamelCase(functionStream)+"Role")
	var dynamo []string
	for _, s := range cfn.statements(t) {
		if !slices.Contains(s.roles, roleID) {
			continue
		}
		for _, a := range s.actions {
			if len(a) > 9 && a[:9] == "dynamodb:" {
				dynamo = append(dynamo, a)
			}
		}
	}
	assert.NotEmpty(t, dynamo)
	for _, a := range dynamo {
		assert.Contains(t, []string{"dynamodb:GetItem", "dynamodb:Query"}, a, "the streams only read")
	}
}

// With the stack's own Cognito pool the stream function accepts the CLI's
// and the console's clients, and anyone may invoke it only through its
// URL: a direct Invoke stays the account's.
func TestStreamsWithTheStacksPool(t *testing.T) {
	requireNode(t)
	cfn, _, _, _ := synth(t, cdkContext(t, map[string]any{ctxStage: devStage, ctxCognito: "true"}))
	fnID, fn := cfn.byID(t, "AWS::Lambda::Function", CamelCase(functionStream)+"Function")
	env := envVars(fn)
	cli, _ := cfn.byID(t, "AWS::Cognito::UserPoolClient", "OperatorsCLI")
	con, _ := cfn.byID(t, "AWS::Cognito::UserPoolClient", "OperatorsConsole")
	audiences := fmt.Sprint(env[config.EnvJWTAudiences])
	assert.Contains(t, audiences, cli)
	assert.Contains(t, audiences, con)
	assert.Contains(t, fmt.Sprint(env[config.EnvJWTIssuer]), "cognito-idp.")

	public := map[string]map[string]any{}
	for _, r := range cfn.Resources {
		if r.Type != "AWS::Lambda::Permission" || r.Properties["Principal"] != "*" {
			continue
		}
		target, _ := getAtt(r.Properties["FunctionName"])
		assert.Equal(t, fnID, target, "only the stream function is public")
		public[fmt.Sprint(r.Properties["Action"])] = r.Properties
	}
	require.Len(t, public, 2)
	assert.Equal(t, "NONE", public["lambda:InvokeFunctionUrl"]["FunctionUrlAuthType"])
	assert.Equal(t, true, public["lambda:InvokeFunction"]["InvokedViaFunctionUrl"], "Invoke only through the URL")
}
