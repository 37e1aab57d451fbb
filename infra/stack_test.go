package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/config"
	"github.com/maasflow/maasflow/shared/enroll"
	"github.com/maasflow/maasflow/shared/store"
)

// There is deliberately no TestMain calling jsii.Close: in jsii-runtime-go
// v1.140.0, Close waits for the Node.js process while the runtime's own
// goroutine does too, which go test -race reports as a data race. The
// process ends with the test binary.

// requireNode stops the test when node, which the CDK's jsii kernel runs
// on, is missing: a failure in CI, a skip with the reason elsewhere.
func requireNode(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		msg := "node is not on PATH: the CDK synthesises through a Node.js process (install Node.js ≥ 20)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
}

// Settings the production synthesis uses.
const (
	testStage          = "prod"
	testIssuer         = "https://issuer.example.com/pool-1"
	testAdminGroup     = "gpu-admins"
	testOCIRef         = "registry.example.com/node-agent:1.2.3"
	testDigest         = "sha256:0f0e0d0c0b0a09080706050403020100ffeeddccbbaa99887766554433221100"
	testEnrollURL      = "https://enroll.gpu.example.com"
	testKMSKey         = "arn:aws:kms:eu-west-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
	testConnectorCAKey = "arn:aws:kms:eu-west-1:111122223333:key/c0nnec70-12ab-34cd-56ef-1234567890ab"
	testVPC            = "vpc-0123456789abcdef0"
	testSite           = "site-a"
)

// testCA is a real certificate: the stack refuses a bundle that does not
// parse.
var testCA = func() string {
	ca, err := enroll.DevCA()
	if err != nil {
		panic(err)
	}
	return ca
}()

var (
	testAudience = []string{"client-a", "client-b"}
	testSubnets  = []string{"subnet-0123456789abcdef1", "subnet-0123456789abcdef2"}
	testMAASNets = []string{"10.20.0.0/16"}
)

// cdkContext returns cdk.json's context (the feature flags of a new app
// and the defaults), as `cdk synth` passes it, plus extra.
func cdkContext(t *testing.T, extra map[string]any) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "cdk.json"))
	require.NoError(t, err)
	var doc struct {
		Context map[string]any `json:"context"`
	}
	require.NoError(t, json.Unmarshal(b, &doc))
	for k, v := range extra {
		doc.Context[k] = v
	}
	return doc.Context
}

// synth synthesises the repository with ctx and returns the template.
func synth(t *testing.T, ctx map[string]any) (*cfnTemplate, assertions.Template, string, []string) {
	t.Helper()
	root := ".."
	require.NoError(t, repositoryProblem(t), "the repository must be deployable")
	fns, err := DiscoverFunctions(filepath.Join(root, functionsDir))
	require.NoError(t, err)
	t.Setenv(envAssetDir, fixtureAssets(t, fns))
	app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx})
	stack, err := buildStack(app, root, os.Getenv)
	require.NoError(t, err)
	// Template_FromStack also runs CloudFormation's template checks, so a
	// dependency cycle between resources fails here.
	tpl := assertions.Template_FromStack(stack, nil)
	return decodeTemplate(t, tpl), tpl, root, fns
}

// fullContext is a production stage with every option (VPC path, one
// connector site, customer-managed KMS key, custom API domain).
func fullContext(t *testing.T, caFile string) map[string]any {
	t.Helper()
	return cdkContext(t, map[string]any{
		ctxStage:       testStage,
		ctxJWTIssuer:   testIssuer,
		ctxJWTAudience: strings.Join(testAudience, ","),
		ctxAdminGroup:  testAdminGroup,
		ctxGroupsClaim: "groups",
		// As cdk.json would give them.
		ctxNodeAgentOCIRef:    testOCIRef,
		ctxNodeAgentDigest:    testDigest,
		ctxTaskSigningPubKeys: []any{"ed25519:key-1", "ed25519:key-2"},
		ctxEnrollmentAPIURL:   testEnrollURL,
		ctxCABundleFile:       caFile,
		ctxSecretsKMSKey:      testKMSKey,
		ctxVPCID:              testVPC,
		ctxSubnetIDs:          strings.Join(testSubnets, ","),
		ctxMAASCIDRs:          testMAASNets,
		ctxConnectorSites:     []any{testSite},
		// Connectors on Roles Anywhere sessions: the dev CA stands in
		// for the connector CA's certificate.
		ctxConnectorCAKeyARN:   testConnectorCAKey,
		ctxConnectorCACertFile: caFile,
		ctxAlarmEmail:          "oncall@example.com",
		// The decommission path's allocation service.
		ctxAllocationServiceURL: testAllocationURL,
		ctxAllocationSecretName: testAllocationSecret,
		// Cost-allocation tags as cdk.json would give them.
		ctxTags: testTags,
		// A custom domain for the API.
		ctxAPIDomainName:     testAPIDomain,
		ctxAPICertificateARN: testCertARN,
	})
}

