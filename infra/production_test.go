package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Cost-allocation tags TestStack synthesises with.
var testTags = map[string]any{"cost-center": "gpu-fleet", "owner": "platform"}

// checkProduction: reserved concurrency on every background function,
// the cost tags on every taggable resource, the backup plan of the table,
// and table grants without batch calls or writes on the indexes.
func checkProduction(t *testing.T, cfn *cfnTemplate, fns []string) {
	t.Helper()
	t.Run("background functions have reserved concurrency", func(t *testing.T) {
		for _, fn := range fns {
			_, res := cfn.byID(t, "AWS::Lambda::Function", CamelCase(fn)+"Function")
			if fn == functionAPI {
				assert.NotContains(t, res.Properties, "ReservedConcurrentExecutions", "the API draws on the unreserved pool")
				continue
			}
			assert.InDelta(t, defaultReservedConcurrency, res.Properties["ReservedConcurrentExecutions"], 0, fn)
		}
	})
	t.Run("cost-allocation tags from the context", func(t *testing.T) {
		tagged := 0
		for _, typ := range []string{"AWS::Lambda::Function", "AWS::DynamoDB::Table", "AWS::StepFunctions::StateMachine", "AWS::SNS::Topic"} {
			for id, r := range cfn.Resources {
				if r.Type != typ {
					continue
				}
				b, err := json.Marshal(r.Properties["Tags"])
				require.NoError(t, err)
				for k, v := range testTags {
					assert.Contains(t, string(b), fmt.Sprintf(`{"Key":%q,"Value":%q}`, k, v), "%s %s", typ, id)
				}
				tagged++
			}
		}
		assert.Greater(t, tagged, len(fns))
	})
	t.Run("the table is in a backup plan", func(t *testing.T) {
		tableID, _ := cfn.byID(t, "AWS::DynamoDB::Table", "Table")
		_, plan := cfn.one(t, "AWS::Backup::BackupPlan")
		b, err := json.Marshal(plan.Properties["BackupPlan"])
		require.NoError(t, err)
		var p struct {
			BackupPlanName string `json:"BackupPlanName"`
			Rules          []struct {
				RuleName           string `json:"RuleName"`
				ScheduleExpression string `json:"ScheduleExpression"`
				Lifecycle          struct {
					DeleteAfterDays float64 `json:"DeleteAfterDays"`
				} `json:"Lifecycle"`
			} `json:"BackupPlanRule"`
		}
		require.NoError(t, json.Unmarshal(b, &p))
		assert.Equal(t, "maasflow-prod-table", p.BackupPlanName)
		days := map[string]float64{}
		for _, r := range p.Rules {
			days[r.RuleName] = r.Lifecycle.DeleteAfterDays
			assert.True(t, strings.HasPrefix(r.ScheduleExpression, "cron("), r.ScheduleExpression)
		}
		assert.Equal(t, map[string]float64{"Daily": dailyBackupDays, "Monthly": monthlyBackupDays}, days)
		_, vault := cfn.one(t, "AWS::Backup::BackupVault")
		assert.Equal(t, "maasflow-prod-backups", vault.Properties["BackupVaultName"])
		assert.Equal(t, "Retain", vault.DeletionPolicy)
		_, sel := cfn.one(t, "AWS::Backup::BackupSelection")
		s, err := json.Marshal(sel.Properties["BackupSelection"])
		require.NoError(t, err)
		assert.Contains(t, string(s), `"`+tableID+`"`, "the selection names the table")
		roleID, _ := getAtt(sel.Properties["BackupSelection"].(map[string]any)["IamRoleArn"])
		assert.Equal(t, "BackupPlanTableRole", functionIDPrefix(roleID), "the backup role checkGrants exempts")
	})
	t.Run("table grants are item calls on the table and queries on its indexes", func(t *testing.T) {
		for _, s := range cfn.statements(t) {
			for _, a := range s.actions {
				assert.NotContains(t, []string{"dynamodb:BatchWriteItem", "dynamodb:BatchGetItem", "dynamodb:Scan"}, a, "%s", s)
				if strings.HasPrefix(a, "dynamodb:") && a != "dynamodb:Query" {
					for _, r := range s.resources {
						assert.NotContains(t, r, "/index/", "%s on an index: %s", a, s)
					}
				}
			}
		}
	})
	t.Run("only the functions that list an index may query it", func(t *testing.T) {
		queried := map[string][]string{} // role logical ID → indexes
		for _, s := range cfn.statements(t) {
			for _, r := range s.resources {
				if i := strings.Index(r, "/index/"); i >= 0 {
					for _, role := range s.roles {
						queried[role] = append(queried[role], strings.Trim(r[i+len("/index/"):], `"]}`))
					}
				}
			}
		}
		smRole := cfn.smRole(t)
		for role, ixs := range queried {
			if role == smRole {
				continue
			}
			fn := ""
			for name := range functionAccess {
				if functionIDPrefix(role) == CamelCase(name)+"Role" {
					fn = name
				}
			}
			require.NotEmpty(t, fn, "role %s queries %v and is no function's", role, ixs)
			assert.ElementsMatch(t, functionAccess[fn].indexes, ixs, "%s's index grants", fn)
		}
		assert.Empty(t, queried[smRole], "the onboarding state machine reads no index")
		assert.ElementsMatch(t, []string{"api", "finish-decommission", "reconcile", functionStartReimage, functionStream}, func() []string {
			var out []string
			for name, acc := range functionAccess {
				if len(acc.indexes) > 0 {
					out = append(out, name)
				}
			}
			return out
		}())
	})
}

