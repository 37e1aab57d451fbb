package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/config"
	"github.com/maasflow/maasflow/statemachines"
)

// checkBatch checks the batch onboarding state machine: its definition runs
// the onboarding state machine, and the api is told its ARN.
func checkBatch(t *testing.T, cfn *cfnTemplate) {
	t.Helper()
	smID, sm := cfn.byID(t, "AWS::StepFunctions::StateMachine", "BatchOnboarding")
	def, ok := sm.Properties["DefinitionString"].(string)
	require.True(t, ok)
	assert.JSONEq(t, string(statemachines.BatchOnboarding), def)
	onboardingID, _ := cfn.byID(t, "AWS::StepFunctions::StateMachine", "Onboarding")
	subs, _ := sm.Properties["DefinitionSubstitutions"].(map[string]any)
	assert.Equal(t, ref(onboardingID), subs["OnboardingStateMachineArn"])
	_, api := cfn.byID(t, "AWS::Lambda::Function", "ApiFunction")
	assert.Equal(t, ref(smID), envVars(api)[config.EnvBatchStateMachine])
}

// batchGrants are the batch state machine's grants (what .sync:2 needs on
// the onboarding machine and the managed rule) and the api's start.
func batchGrants(t *testing.T, cfn *cfnTemplate, onboarding string) []grant {
	t.Helper()
	smID, sm := cfn.byID(t, "AWS::StepFunctions::StateMachine", "BatchOnboarding")
	smRole, _ := getAtt(sm.Properties["RoleArn"])
	apiRole, _ := cfn.byID(t, "AWS::IAM::Role", CamelCase(functionAPI)+"Role")
	rule := containsAll(":rule/" + syncRuleName)
	out := []grant{
		{principal: apiRole, action: "states:StartExecution", what: "the batch state machine", match: refersTo(smID)},
		{principal: smRole, action: "states:StartExecution", what: "the onboarding state machine", match: containsAll(":stateMachine:" + onboarding)},
		{principal: smRole, action: "states:DescribeExecution", what: "the onboarding executions", match: containsAll(":execution:" + onboarding + ":*")},
		{principal: smRole, action: "states:StopExecution", what: "the onboarding executions", match: containsAll(":execution:" + onboarding + ":*")},
		{principal: smRole, action: "events:PutTargets", what: "the .sync managed rule", match: rule},
		{principal: smRole, action: "events:PutRule", what: "the .sync managed rule", match: rule},
		{principal: smRole, action: "events:DescribeRule", what: "the .sync managed rule", match: rule},
		{principal: smRole, action: "xray:PutTraceSegments", what: "X-Ray", match: literal("*")},
		{principal: smRole, action: "xray:PutTelemetryRecords", what: "X-Ray", match: literal("*")},
		{principal: smRole, action: "xray:GetSamplingRules", what: "X-Ray", match: literal("*")},
		{principal: smRole, action: "xray:GetSamplingTargets", what: "X-Ray", match: literal("*")},
	}
	for a, reason := range wildcardResourceActions {
		if reason == reasonLogDelivery {
			out = append(out, grant{principal: smRole, action: a, what: "log delivery", match: literal("*")})
		}
	}
	return out
}