// TestStack synthesises a production stage with every option (VPC path,
// one connector site, customer-managed KMS key) and checks the template.
func TestStack(t *testing.T) {
	requireNode(t)
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(caFile, []byte(testCA), 0o600))
	cfn, tpl, root, fns := synth(t, fullContext(t, caFile))
	asl, err := os.ReadFile(filepath.Join(root, onboardingASL))
	require.NoError(t, err)

	t.Run("one standard state machine from the ASL", func(t *testing.T) {
		tpl.ResourceCountIs(jsii.String("AWS::StepFunctions::StateMachine"), jsii.Number(5)) // onboarding, batch, reconcile, decommission, machine watch
		tpl.HasResourceProperties(jsii.String("AWS::StepFunctions::StateMachine"), map[string]any{
			"StateMachineName":     "maasflow-prod-onboarding",
			"StateMachineType":     "STANDARD",
			"TracingConfiguration": map[string]any{"Enabled": true},
			"LoggingConfiguration": map[string]any{"Level": "ERROR", "IncludeExecutionData": false},
		})
		_, sm := cfn.byID(t, "AWS::StepFunctions::StateMachine", "Onboarding")
		def, ok := sm.Properties["DefinitionString"].(string)
		require.True(t, ok, "DefinitionString is inlined, not an S3 asset: %v", sm.Properties["DefinitionString"])
		assert.JSONEq(t, string(asl), def)
		want, err := StateNames(asl)
		require.NoError(t, err)
		got, err := StateNames([]byte(def))
		require.NoError(t, err)
		assert.Equal(t, want, got)
	})

	t.Run("substitutions cover every placeholder", func(t *testing.T) {
		_, sm := cfn.byID(t, "AWS::StepFunctions::StateMachine", "Onboarding")
		subs, _ := sm.Properties["DefinitionSubstitutions"].(map[string]any)
		placeholders := placeholderRE.FindAllStringSubmatch(string(asl), -1)
		require.NotEmpty(t, placeholders)
		for _, m := range placeholders {
			name := m[1]
			require.Contains(t, subs, name)
			x, isFn := strings.CutSuffix(name, functionArnSuffix)
			if !isFn {
				continue
			}
			target, attr := getAtt(subs[name])
			assert.Equal(t, "Arn", attr, name)
			res, ok := cfn.Resources[target]
			require.True(t, ok, "%s points at %q, which is not in the template", name, target)
			assert.Equal(t, "AWS::Lambda::Function", res.Type, name)
			assert.True(t, strings.EqualFold(strings.TrimSuffix(functionIDPrefix(target), "Function"), x),
				"%s is substituted with function %s", name, target)
		}
	})

	t.Run("every function is provided.al2023 on arm64 with its environment", func(t *testing.T) {
		tpl.ResourceCountIs(jsii.String("AWS::Lambda::Function"), jsii.Number(float64(len(fns))))
		tableID, _ := cfn.byID(t, "AWS::DynamoDB::Table", "Table")
		connTableID, _ := cfn.byID(t, "AWS::DynamoDB::Table", "ConnectorTable")
		busID, _ := cfn.one(t, "AWS::Events::EventBus")
		smID, sm := cfn.byID(t, "AWS::StepFunctions::StateMachine", "Onboarding")
		smName, _ := sm.Properties["StateMachineName"].(string)
		require.NotEmpty(t, smName, "the state machine has a fixed name")
		secretsRoleID, _ := cfn.byID(t, "AWS::IAM::Role", "SiteSecretsRole")
		for _, fn := range fns {
			t.Run(fn, func(t *testing.T) {
				_, res := cfn.byID(t, "AWS::Lambda::Function", CamelCase(fn)+"Function")
				acc := functionAccess[fn]
				p := res.Properties
				assert.Equal(t, "maasflow-prod-"+fn, p["FunctionName"])
				assert.Equal(t, "provided.al2023", p["Runtime"])
				assert.Equal(t, []any{"arm64"}, p["Architectures"])
				assert.Equal(t, "bootstrap", p["Handler"])
				assert.Equal(t, map[string]any{"Mode": "Active"}, p["TracingConfig"])
				logging, _ := p["LoggingConfig"].(map[string]any)
				assert.Equal(t, "JSON", logging["LogFormat"])

				env := envVars(res)
				assert.Equal(t, testStage, env[config.EnvStage])
				assert.Equal(t, ref(tableID), env[config.EnvTable])
				assert.Equal(t, ref(busID), env[config.EnvEventBus])
				assert.Equal(t, testEnrollURL, env[config.EnvNodeAPIURL], "the configured enrollment URL, not execute-api")
				if fn == functionAPI {
					assert.Equal(t, ref(smID), env[config.EnvOnboardingStateMachine])
					assert.Equal(t, testAdminGroup, env[config.EnvAdminGroup])
					assert.Equal(t, "groups", env[config.EnvAdminGroupsClaim])
					assert.Equal(t, testKMSKey, env[config.EnvSecretsKMSKey])
					assert.InDelta(t, apiTimeoutSec, p["Timeout"], 0)
				} else {
					// The ARN built from the name, not a reference.
					arn, err := json.Marshal(env[config.EnvOnboardingStateMachine])
					require.NoError(t, err)
					assert.Contains(t, string(arn), `":stateMachine:`+smName+`"`)
					assert.NotContains(t, string(arn), smID)
					assert.NotContains(t, env, config.EnvSecretsKMSKey)
					assert.InDelta(t, functionTimeout(t, fn), p["Timeout"], 0)
				}
				if acc.maas {
					assert.Equal(t, map[string]any{"Fn::GetAtt": []any{secretsRoleID, "Arn"}}, env[config.EnvSiteSecretsRole])
					assert.Equal(t, testStage+"/", env[config.EnvSecretPrefix])
				} else {
					assert.NotContains(t, env, config.EnvSiteSecretsRole, "reads no site secret")
				}
				if acc.reachesSite() {
					assert.Equal(t, "true", env[config.EnvRequireHTTPS])
					assert.Equal(t, ref(connTableID), env[config.EnvConnectorTable])
					assert.Contains(t, fmt.Sprint(env[config.EnvConnectorQueuePrefix]), "/maasflow-prod-connector-")
				} else {
					assert.NotContains(t, env, config.EnvConnectorTable)
				}
				assert.Equal(t, testOCIRef, env[config.EnvPackageOCIRef])
				assert.Equal(t, testDigest, env[config.EnvPackageDigest])
				assert.Equal(t, testCA, env[config.EnvCABundle])
				assert.Equal(t, "ed25519:key-1,ed25519:key-2", env[config.EnvTaskSigningKeys])
				for name, v := range env {
					assert.NotContains(t, strings.ToLower(name), "token", "secrets never go in the environment")
					assert.NotContains(t, strings.ToLower(name), "password", "%s=%v", name, v)
				}
			})
		}
	})

	t.Run("reconcile state machine and schedule", func(t *testing.T) { checkReconcile(t, cfn, fns) })
	t.Run("machine-watch state machine, schedule and watch grants", func(t *testing.T) { checkMachineWatch(t, cfn, root) })
	t.Run("batch state machine runs onboardings as children", func(t *testing.T) { checkBatch(t, cfn) })

	t.Run("every grant is one a principal needs", func(t *testing.T) {
		checkGrants(t, cfn, expectedGrants(t, cfn, fns, true))
	})

	t.Run("site secrets are read only through the site-tagged role", func(t *testing.T) {
		roleID, role := cfn.byID(t, "AWS::IAM::Role", "SiteSecretsRole")
		trust, _ := role.Properties["AssumeRolePolicyDocument"].(map[string]any)
		var assumers []string
		for _, raw := range list(trust["Statement"]) {
			s, _ := raw.(map[string]any)
			principal, _ := s["Principal"].(map[string]any)
			ids := map[string]bool{}
			collectRefs(principal["AWS"], ids)
			for id := range ids {
				assumers = append(assumers, functionIDPrefix(id))
			}
			if slices.Contains(list(s["Action"]), any("sts:TagSession")) {
				assert.Contains(t, fmt.Sprint(s["Condition"]), "aws:RequestTag/"+config.SiteTagKey)
			}
		}
		var want []string
		for _, fn := range fns {
			if functionAccess[fn].maas {
				want = append(want, CamelCase(fn)+"Role")
			}
		}
		assert.ElementsMatch(t, dedupe(want), dedupe(assumers))
		for _, s := range cfn.statements(t) {
			if _, allocation := splitAllocationSecret([]statement{s}); len(allocation) > 0 {
				continue // the allocation service's token, not a site's secret
			}
			if slices.Contains(s.actions, "secretsmanager:GetSecretValue") {
				assert.Equal(t, []string{roleID}, s.roles, "only the site-tagged role reads secrets: %s", s)
				assert.Contains(t, strings.Join(s.resources, ""),
					":secret:prod/maasflow/sites/${aws:PrincipalTag/"+config.SiteTagKey+"}/credentials-??????")
			}
		}
	})

	t.Run("MAAS-facing functions run in the VPC path", func(t *testing.T) {
		sgID, sg := cfn.one(t, "AWS::EC2::SecurityGroup")
		assert.Equal(t, testVPC, sg.Properties["VpcId"])
		assert.Empty(t, sg.Properties["SecurityGroupIngress"])
		egress := list(sg.Properties["SecurityGroupEgress"])
		var toMAAS []float64
		for _, raw := range egress {
			e, _ := raw.(map[string]any)
			switch e["CidrIp"] {
			case testMAASNets[0]:
				toMAAS = append(toMAAS, e["FromPort"].(float64))
			case "0.0.0.0/0":
				assert.InDelta(t, 443, e["FromPort"], 0, "only HTTPS leaves for anywhere")
			default:
				t.Errorf("unexpected egress %v", e)
			}
		}
		assert.ElementsMatch(t, maasPorts, toMAAS)
		for _, fn := range fns {
			_, res := cfn.byID(t, "AWS::Lambda::Function", CamelCase(fn)+"Function")
			vpc, ok := res.Properties["VpcConfig"].(map[string]any)
			if !functionAccess[fn].reachesSite() {
				assert.False(t, ok, "%s does not reach MAAS: not in the VPC", fn)
				continue
			}
			require.True(t, ok, "%s reaches MAAS: in the VPC", fn)
			assert.Equal(t, []any{testSubnets[0], testSubnets[1]}, vpc["SubnetIds"], fn)
			assert.Equal(t, []any{map[string]any{"Fn::GetAtt": []any{sgID, "GroupId"}}}, vpc["SecurityGroupIds"], fn)
		}
	})

	t.Run("every named resource carries the stage", func(t *testing.T) {
		nameProps := []string{"TableName", "EventBusName", "StateMachineName", "FunctionName", "QueueName",
			"AlarmName", "DashboardName", "ArchiveName", "RegistryName", "TopicName", "UserPoolName", "LogGroupName"}
		seen := 0
		for id, r := range cfn.Resources {
			for _, prop := range nameProps {
				v, ok := r.Properties[prop]
				if !ok {
					continue
				}
				b, err := json.Marshal(v)
				require.NoError(t, err)
				if _, isRef := getAtt(v); isRef != "" {
					continue // a reference to a resource checked on its own
				}
				seen++
				assert.Contains(t, string(b), "maasflow-prod", "%s %s.%s", r.Type, id, prop)
			}
			if r.Type == "AWS::ApiGatewayV2::Api" {
				assert.Equal(t, "maasflow-prod-api", r.Properties["Name"])
			}
		}
		assert.Greater(t, seen, len(fns), "named resources found")
		_, tbl := cfn.byID(t, "AWS::DynamoDB::Table", "Table")
		assert.Equal(t, "maasflow-prod", tbl.Properties["TableName"])
		_, logs := cfn.byID(t, "AWS::Logs::LogGroup", "OnboardingLogs")
		assert.Contains(t, fmt.Sprint(logs.Properties["LogGroupName"]), "AWS::StackId",
			"a name no retained log group of an earlier stack holds")
	})

	t.Run("connector site queue, Roles Anywhere and no user", func(t *testing.T) {
		_, q := cfn.byID(t, "AWS::SQS::Queue", "ConnectorSiteARequests")
		assert.Equal(t, "maasflow-prod-connector-site-a", q.Properties["QueueName"])
		assert.Equal(t, true, q.Properties["SqsManagedSseEnabled"])
		assert.InDelta(t, 20, q.Properties["ReceiveMessageWaitTimeSeconds"], 0)
		assert.Contains(t, fmt.Sprint(q.Properties["RedrivePolicy"]), "maxReceiveCount:5")
		checkConnectorAccess(t, cfn)
		checkConnectorDLQAlarms(t, cfn)
		checkConnectorRenewRoute(t, cfn)
	})

	t.Run("decommission state machine", func(t *testing.T) { checkDecommissionStack(t, cfn, root, fns) })

	t.Run("table matches the store schema", func(t *testing.T) {
		_, tbl := cfn.byID(t, "AWS::DynamoDB::Table", "Table")
		assert.Equal(t, "Retain", tbl.DeletionPolicy)
		p := tbl.Properties
		assert.Equal(t, "PAY_PER_REQUEST", p["BillingMode"])
		assert.Equal(t, true, p["DeletionProtectionEnabled"])
		assert.Equal(t, map[string]any{"PointInTimeRecoveryEnabled": true}, p["PointInTimeRecoverySpecification"])
		assert.Equal(t, map[string]any{"AttributeName": store.AttrTTL, "Enabled": true}, p["TimeToLiveSpecification"])
		assert.Equal(t, keySchema(store.AttrPK, store.AttrSK), p["KeySchema"])

		wantAttrs := []any{attrDef(store.AttrPK), attrDef(store.AttrSK)}
		var wantGSIs []any
		for _, ix := range store.Indexes() {
			wantAttrs = append(wantAttrs, attrDef(ix.PartitionKey), attrDef(ix.SortKey))
			wantGSIs = append(wantGSIs, map[string]any{
				"IndexName":  ix.Name,
				"KeySchema":  keySchema(ix.PartitionKey, ix.SortKey),
				"Projection": map[string]any{"ProjectionType": "ALL"},
			})
		}
		assert.ElementsMatch(t, wantAttrs, p["AttributeDefinitions"])
		assert.ElementsMatch(t, wantGSIs, p["GlobalSecondaryIndexes"])
	})

	t.Run("admin routes need the JWT, healthz and enroll do not", func(t *testing.T) {
		// Admin, healthz, enroll, the console's two (console_test.go) and,
		// with the connector CA, the connectors' renewal
		// (connector_renew_test.go).
		tpl.ResourceCountIs(jsii.String("AWS::ApiGatewayV2::Route"), jsii.Number(6))
		authID, auth := cfn.one(t, "AWS::ApiGatewayV2::Authorizer")
		assert.Equal(t, "JWT", auth.Properties["AuthorizerType"])
		assert.Equal(t, map[string]any{"Issuer": testIssuer, "Audience": []any{"client-a", "client-b"}},
			auth.Properties["JwtConfiguration"])

		routes := map[string]map[string]any{}
		for _, r := range cfn.Resources {
			if r.Type == "AWS::ApiGatewayV2::Route" {
				routes[fmt.Sprint(r.Properties["RouteKey"])] = r.Properties
			}
		}
		admin := routes["ANY "+routeAdmin]
		require.NotNil(t, admin, "routes: %v", routes)
		assert.Equal(t, "JWT", admin["AuthorizationType"])
		assert.Equal(t, ref(authID), admin["AuthorizerId"])
		for _, key := range []string{"GET " + routeHealthz, "POST " + routeEnroll} {
			r := routes[key]
			require.NotNil(t, r, key)
			assert.Equal(t, "NONE", r["AuthorizationType"], key)
			assert.NotContains(t, r, "AuthorizerId", key)
		}
		apiFnID, _ := cfn.byID(t, "AWS::Lambda::Function", CamelCase(functionAPI)+"Function")
		_, integ := cfn.one(t, "AWS::ApiGatewayV2::Integration")
		assert.Equal(t, "AWS_PROXY", integ.Properties["IntegrationType"])
		assert.Contains(t, fmt.Sprint(integ.Properties["IntegrationUri"]), apiFnID)
	})

	t.Run("API stage logs access and throttles the enroll route", func(t *testing.T) {
		_, stage := cfn.one(t, "AWS::ApiGatewayV2::Stage")
		p := stage.Properties
		assert.Equal(t, "$default", p["StageName"])
		logs, _ := p["AccessLogSettings"].(map[string]any)
		assert.Contains(t, fmt.Sprint(logs["Format"]), "$context.requestId")
		assert.NotEmpty(t, logs["DestinationArn"])
		routes, _ := p["RouteSettings"].(map[string]any)
		enroll, _ := routes["POST "+routeEnroll].(map[string]any)
		assert.InDelta(t, enrollRateLimit, enroll["ThrottlingRateLimit"], 0)
		assert.InDelta(t, enrollBurstLimit, enroll["ThrottlingBurstLimit"], 0)
		def, _ := p["DefaultRouteSettings"].(map[string]any)
		assert.Greater(t, def["ThrottlingRateLimit"], enroll["ThrottlingRateLimit"])
	})

	t.Run("alarms, dashboard, archive and schemas", func(t *testing.T) {
		alarms := map[string]map[string]any{}
		for _, r := range cfn.Resources {
			if r.Type == "AWS::CloudWatch::Alarm" {
				alarms[fmt.Sprint(r.Properties["AlarmName"])] = r.Properties
				assert.NotEmpty(t, r.Properties["AlarmActions"], "every alarm notifies the topic")
			}
		}
		want := []string{"maasflow-prod-executions-failed", "maasflow-prod-executions-timed-out",
			"maasflow-prod-api5xx", "maasflow-prod-connector-site-a-dlq"}
		for _, fn := range fns {
			want = append(want, "maasflow-prod-"+kebab(CamelCase(fn))+"-error-rate", "maasflow-prod-"+kebab(CamelCase(fn))+"-throttles")
		}
		for _, name := range want {
			assert.Contains(t, alarms, name)
		}
		assert.Equal(t, "ExecutionsFailed", alarms["maasflow-prod-executions-failed"]["MetricName"])
		assert.Equal(t, "5xx", alarms["maasflow-prod-api5xx"]["MetricName"])
		tpl.ResourceCountIs(jsii.String("AWS::CloudWatch::Dashboard"), jsii.Number(1))
		tpl.HasResourceProperties(jsii.String("AWS::SNS::Subscription"), map[string]any{"Protocol": "email", "Endpoint": "oncall@example.com"})

		_, archive := cfn.one(t, "AWS::Events::Archive")
		assert.Equal(t, "maasflow-prod-events", archive.Properties["ArchiveName"])
		assert.InDelta(t, archiveRetentionDays, archive.Properties["RetentionDays"], 0)
		assert.Equal(t, map[string]any{"source": []any{config.EventSource}}, archive.Properties["EventPattern"])

		var detailTypes []string
		for _, r := range cfn.Resources {
			if r.Type != "AWS::EventSchemas::Schema" {
				continue
			}
			assert.Equal(t, "JSONSchemaDraft4", r.Properties["Type"])
			var content map[string]any
			require.NoError(t, json.Unmarshal([]byte(fmt.Sprint(r.Properties["Content"])), &content))
			detailTypes = append(detailTypes, fmt.Sprint(content["title"]))
		}
		assert.Contains(t, detailTypes, "node.onboarding.started")
		assert.Contains(t, detailTypes, "node.onboarding.completed")
	})

	t.Run("alarms on outcomes and error rates, business dashboard", func(t *testing.T) { checkAlarms(t, cfn, fns) })
	t.Run("production settings", func(t *testing.T) { checkProduction(t, cfn, fns) })
	t.Run("custom domain", func(t *testing.T) { checkCustomDomain(t, cfn) })

	t.Run("outputs", func(t *testing.T) {
		for _, name := range []string{outputAPIURL, outputTableName, outputEventBusName, outputStateMachineArn} {
			assert.Contains(t, cfn.Outputs, name)
		}
		assert.Empty(t, cfn.Parameters[paramJWTIssuer], "issuer given by context: no parameter")
	})
}

