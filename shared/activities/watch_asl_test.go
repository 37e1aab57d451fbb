package activities

import (
	"encoding/json"
	"os"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const machineWatchASLPath = "../../statemachines/machine-watch.asl.json"

// onboardingFunctions is the Catalog less the functions only the machine
// watch's state machine calls.
func onboardingFunctions() []Function {
	return slices.DeleteFunc(Catalog(Deps{}), func(f Function) bool {
		return f.Activity == "WatchSites" || f.Activity == "WatchMachine"
	})
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
	assertParsesOnTheEngine(t, raw, Catalog(Deps{}), "PollSites")
}
