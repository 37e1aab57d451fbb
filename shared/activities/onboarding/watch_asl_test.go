package onboarding

import (
	"encoding/json"
	"maps"
	"os"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/activities/aslcontract"
)

const machineWatchASLPath = "../../../statemachines/machine-watch.asl.json"

// onboardingFunctions is the Catalog less WatchSites, which only the
// machine watch's state machine calls.
func onboardingFunctions() []activities.Function {
	return slices.DeleteFunc(Catalog(activities.Deps{}), func(f activities.Function) bool { return f.Activity == "WatchSites" })
}

// TestASLMachineWaitsParkOnTheWatch: each machine wait is a WatchMachine
// task of the name the Wait state had, parked on its task token, which
// goes back to its check when woken and also when it times out (the
// watcher is down: a 15-minute poll, never a hang), and passes the check's
// poll and machine.
func TestASLMachineWaitsParkOnTheWatch(t *testing.T) {
	raw, _ := loadASL(t)
	var def struct {
		States map[string]map[string]any `json:"States"`
	}
	require.NoError(t, json.Unmarshal(raw, &def))
	states := def.States
	waits := map[string]string{"WaitForReset": "CheckReset", "WaitForReady": "CheckReady", "WaitForDeployed": "CheckDeployed", "WaitForRecovered": "CheckRecovered"}
	var parked []string
	for name, st := range states {
		if params, ok := st["Parameters"].(map[string]any); ok && params["FunctionName"] == "${WatchMachineFunctionArn}" {
			parked = append(parked, name)
		}
	}
	assert.ElementsMatch(t, slices.Collect(maps.Keys(waits)), parked)
	payloadOf := func(st map[string]any) map[string]any {
		params, _ := st["Parameters"].(map[string]any)
		payload, _ := params["Payload"].(map[string]any)
		return payload
	}
	for wait, check := range waits {
		st := states[wait]
		require.NotNil(t, st, wait)
		assert.Equal(t, "arn:aws:states:::lambda:invoke.waitForTaskToken", st["Resource"], wait)
		assert.Equal(t, check, st["Next"], wait)
		assert.Contains(t, st, "ResultPath", wait)
		assert.Nil(t, st["ResultPath"], "%s: the wake's output is dropped", wait)
		assert.Positive(t, st["TimeoutSeconds"], wait)
		payload := payloadOf(st)
		assert.Equal(t, "$$.Task.Token", payload["task_token.$"], wait)
		assert.Equal(t, "$.check.poll", payload["poll.$"], wait)
		assert.Equal(t, "$.check.system_id", payload["system_id.$"], wait)
		assert.Equal(t, payloadOf(states[check])["target"], payload["target"], wait)
		selector, _ := states[check]["ResultSelector"].(map[string]any)
		assert.Equal(t, "$.Payload.system_id", selector["system_id.$"], check)
		catches, _ := st["Catch"].([]any)
		require.NotEmpty(t, catches, wait)
		first, _ := catches[0].(map[string]any)
		assert.Equal(t, []any{"States.Timeout"}, first["ErrorEquals"], "%s catches its timeout first", wait)
		assert.Equal(t, check, first["Next"], "%s: a timed-out wait checks again", wait)
		assert.Contains(t, first, "ResultPath", wait)
		assert.Nil(t, first["ResultPath"], "%s: the timeout leaves the state as it was", wait)
	}
}

// TestMachineWatchASLCallsWatchSites: the machine watch's one Task calls
// WatchSites with the round, retries the Lambda service errors and parses
// on the engine with the Catalog's substitutions.
func TestMachineWatchASLCallsWatchSites(t *testing.T) {
	raw, err := os.ReadFile(machineWatchASLPath)
	require.NoError(t, err)
	var def struct {
		States map[string]aslState `json:"States"`
	}
	require.NoError(t, json.Unmarshal(raw, &def))
	var tasks []string
	for name, st := range def.States {
		if st.Type != "Task" {
			continue
		}
		tasks = append(tasks, name)
		assert.Equal(t, "${WatchSitesFunctionArn}", st.Parameters["FunctionName"], name)
		payload, ok := st.Parameters["Payload"].(map[string]any)
		require.True(t, ok, "state %s must build its Payload explicitly", name)
		assert.Contains(t, payload, "round.$", name)
		var retried []string
		for _, r := range st.Retry {
			retried = append(retried, r.ErrorEquals...)
		}
		for e := range lambdaService {
			assert.Contains(t, retried, e, "state %s does not retry %s", name, e)
		}
	}
	assert.Equal(t, []string{"PollSites"}, tasks)
	aslcontract.AssertParsesOnTheEngine(t, raw, contractFunctions(Catalog(activities.Deps{})), "PollSites")
}