// TestDevStage synthesises the dev stage with nothing but the stage: the
// development package, the execute-api URL, a Cognito pool for operators,
// no VPC and no connector.
func TestDevStage(t *testing.T) {
	requireNode(t)
	cfn, _, _, fns := synth(t, cdkContext(t, map[string]any{ctxStage: devStage, ctxCognito: "true"}))
	apiID, _ := cfn.one(t, "AWS::ApiGatewayV2::Api")
	for _, fn := range fns {
		_, res := cfn.byID(t, "AWS::Lambda::Function", CamelCase(fn)+"Function")
		env := envVars(res)
		assert.NotContains(t, env, config.EnvPackageOCIRef, "the development package")
		assert.Equal(t, map[string]any{"Fn::GetAtt": []any{apiID, "ApiEndpoint"}}, env[config.EnvNodeAPIURL])
		assert.NotContains(t, res.Properties, "VpcConfig")
		assert.Equal(t, "maasflow-dev-"+fn, res.Properties["FunctionName"])
		assert.NotContains(t, res.Properties, "ReservedConcurrentExecutions", "dev reserves no concurrency")
	}
	_, tbl := cfn.byID(t, "AWS::DynamoDB::Table", "Table")
	assert.Equal(t, "maasflow-dev", tbl.Properties["TableName"])
	_, pool := cfn.one(t, "AWS::Cognito::UserPool")
	assert.Equal(t, "maasflow-dev-operators", pool.Properties["UserPoolName"])
	assert.Equal(t, map[string]any{"AllowAdminCreateUserOnly": true}, pool.Properties["AdminCreateUserConfig"])
	checkSignIn(t, cfn, []any{defaultCLICallbackURL})
	_, group := cfn.one(t, "AWS::Cognito::UserPoolGroup")
	assert.Equal(t, config.DefaultAdminGroup, group.Properties["GroupName"])
	_, auth := cfn.one(t, "AWS::ApiGatewayV2::Authorizer")
	assert.Contains(t, fmt.Sprint(auth.Properties["JwtConfiguration"]), "cognito-idp")
	assert.Empty(t, cfn.Parameters[paramJWTIssuer], "the pool is the issuer: no parameter")
	checkGrants(t, cfn, expectedGrants(t, cfn, fns, false))
	checkNoConnectorRenewRoute(t, cfn)
}

