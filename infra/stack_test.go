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

// Admin API settings the test synthesises with.
const (
	testIssuer     = "https://issuer.example.com/pool-1"
	testAdminGroup = "gpu-admins"
	testOCIRef     = "registry.example.com/node-agent:1.2.3"
)

var testAudience = []string{"client-a", "client-b"}

// TestStack synthesises the app once, as `cdk synth` would, and checks the
// template. It builds the repository itself when TestRepositoryIsDeployable
// passes, and the fixture (testdata/onboarding.asl.json with placeholder
// functions) until then.
func TestStack(t *testing.T) {
	requireNode(t)

	root := ".."
	if err := repositoryProblem(t); err != nil {
		t.Logf("synthesising the fixture: the repository cannot be synthesised yet: %v", err)
		root = fixtureRoot(t)
	}
	fns, err := DiscoverFunctions(filepath.Join(root, functionsDir))
	require.NoError(t, err)
	asl, err := os.ReadFile(filepath.Join(root, onboardingASL))
	require.NoError(t, err)
	t.Setenv(envAssetDir, fixtureAssets(t, fns))

	app := awscdk.NewApp(&awscdk.AppProps{Context: &map[string]any{
		ctxJWTIssuer:   testIssuer,
		ctxJWTAudience: strings.Join(testAudience, ","),
		ctxAdminGroup:  testAdminGroup,
		// As cdk.json would give them.
		ctxNodeAgentOCIRef:      testOCIRef,
		ctxTaskSigningPubKeys:   []any{"ed25519:key-1", "ed25519:key-2"},
		ctxAllocationServiceURL: testAllocationURL,
		ctxAllocationSecretName: testAllocationSecret,
	}})
	stack, err := buildStack(app, root, os.Getenv)
	require.NoError(t, err)
	// Template_FromStack also runs CloudFormation's template checks, so a
	// dependency cycle between resources fails here.
	tpl := assertions.Template_FromStack(stack, nil)
	cfn := decodeTemplate(t, tpl)

	t.Run("one standard state machine from the ASL", func(t *testing.T) {
		tpl.ResourceCountIs(jsii.String("AWS::StepFunctions::StateMachine"), jsii.Number(float64(1+reconcileMachines(fns)+decommissionMachines(t, root))))
		tpl.HasResourceProperties(jsii.String("AWS::StepFunctions::StateMachine"), map[string]any{
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
		tableID, _ := cfn.one(t, "AWS::DynamoDB::Table")
		busID, _ := cfn.one(t, "AWS::Events::EventBus")
		smID, sm := cfn.byID(t, "AWS::StepFunctions::StateMachine", "Onboarding")
		smName, _ := sm.Properties["StateMachineName"].(string)
		require.NotEmpty(t, smName, "the state machine has a fixed name")
		apiID, _ := cfn.one(t, "AWS::ApiGatewayV2::Api")
		for _, fn := range fns {
			t.Run(fn, func(t *testing.T) {
				_, res := cfn.byID(t, "AWS::Lambda::Function", CamelCase(fn)+"Function")
				p := res.Properties
				assert.Equal(t, "provided.al2023", p["Runtime"])
				assert.Equal(t, []any{"arm64"}, p["Architectures"])
				assert.Equal(t, "bootstrap", p["Handler"])
				assert.Equal(t, map[string]any{"Mode": "Active"}, p["TracingConfig"])
				logging, _ := p["LoggingConfig"].(map[string]any)
				assert.Equal(t, "JSON", logging["LogFormat"])

				env := envVars(res)
				assert.Equal(t, ref(tableID), env[config.EnvTable])
				assert.Equal(t, ref(busID), env[config.EnvEventBus])
				assert.Equal(t, map[string]any{"Fn::GetAtt": []any{apiID, "ApiEndpoint"}}, env[config.EnvNodeAPIURL])
				if fn == functionAPI {
					assert.Equal(t, ref(smID), env[config.EnvOnboardingStateMachine])
					assert.Equal(t, testAdminGroup, env[config.EnvAdminGroup])
					assert.InDelta(t, apiTimeoutSec, p["Timeout"], 0)
				} else {
					// The ARN built from the name, not a reference.
					arn, err := json.Marshal(env[config.EnvOnboardingStateMachine])
					require.NoError(t, err)
					assert.Contains(t, string(arn), `":stateMachine:`+smName+`"`)
					assert.NotContains(t, string(arn), smID)
					assert.InDelta(t, functionTimeout(fn), p["Timeout"], 0)
				}
				assert.Equal(t, testOCIRef, env[config.EnvPackageOCIRef])
				assert.NotContains(t, env, config.EnvPackageDigest, "not configured, not set")
				assert.Equal(t, "ed25519:key-1,ed25519:key-2", env[config.EnvTaskSigningKeys])
				for name, v := range env {
					assert.NotContains(t, strings.ToLower(name), "token", "secrets never go in the environment")
					assert.NotContains(t, strings.ToLower(name), "password", "%s=%v", name, v)
				}
			})
		}
	})

	t.Run("reconcile state machine and schedule", func(t *testing.T) { checkReconcile(t, cfn, fns) })

	t.Run("IAM is least privilege", func(t *testing.T) {
		stmts := cfn.statements(t)
		require.NotEmpty(t, stmts)
		seenExceptions := map[string]bool{}
		for _, s := range stmts {
			for _, a := range s.actions {
				assert.NotContains(t, a, "*", "wildcard action in %s", s)
			}
			if !slices.Contains(s.resources, "*") {
				continue
			}
			for _, a := range s.actions {
				reason, ok := wildcardResourceActions[a]
				if assert.True(t, ok, "%s allows %s on every resource", s.policy, a) {
					seenExceptions[reason] = true
				}
			}
		}
		// The exceptions are asserted, not only tolerated: if the CDK stops
		// needing one, the list above and docs/deploy.md must shrink.
		assert.True(t, seenExceptions[reasonXRay], "X-Ray statements with Resource *")
		assert.True(t, seenExceptions[reasonLogDelivery], "log-delivery statement with Resource *")

		all := cfn.raw(t)
		assert.NotContains(t, all, "FullAccess")
		assert.NotContains(t, all, "AWS::IAM::ManagedPolicy")
		for id, r := range cfn.Resources {
			if r.Type == "AWS::IAM::Role" {
				assert.NotContains(t, r.Properties, "ManagedPolicyArns", "role %s", id)
			}
		}

		// Who may do what beyond the common grants.
		byRole := map[string][]statement{}
		for _, s := range stmts {
			for _, r := range s.roles {
				byRole[r] = append(byRole[r], s)
			}
		}
		smID, _ := cfn.byID(t, "AWS::StepFunctions::StateMachine", "Onboarding")
		for _, fn := range fns {
			roleID, _ := cfn.byID(t, "AWS::IAM::Role", CamelCase(fn)+"Role")
			has := func(action string) []statement {
				var out []statement
				for _, s := range byRole[roleID] {
					if slices.Contains(s.actions, action) {
						out = append(out, s)
					}
				}
				return out
			}
			get := has("secretsmanager:GetSecretValue")
			get, allocationGrants := splitAllocationSecret(get)
			if assert.Len(t, get, 1, fn) {
				assert.Len(t, get[0].resources, 1)
				assert.Contains(t, get[0].resources[0], ":secret:"+sitesSecretName, fn)
			}
			checkAllocationSecret(t, root, fn, allocationGrants)
			assert.NotEmpty(t, has("events:PutEvents"), fn)
			assert.NotEmpty(t, has("dynamodb:PutItem"), fn)
			assert.Empty(t, has("dynamodb:Scan"), fn)
			assert.Empty(t, has("dynamodb:DeleteTable"), fn)
			switch fn {
			case functionAPI:
				assert.NotEmpty(t, has("secretsmanager:CreateSecret"))
				assert.NotEmpty(t, has("secretsmanager:PutSecretValue"))
				if sts := withoutReconcile(has("states:SendTaskSuccess")); assert.Len(t, sts, 1) {
					assert.Equal(t, []string{`{"Ref":"` + smID + `"}`}, sts[0].resources)
				}
				var started []string
				for _, st := range withoutReconcile(has("states:StartExecution")) {
					started = append(started, st.resources...)
				}
				assert.ElementsMatch(t, apiStartable(t, cfn, root, smID), started)
			case functionStartReimage:
				if sts := has("states:StartExecution"); assert.Len(t, sts, 1) {
					assert.Contains(t, sts[0].resources[0], ":stateMachine:", "the onboarding, by name")
				}
				assert.Empty(t, has("states:SendTaskSuccess"))
			case functionAwaitEnrollment:
				if sts := has("states:SendTaskSuccess"); assert.Len(t, sts, 1) {
					assert.Contains(t, sts[0].resources[0], ":stateMachine:")
				}
				assert.Empty(t, has("states:StartExecution"))
				assert.Empty(t, has("secretsmanager:PutSecretValue"))
			default:
				assert.Empty(t, has("states:SendTaskSuccess"), fn)
				assert.Empty(t, has("states:StartExecution"), fn)
				assert.Empty(t, has("secretsmanager:PutSecretValue"), fn)
				assert.Empty(t, has("secretsmanager:CreateSecret"), fn)
			}
		}
	})

	t.Run("state machine may invoke exactly the functions it names", func(t *testing.T) {
		src, err := LoadSources(root)
		require.NoError(t, err)
		smRoleID := cfn.smRole(t)
		var invoked []string
		for _, s := range cfn.statements(t) {
			if slices.Contains(s.roles, smRoleID) && slices.Contains(s.actions, "lambda:InvokeFunction") {
				ids := map[string]bool{}
				collectRefs(s.rawResources, ids)
				for id := range ids {
					if cfn.Resources[id].Type == "AWS::Lambda::Function" {
						invoked = append(invoked, functionIDPrefix(id))
					}
				}
			}
		}
		var want []string
		for _, fn := range src.FunctionPlaceholders {
			want = append(want, CamelCase(fn)+"Function")
		}
		assert.ElementsMatch(t, dedupe(want), dedupe(invoked))
	})

	t.Run("decommission state machine", func(t *testing.T) { checkDecommissionStack(t, cfn, root, fns) })

	t.Run("table matches the store schema", func(t *testing.T) {
		_, tbl := cfn.one(t, "AWS::DynamoDB::Table")
		assert.Equal(t, "Retain", tbl.DeletionPolicy)
		p := tbl.Properties
		assert.Equal(t, store.DefaultTable, p["TableName"])
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
		tpl.ResourceCountIs(jsii.String("AWS::ApiGatewayV2::Route"), jsii.Number(3))
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

	t.Run("outputs", func(t *testing.T) {
		for _, name := range []string{outputAPIURL, outputTableName, outputEventBusName, outputStateMachineArn} {
			assert.Contains(t, cfn.Outputs, name)
		}
		assert.Empty(t, cfn.Parameters[paramJWTIssuer], "issuer given by context: no parameter")
	})
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
				assert.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}

	t.Run("string value", func(t *testing.T) {
		app := awscdk.NewApp(&awscdk.AppProps{Context: &map[string]any{ctxAdminGroup: " ops ", ctxStackName: 7}})
		got, err := contextString(app, ctxAdminGroup)
		require.NoError(t, err)
		assert.Equal(t, "ops", got)
		_, err = contextString(app, ctxStackName)
		assert.ErrorContains(t, err, "must be a string")
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
}

// TestRepositoryIsDeployable checks the repository the way synthesis
// would, without synthesising: statemachines/onboarding.asl.json exists and
// parses, each of its placeholders has a function under functions/, and
// functions/api exists.
func TestRepositoryIsDeployable(t *testing.T) {
	assert.NoError(t, repositoryProblem(t))
}

func repositoryProblem(t *testing.T) error {
	t.Helper()
	src, err := LoadSources("..")
	if err != nil {
		return err
	}
	props := &MaasflowStackProps{Sources: src, AssetDir: fixtureAssets(t, src.Functions)}
	return props.Validate()
}

// Resource * is allowed only for actions that support no narrower
// resource, each for the reason below (docs/deploy.md, IAM).
const (
	reasonXRay        = "X-Ray trace segments have no resource ARN"
	reasonLogDelivery = "Step Functions log delivery is configured account-wide"
)

var wildcardResourceActions = map[string]string{
	"xray:PutTraceSegments":         reasonXRay,
	"xray:PutTelemetryRecords":      reasonXRay,
	"xray:GetSamplingRules":         reasonXRay,
	"xray:GetSamplingTargets":       reasonXRay,
	"logs:CreateLogDelivery":        reasonLogDelivery,
	"logs:GetLogDelivery":           reasonLogDelivery,
	"logs:UpdateLogDelivery":        reasonLogDelivery,
	"logs:DeleteLogDelivery":        reasonLogDelivery,
	"logs:ListLogDeliveries":        reasonLogDelivery,
	"logs:PutResourcePolicy":        reasonLogDelivery,
	"logs:DescribeResourcePolicies": reasonLogDelivery,
	"logs:DescribeLogGroups":        reasonLogDelivery,
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
	policy    string
	roles     []string
	actions   []string
	resources []string
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
	add := func(policy string, roles []string, doc any) {
		d, _ := doc.(map[string]any)
		for _, raw := range list(d["Statement"]) {
			s, _ := raw.(map[string]any)
			require.Equal(t, "Allow", s["Effect"], policy)
			st := statement{policy: policy, roles: roles}
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
			var roles []string
			for _, role := range list(r.Properties["Roles"]) {
				roles = append(roles, fmt.Sprint(refTarget(role)))
			}
			add(id, roles, r.Properties["PolicyDocument"])
		case "AWS::IAM::Role":
			for _, p := range list(r.Properties["Policies"]) {
				pm, _ := p.(map[string]any)
				add(id, []string{id}, pm["PolicyDocument"])
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
