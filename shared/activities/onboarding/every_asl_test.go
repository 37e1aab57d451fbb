package onboarding

import (
	"testing"

	"github.com/maasflow/maasflow/shared/activities/aslcontract"
)

const decomASLPath = "../../../statemachines/decommission.asl.json"

func loadDecomASL(t *testing.T) (raw []byte, states map[string]aslState) {
	t.Helper()
	return aslcontract.Load(t, decomASLPath)
}

// everyASLState is the states of both state machines, the decommission's
// prefixed, so that the error routes are checked against everything the
// ASL says.
func everyASLState(t *testing.T) map[string]aslState {
	t.Helper()
	_, states := loadASL(t)
	_, decom := loadDecomASL(t)
	out := make(map[string]aslState, len(states)+len(decom))
	for k, v := range states {
		out[k] = v
	}
	for k, v := range decom {
		out["decommission/"+k] = v
	}
	return out
}