// TestImportTable: after a destroy, the retained table is used by name.
func TestImportTable(t *testing.T) {
	requireNode(t)
	cfn, _, _, fns := synth(t, cdkContext(t, map[string]any{ctxStage: devStage, ctxImportTable: true}))
	for _, r := range cfn.Resources {
		assert.NotEqual(t, "AWS::DynamoDB::Table", r.Type, "the table is not created again")
	}
	_, res := cfn.byID(t, "AWS::Lambda::Function", CamelCase(fns[0])+"Function")
	assert.Equal(t, "maasflow-dev", envVars(res)[config.EnvTable])
	checkGrants(t, cfn, expectedGrants(t, cfn, fns, false))
}

// TestProductionSettingsRequired: every stage but dev refuses to deploy
// without the node-agent package, the CA bundle and the enrollment URL.
func TestProductionSettingsRequired(t *testing.T) {
	src, err := LoadSources("..")
	require.NoError(t, err)
	assets := fixtureAssets(t, src.Functions)

	err = (&MaasflowStackProps{Stage: "prod", Sources: src, AssetDir: assets}).Validate()
	require.Error(t, err)
	for _, key := range []string{ctxNodeAgentOCIRef, ctxNodeAgentDigest, ctxCABundleFile, ctxEnrollmentAPIURL} {
		assert.Contains(t, err.Error(), key)
	}
	assert.Contains(t, err.Error(), `only stage "dev" may use the development defaults`)

	err = (&MaasflowStackProps{Stage: "prod", Sources: src, AssetDir: assets, NodeAgentOCIRef: testOCIRef,
		NodeAgentDigest: testDigest, CABundle: testCA, EnrollmentAPIURL: "http://enroll.example.com"}).Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "enrollment API URL (https://…)")
	assert.NotContains(t, err.Error(), ctxNodeAgentOCIRef)

	require.NoError(t, (&MaasflowStackProps{Stage: "prod", Sources: src, AssetDir: assets, NodeAgentOCIRef: testOCIRef,
		NodeAgentDigest: testDigest, CABundle: testCA, EnrollmentAPIURL: testEnrollURL}).Validate())
	// The functions would refuse to start with a bundle that does not
	// parse, in any stage: synthesis refuses it first.
	for _, stage := range []string{"prod", devStage} {
		err = (&MaasflowStackProps{Stage: stage, Sources: src, AssetDir: assets, NodeAgentOCIRef: testOCIRef,
			NodeAgentDigest: testDigest, CABundle: "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
			EnrollmentAPIURL: testEnrollURL}).Validate()
		require.Error(t, err, stage)
		assert.Contains(t, err.Error(), ctxCABundleFile+": the enrollment CA bundle: certificate 1 does not parse", stage)
	}
	require.NoError(t, (&MaasflowStackProps{Stage: devStage, Sources: src, AssetDir: assets}).Validate())

	for _, stage := range []string{"", "Prod", "prod-eu", "averyveryverylongstage"} {
		err := (&MaasflowStackProps{Stage: stage, Sources: src, AssetDir: assets}).Validate()
		require.ErrorContains(t, err, "stage", "stage %q", stage)
	}
	err = (&MaasflowStackProps{Stage: devStage, Sources: src, AssetDir: assets,
		VPC: &VPCConfig{VPCID: "x", SubnetIDs: []string{"y"}, MAASCIDRs: []string{"10.0.0.0/33"}}}).Validate()
	require.Error(t, err)
	for _, want := range []string{ctxVPCID, ctxSubnetIDs, ctxMAASCIDRs} {
		assert.Contains(t, err.Error(), want)
	}
}

