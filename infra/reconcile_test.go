package main

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/config"
	"github.com/maasflow/maasflow/statemachines"
)

// functionTimeout is the Lambda timeout of a non-api function.
func functionTimeout(t *testing.T, fn string) float64 {
	t.Helper()
	switch fn {
	case functionReconcile:
		return reconcileTimeoutSec
	case functionWatchSites:
		return pollSitesTimeout(t, string(statemachines.MachineWatch))
	case functionStream:
		return streamTimeoutSec
	}
	return activityTimeoutSec
}

// checkReconcile checks the reconcile state machine, its schedule and the
// api's access to it, when the repository has functions/reconcile.
func checkReconcile(t *testing.T, cfn *cfnTemplate, fns []string) {
	t.Helper()
	if !slices.Contains(fns, functionReconcile) {
		t.Log("no functions/reconcile in this repository: nothing to check")
		return
	}
	smID, sm := cfn.byID(t, "AWS::StepFunctions::StateMachine", "ReconcileStateMachine")
	def, ok := sm.Properties["DefinitionString"].(string)
	require.True(t, ok)
	assert.JSONEq(t, string(statemachines.Reconcile), def)
	subs, _ := sm.Properties["DefinitionSubstitutions"].(map[string]any)
	target, attr := getAtt(subs["ReconcileFunctionArn"])
	assert.Equal(t, "Arn", attr)
	assert.Equal(t, "ReconcileFunction", functionIDPrefix(target))

	_, sched := cfn.byID(t, "AWS::Scheduler::Schedule", "ReconcileSchedule")
	assert.Equal(t, "rate(15 minutes)", sched.Properties["ScheduleExpression"], "the default interval")
	tgt, _ := sched.Properties["Target"].(map[string]any)
	assert.Equal(t, ref(smID), tgt["Arn"])
	assert.JSONEq(t, `{"trigger":"schedule"}`, tgt["Input"].(string))

	_, api := cfn.byID(t, "AWS::Lambda::Function", "ApiFunction")
	env := envVars(api)
	assert.Equal(t, ref(smID), env[config.EnvReconcileStateMachine])
	assert.Equal(t, "15", env[config.EnvReconcileInterval])
}

func TestRateExpression(t *testing.T) {
	assert.Equal(t, "rate(1 minute)", rateExpression(1))
	assert.Equal(t, "rate(15 minutes)", rateExpression(15))
}
