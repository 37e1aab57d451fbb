package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/config"
)

const (
	testAllocationURL = "https://allocations.example.com/api"
	// testAllocationSecret is under the production test stage's prefix.
	testAllocationSecret = testStage + "/maasflow/allocation-service/token"
)

// isAllocationSecretARN matches exactly the configured secret's ARN: its
// name, then the "-" and six random characters Secrets Manager appends,
// and nothing more (no other secret of that prefix).
func isAllocationSecretARN(resource string) bool {
	return resource == `{"Fn::Join":["",["arn:",{"Ref":"AWS::Partition"},":secretsmanager:",{"Ref":"AWS::Region"},":",`+
		`{"Ref":"AWS::AccountId"},":secret:`+testAllocationSecret+`-??????"]]}`
}

// splitAllocationSecret separates the grants on the allocation service's
// secret from the others.
func splitAllocationSecret(sts []statement) (other, allocation []statement) {
	for _, s := range sts {
		if len(s.resources) == 1 && strings.Contains(s.resources[0], ":secret:"+testAllocationSecret) {
			allocation = append(allocation, s)
			continue
		}
		other = append(other, s)
	}
	return other, allocation
}

func checkDecommissionStack(t *testing.T, cfn *cfnTemplate, root string, fns []string) {
	t.Helper()
	src, err := LoadSources(root)
	require.NoError(t, err)
	decomID, sm := cfn.byID(t, "AWS::StepFunctions::StateMachine", "Decommission")
	p := sm.Properties
	assert.Equal(t, "STANDARD", p["StateMachineType"])
	assert.Equal(t, map[string]any{"Enabled": true}, p["TracingConfiguration"])
	def, ok := p["DefinitionString"].(string)
	require.True(t, ok, "DefinitionString is inlined")
	assert.JSONEq(t, src.DecommissionASL, def)

	subs, _ := p["DefinitionSubstitutions"].(map[string]any)
	require.Len(t, subs, len(src.DecommissionPlaceholders))
	for ph, fn := range src.DecommissionPlaceholders {
		target, attr := getAtt(subs[ph])
		assert.Equal(t, "Arn", attr, ph)
		assert.Equal(t, CamelCase(fn)+"Function", functionIDPrefix(target), ph)
	}

	// Its role invokes exactly the functions it names.
	roleID, _ := getAtt(p["RoleArn"])
	require.NotEmpty(t, roleID)
	var invoked []string
	for _, s := range cfn.statements(t) {
		if slices.Contains(s.roles, roleID) && slices.Contains(s.actions, "lambda:InvokeFunction") {
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
	for _, fn := range src.DecommissionPlaceholders {
		want = append(want, CamelCase(fn)+"Function")
	}
	assert.ElementsMatch(t, dedupe(want), dedupe(invoked))
	assert.Len(t, dedupe(want), 9, "one function per decommission activity")

	// The api knows it; the drain and the api know the allocation service.
	for _, fn := range fns {
		_, res := cfn.byID(t, "AWS::Lambda::Function", CamelCase(fn)+"Function")
		env := envVars(res)
		switch fn {
		case functionAPI:
			assert.Equal(t, ref(decomID), env[config.EnvDecommissionStateMachine])
		default:
			assert.NotContains(t, env, config.EnvDecommissionStateMachine, fn)
		}
		if fn == functionAPI || fn == functionDrainAllocations {
			assert.Equal(t, testAllocationURL, env[config.EnvAllocationServiceURL], fn)
			assert.Equal(t, testAllocationSecret, env[config.EnvAllocationTokenSecret], fn)
		} else {
			assert.NotContains(t, env, config.EnvAllocationServiceURL, fn)
		}
	}
	raw, err := json.Marshal(cfn.Outputs)
	require.NoError(t, err)
	assert.Contains(t, string(raw), outputDecommissionArn)
}

// TestAllocationSecretNameIsValidated: the token secret is named whenever
// the allocation service is, with a name Secrets Manager accepts, under
// the stage's secret prefix and outside the sites' credentials.
func TestAllocationSecretNameIsValidated(t *testing.T) {
	src, err := LoadSources("..")
	require.NoError(t, err)
	assets := fixtureAssets(t, src.Functions)
	validate := func(url, name string) error {
		return (&MaasflowStackProps{Stage: testStage, Sources: src, AssetDir: assets, NodeAgentOCIRef: testOCIRef,
			NodeAgentDigest: testDigest, CABundle: testCA, EnrollmentAPIURL: testEnrollURL,
			AllocationServiceURL: url, AllocationSecretName: name}).Validate()
	}
	require.NoError(t, validate("", ""), "no allocation service")
	require.NoError(t, validate(testAllocationURL, testAllocationSecret))
	require.NoError(t, validate(testAllocationURL, "prod/allocation_token+v2=@x.y"))

	tests := []struct{ name, url, secret, want string }{
		{"no name for the service", testAllocationURL, "", "needs the name of the secret"},
		{"a name without the service", "", testAllocationSecret, ctxAllocationServiceURL},
		{"an IAM wildcard", testAllocationURL, "prod/maasflow/allocation-service/*", "letters, digits and /_+=.@- only"},
		{"a space", testAllocationURL, "prod/allocation token", "letters, digits and /_+=.@- only"},
		{"too long", testAllocationURL, "prod/" + strings.Repeat("a", 508), "1-512"},
		{"the old fixed path", testAllocationURL, "maasflow/allocation-service/token", `under the stage's secret prefix "prod/"`},
		{"another stage's", testAllocationURL, "dev/maasflow/allocation-service/token", `under the stage's secret prefix "prod/"`},
		{"the prefix alone", testAllocationURL, "prod/", `under the stage's secret prefix "prod/"`},
		{"the sites' credentials", testAllocationURL, "prod/" + siteSecretsPath + "site-a/token", "holds the sites' credentials"},
		{"an ARN-like suffix", testAllocationURL, "prod/allocation-token-a1B2c3", "ambiguous"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := validate(tc.url, tc.secret)
			require.Error(t, err)
			assert.Contains(t, err.Error(), ctxAllocationSecretName)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