// TestEveryFunctionDeclaresItsAccess: a new functions/<name> must say what
// it calls before it can deploy.
func TestEveryFunctionDeclaresItsAccess(t *testing.T) {
	fns, err := DiscoverFunctions(filepath.Join("..", functionsDir))
	require.NoError(t, err)
	require.NoError(t, unlistedFunctions(fns))
	require.ErrorContains(t, unlistedFunctions([]string{"api", "decommission-machine"}),
		"functions/decommission-machine: no entry in functionAccess")
}

// TestFeatureFlags: cdk.json sets the feature flags a new CDK app gets.
func TestFeatureFlags(t *testing.T) {
	ctx := cdkContext(t, nil)
	for _, flag := range []string{"@aws-cdk/aws-iam:minimizePolicies", "@aws-cdk/core:checkSecretUsage",
		"@aws-cdk/aws-lambda:recognizeLayerVersion", "@aws-cdk/aws-events:requireEventBusPolicySid",
		"@aws-cdk/core:enablePartitionLiterals"} {
		assert.Equal(t, true, ctx[flag], flag)
	}
	assert.NotContains(t, ctx, ctxStage, "no stage by default: a deploy names its stage")
	assert.NotContains(t, ctx, "maasflow:stackName", "the stack name follows the stage")
}

func TestContextValues(t *testing.T) {
	requireNode(t)
	tests := []struct {
		name    string
		value   any
		want    []string
		wantErr string
	}{
		{name: "absent", value: nil, want: nil},
		{name: "comma-separated (-c key=a,b)", value: " a , b,,", want: []string{"a", "b"}},
		{name: "JSON list (cdk.json)", value: []any{"a", " b "}, want: []string{"a", "b"}},
		{name: "list of non-strings", value: []any{"a", 1}, wantErr: "must list strings"},
		{name: "number", value: 3, wantErr: "must be a string or a list of strings"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := map[string]any{}
			if tt.value != nil {
				ctx[ctxJWTAudience] = tt.value
				ctx[ctxJWTIssuer] = tt.value
			}
			app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx})
			got, err := contextList(app, ctxJWTAudience)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}

	t.Run("string and bool values", func(t *testing.T) {
		app := awscdk.NewApp(&awscdk.AppProps{Context: &map[string]any{ctxAdminGroup: " ops ", ctxStage: 7,
			ctxImportTable: "true", ctxCognito: "yes"}})
		got, err := contextString(app, ctxAdminGroup)
		require.NoError(t, err)
		assert.Equal(t, "ops", got)
		_, err = contextString(app, ctxStage)
		require.ErrorContains(t, err, "must be a string")
		on, err := contextBool(app, ctxImportTable)
		require.NoError(t, err)
		assert.True(t, on)
		_, err = contextBool(app, ctxCognito)
		require.ErrorContains(t, err, "must be true or false")
	})
}

func TestInvalidPropsFailSynthesis(t *testing.T) {
	requireNode(t)
	app := awscdk.NewApp(nil)
	NewMaasflowStack(app, "Invalid", &MaasflowStackProps{})
	var recovered any
	func() {
		defer func() { recovered = recover() }()
		app.Synth(nil)
	}()
	require.NotNil(t, recovered, "synthesis must fail")
	assert.Contains(t, fmt.Sprint(recovered), "functions/api/main.go is missing")
	assert.Contains(t, fmt.Sprint(recovered), "the asset directory is not set")
	assert.Contains(t, fmt.Sprint(recovered), "no stage")
}

// TestRepositoryIsDeployable checks the repository the way synthesis
// would, without synthesising: statemachines/onboarding.asl.json exists and
// parses, each of its placeholders has a function under functions/, every
// function declares its access, and functions/api exists.
func TestRepositoryIsDeployable(t *testing.T) {
	require.NoError(t, repositoryProblem(t))
}

func repositoryProblem(t *testing.T) error {
	t.Helper()
	src, err := LoadSources("..")
	if err != nil {
		return err
	}
	props := &MaasflowStackProps{Stage: devStage, Sources: src, AssetDir: fixtureAssets(t, src.Functions)}
	return props.Validate()
}

// Resource * is allowed only for actions that support no narrower
// resource, each for the reason below (docs/deploy.md, IAM).
const (
	reasonXRay        = "X-Ray trace segments have no resource ARN"
	reasonLogDelivery = "Step Functions log delivery is configured account-wide"
	reasonENI         = "Lambda's VPC network interfaces are created before their ARN exists"
)

var wildcardResourceActions = map[string]string{
	"xray:PutTraceSegments":          reasonXRay,
	"xray:PutTelemetryRecords":       reasonXRay,
	"xray:GetSamplingRules":          reasonXRay,
	"xray:GetSamplingTargets":        reasonXRay,
	"logs:CreateLogDelivery":         reasonLogDelivery,
	"logs:GetLogDelivery":            reasonLogDelivery,
	"logs:UpdateLogDelivery":         reasonLogDelivery,
	"logs:DeleteLogDelivery":         reasonLogDelivery,
	"logs:ListLogDeliveries":         reasonLogDelivery,
	"logs:PutResourcePolicy":         reasonLogDelivery,
	"logs:DescribeResourcePolicies":  reasonLogDelivery,
	"logs:DescribeLogGroups":         reasonLogDelivery,
	"ec2:CreateNetworkInterface":     reasonENI,
	"ec2:DescribeNetworkInterfaces":  reasonENI,
	"ec2:DescribeSubnets":            reasonENI,
	"ec2:DeleteNetworkInterface":     reasonENI,
	"ec2:AssignPrivateIpAddresses":   reasonENI,
	"ec2:UnassignPrivateIpAddresses": reasonENI,
}

