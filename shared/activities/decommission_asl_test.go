package activities

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const decomASLPath = "../../statemachines/decommission.asl.json"

func loadDecomASL(t *testing.T) (raw []byte, states map[string]aslState) {
	t.Helper()
	raw, err := os.ReadFile(decomASLPath)
	require.NoError(t, err)
	var def struct {
		States map[string]aslState `json:"States"`
	}
	require.NoError(t, json.Unmarshal(raw, &def))
	require.NotEmpty(t, def.States)
	return raw, def.States
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

func TestDecommissionASLTasksFollowTheRules(t *testing.T) {
	_, states := loadDecomASL(t)
	assertTasksFollowTheRules(t, states, DecommissionCatalog(Deps{}), []string{"arn:aws:states:::lambda:invoke"},
		[]string{"decommission_id.$", "node_id.$", "site_id.$", "mode.$", "attempt.$", "run.$", "correlation_id.$"},
		func(name string, st aslState) {
			// Only the first step may take the failed path: after it the
			// node is out of service and its tenants drained, which needs
			// an operator to undo.
			if name == "BeginDecommission" || strings.HasPrefix(name, "Record") {
				return
			}
			assert.Equal(t, "RecordManualIntervention", st.Catch[len(st.Catch)-1].Next, "state %s", name)
		})
}

func TestDecommissionASLWorkflowCodesAreDeclared(t *testing.T) {
	raw, _ := loadDecomASL(t)
	assertWorkflowCodesDeclared(t, raw, DecommissionWorkflowCodes())
}

func TestDecommissionASLParsesOnTheEngine(t *testing.T) {
	raw, _ := loadDecomASL(t)
	assertParsesOnTheEngine(t, raw, DecommissionCatalog(Deps{}), "FallbackRelease")
}

func TestDecommissionCatalog(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range append(Catalog(Deps{}), DecommissionCatalog(Deps{})...) {
		assert.False(t, seen[f.Name], "duplicate %s", f.Name)
		seen[f.Name] = true
	}
	for _, f := range DecommissionCatalog(Deps{}) {
		assert.Equal(t, f.Activity+"FunctionArn", f.Substitution)
		_, err := os.Stat(filepath.Join(".", strings.ReplaceAll(f.Name, "-", "_")+".go"))
		require.NoError(t, err, "activity %s has no file of its own", f.Activity)
		_, err = os.Stat(filepath.Join("..", "..", "functions", f.Name, "main.go"))
		require.NoError(t, err, "activity %s has no Lambda main", f.Activity)
	}
	assert.Len(t, DecommissionCatalog(Deps{}), 9)
}