func TestProductionSettingsValidated(t *testing.T) {
	src, err := LoadSources("..")
	require.NoError(t, err)
	p := &MaasflowStackProps{Stage: devStage, Sources: src, AssetDir: fixtureAssets(t, src.Functions),
		ReservedConcurrency: -1, Tags: map[string]string{"aws:owner": "x", "maasflow:stage": "y"},
		CLICallbackURLs: []string{"http://example.com/callback", "https://ok.example.com/cb", "http://localhost:8400/callback"},
		APIDomainName:   "api.example.com"}
	err = p.Validate()
	require.Error(t, err)
	for _, want := range []string{ctxReservedConcurrency, `tag key "aws:owner"`, `tag key "maasflow:stage"`,
		ctxCLICallbackURLs + `: "http://example.com/callback"`, "a custom domain needs both"} {
		assert.Contains(t, err.Error(), want)
	}
	assert.NotContains(t, err.Error(), "ok.example.com")
	assert.NotContains(t, err.Error(), "localhost:8400")
}

func TestContextTagsAndInt(t *testing.T) {
	requireNode(t)
	app := awscdk.NewApp(&awscdk.AppProps{Context: &map[string]any{
		ctxTags: "cost-center=gpu, owner = platform", ctxReservedConcurrency: "4", "obj": map[string]any{"a": "b"},
		"bad": "novalue", "n": 2.5,
	}})
	tags, err := contextTags(app, ctxTags)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"cost-center": "gpu", "owner": "platform"}, tags)
	tags, err = contextTags(app, "obj")
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"a": "b"}, tags)
	_, err = contextTags(app, "bad")
	require.ErrorContains(t, err, "is not key=value")
	n, err := contextInt(app, ctxReservedConcurrency, 10)
	require.NoError(t, err)
	assert.Equal(t, 4, n)
	n, err = contextInt(app, "absent", 10)
	require.NoError(t, err)
	assert.Equal(t, 10, n)
	_, err = contextInt(app, "n", 10)
	require.ErrorContains(t, err, "whole number")
}

// Custom domain TestStack synthesises with.
const (
	testAPIDomain = "api.gpu.example.com"
	testCertARN   = "arn:aws:acm:eu-west-1:111122223333:certificate/0a1b2c3d-1111-2222-3333-444455556666"
)

// checkCustomDomain: the API's $default stage is mapped to the configured
// name with its certificate, and the DNS target is an output.
func checkCustomDomain(t *testing.T, cfn *cfnTemplate) {
	t.Helper()
	domainID, domain := cfn.one(t, "AWS::ApiGatewayV2::DomainName")
	assert.Equal(t, testAPIDomain, domain.Properties["DomainName"])
	assert.Equal(t, []any{map[string]any{"CertificateArn": testCertARN, "EndpointType": "REGIONAL", "SecurityPolicy": "TLS_1_2"}},
		domain.Properties["DomainNameConfigurations"])
	apiID, _ := cfn.one(t, "AWS::ApiGatewayV2::Api")
	stageID, _ := cfn.one(t, "AWS::ApiGatewayV2::Stage")
	_, mapping := cfn.one(t, "AWS::ApiGatewayV2::ApiMapping")
	assert.Equal(t, ref(apiID), mapping.Properties["ApiId"])
	assert.Equal(t, ref(domainID), mapping.Properties["DomainName"])
	assert.Equal(t, ref(stageID), mapping.Properties["Stage"])
	assert.Contains(t, cfn.Outputs, outputAPIDomainTarget)
}