// --- the grant walker

// grant is one permission a principal needs: an action on the resources
// match accepts (a resource is its literal text, or the JSON of an
// intrinsic function).
type grant struct {
	principal string // logical ID of the role or user
	action    string
	what      string // for messages
	match     func(resource string) bool
}

func literal(s string) func(string) bool { return func(r string) bool { return r == s } }

func containsAll(parts ...string) func(string) bool {
	return func(r string) bool {
		for _, p := range parts {
			if !strings.Contains(r, p) {
				return false
			}
		}
		return true
	}
}

// refersTo matches a resource built from the logical ID id.
func refersTo(id string) func(string) bool { return containsAll(`"` + id + `"`) }

// expectedGrants lists every permission each principal of the template
// needs, from functionAccess and the props the synthesis used.
func expectedGrants(t *testing.T, cfn *cfnTemplate, fns []string, full bool) []grant {
	t.Helper()
	var out []grant
	add := func(principal, what string, match func(string) bool, actions ...string) {
		for _, a := range actions {
			out = append(out, grant{principal: principal, action: a, what: what, match: match})
		}
	}
	tableID := ""
	for id, r := range cfn.Resources {
		if r.Type == "AWS::DynamoDB::Table" && functionIDPrefix(id) == "Table" {
			tableID = id
		}
	}
	anyTable := containsAll(":table/maasflow-")
	if tableID != "" {
		anyTable = refersTo(tableID)
	}
	// Item reads and writes on the table itself, only Query on its indexes.
	tableMatch := func(r string) bool { return anyTable(r) && !strings.Contains(r, "/index/") }
	indexMatch := func(ix string) func(string) bool {
		return func(r string) bool { return anyTable(r) && strings.Contains(r, "/index/"+ix+`"`) }
	}
	addIndexes := func(principal string, indexes []string) {
		for _, ix := range indexes {
			add(principal, "the table's index "+ix, indexMatch(ix), indexActions...)
		}
	}
	busID, _ := cfn.one(t, "AWS::Events::EventBus")
	smID, _ := cfn.byID(t, "AWS::StepFunctions::StateMachine", "Onboarding")
	secretsRoleID, _ := cfn.byID(t, "AWS::IAM::Role", "SiteSecretsRole")
	stage := testStage
	if !full {
		stage = devStage
	}
	smName := "maasflow-" + stage + "-onboarding"

	for _, fn := range fns {
		roleID, _ := cfn.byID(t, "AWS::IAM::Role", CamelCase(fn)+"Role")
		logsID, _ := cfn.byID(t, "AWS::Logs::LogGroup", CamelCase(fn)+"Logs")
		acc := functionAccess[fn]
		add(roleID, "own log group", refersTo(logsID), "logs:CreateLogStream", "logs:PutLogEvents")
		add(roleID, "X-Ray", literal("*"), "xray:PutTraceSegments", "xray:PutTelemetryRecords")
		add(roleID, "the table", tableMatch, acc.itemActions()...)
		addIndexes(roleID, acc.indexes)
		if acc.publish {
			add(roleID, "the bus", refersTo(busID), "events:PutEvents")
		}
		if acc.maas {
			add(roleID, "the site-secrets role", refersTo(secretsRoleID), "sts:AssumeRole", "sts:TagSession")
		}
		if acc.completeTask {
			add(roleID, "the onboarding state machine", containsAll(":stateMachine:"+smName), "states:SendTaskSuccess")
		}
		if acc.api {
			add(roleID, "this stage's site secrets", containsAll(":secret:"+stage+"/maasflow/sites/*"),
				"secretsmanager:CreateSecret", "secretsmanager:PutSecretValue")
			add(roleID, "the onboarding state machine", refersTo(smID), "states:StartExecution")
			add(roleID, "the onboarding executions", containsAll(":execution:"+smName+":*"),
				"states:StopExecution", "states:DescribeExecution")
			if full {
				add(roleID, "the secrets key", literal(testKMSKey), "kms:GenerateDataKey", "kms:Decrypt")
			}
		}
		if full && acc.reachesSite() {
			add(roleID, "VPC network interfaces", literal("*"), eniActions...)
			connTableID, _ := cfn.byID(t, "AWS::DynamoDB::Table", "ConnectorTable")
			add(roleID, "the connector queues", connectorQueues, "sqs:SendMessage")
			add(roleID, "the connector replies", refersTo(connTableID), "dynamodb:GetItem", "dynamodb:DeleteItem")
		}
		if full && acc.api {
			add(roleID, "the connector CA key", literal(testConnectorCAKey), "kms:GetPublicKey", "kms:Sign")
			add(roleID, "the connector queues", connectorQueues, connectorQueueAdmin...)
			add(roleID, "the connector DLQ alarms", containsAll(":alarm:maasflow-prod-connector-*"),
				"cloudwatch:PutMetricAlarm", "cloudwatch:DeleteAlarms")
		}
	}
	add(secretsRoleID, "the tagged site's secret",
		containsAll(":secret:"+stage+"/maasflow/sites/${aws:PrincipalTag/"+config.SiteTagKey+"}/credentials-??????"),
		"secretsmanager:GetSecretValue")
	add(secretsRoleID, "the tagged site's per-node BMC overrides",
		containsAll(":secret:"+stage+"/maasflow/sites/${aws:PrincipalTag/"+config.SiteTagKey+"}/power/*"),
		"secretsmanager:GetSecretValue")
	if full {
		add(secretsRoleID, "the secrets key", literal(testKMSKey), "kms:Decrypt")
		connRoleID, _ := cfn.byID(t, "AWS::IAM::Role", "ConnectorRole")
		connTableID, _ := cfn.byID(t, "AWS::DynamoDB::Table", "ConnectorTable")
		add(connRoleID, "its session's site's queue", containsAll(":maasflow-prod-connector-${aws:PrincipalTag/x509Subject/CN}"),
			"sqs:ReceiveMessage", "sqs:DeleteMessage")
		add(connRoleID, "its session's site's replies", refersTo(connTableID), "dynamodb:PutItem")
	}

	if slices.Contains(fns, functionReconcile) {
		out = append(out, reconcileGrants(t, cfn, smName)...)
	}
	out = append(out, batchGrants(t, cfn, smName)...)
	if _, ok := cfn.find("AWS::StepFunctions::StateMachine", "MachineWatch"); ok {
		out = append(out, machineWatchGrants(t, cfn)...)
	}
	if _, ok := cfn.find("AWS::StepFunctions::StateMachine", "Decommission"); ok {
		out = append(out, decommissionGrants(t, cfn, stage, smName, full)...)
	}

	smRole := cfn.smRole(t)
	src, err := LoadSources("..")
	require.NoError(t, err)
	for _, fn := range src.FunctionPlaceholders {
		fnID, _ := cfn.byID(t, "AWS::Lambda::Function", CamelCase(fn)+"Function")
		add(smRole, "function "+fn, refersTo(fnID), "lambda:InvokeFunction")
	}
	add(smRole, "X-Ray", literal("*"), "xray:PutTraceSegments", "xray:PutTelemetryRecords",
		"xray:GetSamplingRules", "xray:GetSamplingTargets")
	for a, reason := range wildcardResourceActions {
		if reason == reasonLogDelivery {
			add(smRole, "log delivery", literal("*"), a)
		}
	}
	if slices.Contains(src.ResourcePlaceholders, placeholderEventBusName) || slices.Contains(src.ResourcePlaceholders, placeholderEventBusArn) {
		add(smRole, "the bus", refersTo(busID), "events:PutEvents")
	}
	if slices.Contains(src.ResourcePlaceholders, placeholderTableName) {
		add(smRole, "the table", tableMatch, tableActions...)
		addIndexes(smRole, allIndexes())
	}
	return out
}

// reconcileGrants are the grants of the reconcile state machine, its
// schedule, and the api's and the reconcile function's extra grants.
func reconcileGrants(t *testing.T, cfn *cfnTemplate, onboarding string) []grant {
	t.Helper()
	smID, sm := cfn.byID(t, "AWS::StepFunctions::StateMachine", "ReconcileStateMachine")
	smRole, _ := getAtt(sm.Properties["RoleArn"])
	fnID, _ := cfn.byID(t, "AWS::Lambda::Function", CamelCase(functionReconcile)+"Function")
	fnRole, _ := cfn.byID(t, "AWS::IAM::Role", CamelCase(functionReconcile)+"Role")
	apiRole, _ := cfn.byID(t, "AWS::IAM::Role", CamelCase(functionAPI)+"Role")
	out := []grant{
		{principal: fnRole, action: "states:DescribeExecution", what: "onboarding executions", match: containsAll(":execution:" + onboarding + ":*")},
		{principal: smRole, action: "lambda:InvokeFunction", what: "the reconcile function", match: refersTo(fnID)},
		{principal: apiRole, action: "states:StartExecution", what: "the reconcile state machine", match: refersTo(smID)},
	}
	for _, a := range []string{"xray:PutTraceSegments", "xray:PutTelemetryRecords", "xray:GetSamplingRules", "xray:GetSamplingTargets"} {
		out = append(out, grant{principal: smRole, action: a, what: "X-Ray", match: literal("*")})
	}
	for a, reason := range wildcardResourceActions {
		if reason == reasonLogDelivery {
			out = append(out, grant{principal: smRole, action: a, what: "log delivery", match: literal("*")})
		}
	}
	for id, r := range cfn.Resources {
		if r.Type == "AWS::IAM::Role" && functionIDPrefix(id) == "ReconcileScheduleRole" {
			out = append(out, grant{principal: id, action: "states:StartExecution", what: "the reconcile state machine", match: refersTo(smID)})
		}
	}
	return out
}

// decommissionGrants are the grants of the decommission path: its state
// machine, the api starting, stopping and describing it, start-reimage
// starting onboardings, and the allocation service's secret.
func decommissionGrants(t *testing.T, cfn *cfnTemplate, stage, onboarding string, allocation bool) []grant {
	t.Helper()
	src, err := LoadSources("..")
	require.NoError(t, err)
	smID, sm := cfn.byID(t, "AWS::StepFunctions::StateMachine", "Decommission")
	smRole, _ := getAtt(sm.Properties["RoleArn"])
	apiRole, _ := cfn.byID(t, "AWS::IAM::Role", CamelCase(functionAPI)+"Role")
	out := []grant{
		{principal: apiRole, action: "states:StartExecution", what: "the decommission state machine", match: refersTo(smID)},
		{principal: apiRole, action: "states:StopExecution", what: "decommission executions", match: containsAll(":execution:maasflow-" + stage + "-decommission:*")},
		{principal: apiRole, action: "states:DescribeExecution", what: "decommission executions", match: containsAll(":execution:maasflow-" + stage + "-decommission:*")},
	}
	for _, fn := range src.DecommissionPlaceholders {
		fnID, _ := cfn.byID(t, "AWS::Lambda::Function", CamelCase(fn)+"Function")
		out = append(out, grant{principal: smRole, action: "lambda:InvokeFunction", what: "function " + fn, match: refersTo(fnID)})
	}
	for _, a := range []string{"xray:PutTraceSegments", "xray:PutTelemetryRecords", "xray:GetSamplingRules", "xray:GetSamplingTargets"} {
		out = append(out, grant{principal: smRole, action: a, what: "X-Ray", match: literal("*")})
	}
	for a, reason := range wildcardResourceActions {
		if reason == reasonLogDelivery {
			out = append(out, grant{principal: smRole, action: a, what: "log delivery", match: literal("*")})
		}
	}
	if _, ok := cfn.find("AWS::IAM::Role", CamelCase(functionStartReimage)+"Role"); ok {
		role, _ := cfn.byID(t, "AWS::IAM::Role", CamelCase(functionStartReimage)+"Role")
		out = append(out, grant{principal: role, action: "states:StartExecution", what: "onboardings", match: containsAll(":stateMachine:" + onboarding)})
	}
	if allocation {
		for _, fn := range []string{functionAPI, functionDrainAllocations} {
			role, _ := cfn.byID(t, "AWS::IAM::Role", CamelCase(fn)+"Role")
			out = append(out, grant{principal: role, action: "secretsmanager:GetSecretValue", what: "the allocation token",
				match: isAllocationSecretARN})
		}
	}
	return out
}

// find returns the resource of type typ built by the construct id, if any.
func (c *cfnTemplate) find(typ, id string) (string, bool) {
	for lid, r := range c.Resources {
		if r.Type == typ && functionIDPrefix(lid) == id {
			return lid, true
		}
	}
	return "", false
}

// checkGrants walks every IAM statement of the template: each action on
// each resource must be a grant of want (no unneeded grant), and each
// grant of want must be in the template (no missing one).
func checkGrants(t *testing.T, cfn *cfnTemplate, want []grant) {
	t.Helper()
	stmts := cfn.statements(t)
	require.NotEmpty(t, stmts)
	used := make([]bool, len(want))
	for _, s := range stmts {
		principals := append(slices.Clone(s.roles), s.users...)
		for _, a := range s.actions {
			assert.NotContains(t, a, "*", "wildcard action in %s", s)
			for _, r := range s.resources {
				for _, p := range principals {
					ok := false
					for i, g := range want {
						if g.principal == p && g.action == a && g.match(r) {
							used[i], ok = true, true
						}
					}
					assert.True(t, ok, "unneeded grant: %s may %s on %s", p, a, r)
				}
				if r == "*" {
					assert.Contains(t, wildcardResourceActions, a, "Resource * for %s", a)
				}
			}
		}
	}
	for i, g := range want {
		assert.True(t, used[i], "missing grant: %s may %s on %s", g.principal, g.action, g.what)
	}
	all := cfn.raw(t)
	assert.NotContains(t, all, "FullAccess")
	assert.NotContains(t, all, "AWS::IAM::ManagedPolicy")
	assert.NotContains(t, all, "AWS::IAM::AccessKey", "connector keys are made by the operator, never in a template")
	for id, r := range cfn.Resources {
		if functionIDPrefix(id) == "BackupPlanTableRole" {
			// AWS Backup's own service-role policy, and nothing else
			// (infra/production.go says why).
			b, err := json.Marshal(r.Properties["ManagedPolicyArns"])
			require.NoError(t, err)
			assert.Len(t, list(r.Properties["ManagedPolicyArns"]), 1, "%s", b)
			assert.Contains(t, string(b), ":iam::aws:policy/service-role/AWSBackupServiceRolePolicyForBackup")
			continue
		}
		if r.Type == "AWS::IAM::Role" || r.Type == "AWS::IAM::User" {
			assert.NotContains(t, r.Properties, "ManagedPolicyArns", "%s %s", r.Type, id)
		}
	}
}