// checkSignIn: the operators' pool requires TOTP MFA and a strong
// password, has threat protection on the Plus plan and a WAF rate limit per
// client IP; the CLI's client is public, on the code grant only, at the
// loopback callback, without USER_PASSWORD_AUTH.
func checkSignIn(t *testing.T, cfn *cfnTemplate, callbacks []any) {
	t.Helper()
	poolID, pool := cfn.one(t, "AWS::Cognito::UserPool")
	p := pool.Properties
	assert.Equal(t, "ON", p["MfaConfiguration"])
	assert.Equal(t, []any{"SOFTWARE_TOKEN_MFA"}, p["EnabledMfas"])
	policy, _ := p["Policies"].(map[string]any)
	assert.Equal(t, map[string]any{"MinimumLength": float64(minPasswordLength), "RequireLowercase": true, "RequireUppercase": true,
		"RequireNumbers": true, "RequireSymbols": true, "TemporaryPasswordValidityDays": float64(tempPasswordDays)},
		policy["PasswordPolicy"])
	assert.Equal(t, "PLUS", p["UserPoolTier"])
	assert.Equal(t, map[string]any{"AdvancedSecurityMode": "ENFORCED"}, p["UserPoolAddOns"])
	assert.Equal(t, "Retain", pool.DeletionPolicy)

	for id, r := range cfn.Resources {
		if r.Type != "AWS::Cognito::UserPoolClient" {
			continue
		}
		c := r.Properties
		assert.NotContains(t, list(c["AllowedOAuthFlows"]), "implicit", "%s: no implicit grant", id)
		assert.NotContains(t, list(c["ExplicitAuthFlows"]), "ALLOW_USER_PASSWORD_AUTH", id)
	}
	// The CLI's client (the console has its own: console_test.go).
	_, client := cfn.byID(t, "AWS::Cognito::UserPoolClient", "OperatorsCLI")
	c := client.Properties
	assert.Equal(t, false, c["GenerateSecret"], "a public client: PKCE, no secret")
	assert.Equal(t, []any{"code"}, c["AllowedOAuthFlows"])
	assert.Equal(t, true, c["AllowedOAuthFlowsUserPoolClient"])
	assert.Equal(t, callbacks, c["CallbackURLs"])
	assert.ElementsMatch(t, []any{"ALLOW_USER_SRP_AUTH", "ALLOW_REFRESH_TOKEN_AUTH"}, c["ExplicitAuthFlows"])
	assert.ElementsMatch(t, []any{"openid", "email", "profile"}, c["AllowedOAuthScopes"])
	_, domain := cfn.one(t, "AWS::Cognito::UserPoolDomain")
	assert.Equal(t, ref(poolID), domain.Properties["UserPoolId"])
	assert.Contains(t, cfn.Outputs, outputUserPoolDomain)

	aclID, acl := cfn.one(t, "AWS::WAFv2::WebACL")
	assert.Equal(t, "REGIONAL", acl.Properties["Scope"])
	rules := list(acl.Properties["Rules"])
	require.Len(t, rules, 1)
	rule, _ := rules[0].(map[string]any)
	assert.Equal(t, map[string]any{"Block": map[string]any{}}, rule["Action"])
	assert.Equal(t, map[string]any{"RateBasedStatement": map[string]any{"Limit": float64(signInRateLimit), "AggregateKeyType": "IP"}},
		rule["Statement"])
	_, assoc := cfn.one(t, "AWS::WAFv2::WebACLAssociation")
	assert.Equal(t, map[string]any{"Fn::GetAtt": []any{poolID, "Arn"}}, assoc.Properties["ResourceArn"])
	assert.Equal(t, map[string]any{"Fn::GetAtt": []any{aclID, "Arn"}}, assoc.Properties["WebACLArn"])
}