// --- template decoding and lookups

type cfnTemplate struct {
	Resources  map[string]cfnResource `json:"Resources"`
	Outputs    map[string]any         `json:"Outputs"`
	Parameters map[string]any         `json:"Parameters"`
}

type cfnResource struct {
	Type           string         `json:"Type"`
	Properties     map[string]any `json:"Properties"`
	DependsOn      any            `json:"DependsOn"`
	DeletionPolicy string         `json:"DeletionPolicy"`
}

func decodeTemplate(t *testing.T, tpl assertions.Template) *cfnTemplate {
	t.Helper()
	b, err := json.Marshal(tpl.ToJSON())
	require.NoError(t, err)
	var cfn cfnTemplate
	require.NoError(t, json.Unmarshal(b, &cfn))
	require.NotEmpty(t, cfn.Resources)
	return &cfn
}

func (c *cfnTemplate) raw(t *testing.T) string {
	t.Helper()
	b, err := json.Marshal(c)
	require.NoError(t, err)
	return string(b)
}

// one returns the only resource of type typ.
func (c *cfnTemplate) one(t *testing.T, typ string) (string, cfnResource) {
	t.Helper()
	var ids []string
	for id, r := range c.Resources {
		if r.Type == typ {
			ids = append(ids, id)
		}
	}
	require.Len(t, ids, 1, "resources of type %s", typ)
	return ids[0], c.Resources[ids[0]]
}

// logicalIDRE splits a CDK logical ID into its construct path and the
// 8-character hash the CDK appends.
var logicalIDRE = regexp.MustCompile(`^(.+)([0-9A-F]{8})$`)

// functionIDPrefix returns the construct part of a logical ID.
func functionIDPrefix(logicalID string) string {
	if m := logicalIDRE.FindStringSubmatch(logicalID); m != nil {
		return m[1]
	}
	return logicalID
}

// byID returns the resource of type typ built by the construct with id
// directly under the stack.
func (c *cfnTemplate) byID(t *testing.T, typ, id string) (string, cfnResource) {
	t.Helper()
	for lid, r := range c.Resources {
		if r.Type == typ && functionIDPrefix(lid) == id {
			return lid, r
		}
	}
	require.Failf(t, "resource not found", "%s %s", typ, id)
	return "", cfnResource{}
}

func (c *cfnTemplate) smRole(t *testing.T) string {
	t.Helper()
	_, sm := c.byID(t, "AWS::StepFunctions::StateMachine", "Onboarding")
	id, _ := getAtt(sm.Properties["RoleArn"])
	require.NotEmpty(t, id, "state machine role")
	return id
}

// statement is one IAM policy statement, flattened for checks.
type statement struct {
	policy     string
	roles      []string
	users      []string
	conditions any
	actions    []string
	resources  []string
	// rawResources are the Resource entries as in the template.
	rawResources []any
}

func (s statement) String() string {
	return fmt.Sprintf("%s%v: %v on %v", s.policy, s.roles, s.actions, s.resources)
}

// statements returns every statement of every IAM policy and inline role
// policy. Resources that are intrinsic functions are rendered as JSON.
func (c *cfnTemplate) statements(t *testing.T) []statement {
	t.Helper()
	var out []statement
	add := func(policy string, roles, users []string, doc any) {
		d, _ := doc.(map[string]any)
		for _, raw := range list(d["Statement"]) {
			s, _ := raw.(map[string]any)
			require.Equal(t, "Allow", s["Effect"], policy)
			st := statement{policy: policy, roles: roles, users: users, conditions: s["Condition"]}
			for _, a := range list(s["Action"]) {
				st.actions = append(st.actions, fmt.Sprint(a))
			}
			st.rawResources = list(s["Resource"])
			for _, r := range st.rawResources {
				if str, ok := r.(string); ok {
					st.resources = append(st.resources, str)
					continue
				}
				b, err := json.Marshal(r)
				require.NoError(t, err)
				st.resources = append(st.resources, string(b))
			}
			out = append(out, st)
		}
	}
	for id, r := range c.Resources {
		switch r.Type {
		case "AWS::IAM::Policy":
			var roles, users []string
			for _, role := range list(r.Properties["Roles"]) {
				roles = append(roles, fmt.Sprint(refTarget(role)))
			}
			for _, user := range list(r.Properties["Users"]) {
				users = append(users, fmt.Sprint(refTarget(user)))
			}
			add(id, roles, users, r.Properties["PolicyDocument"])
		case "AWS::IAM::Role":
			for _, p := range list(r.Properties["Policies"]) {
				pm, _ := p.(map[string]any)
				add(id, []string{id}, nil, pm["PolicyDocument"])
			}
		}
	}
	return out
}

var subRefRE = regexp.MustCompile(`\$\{([A-Za-z0-9]+)[.}]`)

// collectRefs adds every logical ID that v refers to through Ref,
// Fn::GetAtt or Fn::Sub.
func collectRefs(v any, into map[string]bool) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			switch k {
			case "Ref":
				into[fmt.Sprint(e)] = true
			case "Fn::GetAtt":
				if id, _ := getAtt(map[string]any{k: e}); id != "" {
					into[id] = true
				}
			case "Fn::Sub":
				s := fmt.Sprint(e)
				if l := list(e); len(l) > 0 {
					s = fmt.Sprint(l[0])
					collectRefs(l[1:], into)
				}
				for _, m := range subRefRE.FindAllStringSubmatch(s, -1) {
					into[m[1]] = true
				}
			}
			collectRefs(e, into)
		}
	case []any:
		for _, e := range v {
			collectRefs(e, into)
		}
	}
}

func list(v any) []any {
	switch v := v.(type) {
	case nil:
		return nil
	case []any:
		return v
	default:
		return []any{v}
	}
}

func ref(id string) map[string]any { return map[string]any{"Ref": id} }

func refTarget(v any) any {
	if m, ok := v.(map[string]any); ok {
		return m["Ref"]
	}
	return v
}

// getAtt returns the logical ID and attribute of {"Fn::GetAtt": [id, attr]}.
func getAtt(v any) (string, string) {
	m, _ := v.(map[string]any)
	parts := list(m["Fn::GetAtt"])
	if len(parts) != 2 {
		return "", ""
	}
	return fmt.Sprint(parts[0]), fmt.Sprint(parts[1])
}

func envVars(r cfnResource) map[string]any {
	env, _ := r.Properties["Environment"].(map[string]any)
	vars, _ := env["Variables"].(map[string]any)
	return vars
}

func keySchema(pk, sk string) []any {
	return []any{
		map[string]any{"AttributeName": pk, "KeyType": "HASH"},
		map[string]any{"AttributeName": sk, "KeyType": "RANGE"},
	}
}

func attrDef(name string) map[string]any {
	return map[string]any{"AttributeName": name, "AttributeType": "S"}
}

func dedupe(s []string) []string {
	sort.Strings(s)
	return slices.Compact(s)
}
