package decommission

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/activities/aslcontract"
	"github.com/maasflow/maasflow/shared/activities/onboarding"
)

const decomASLPath = "../../../statemachines/decommission.asl.json"

// contractFunctions is a catalog as aslcontract reads it.
func contractFunctions(catalog []activities.Function) []aslcontract.Function {
	out := make([]aslcontract.Function, len(catalog))
	for i, f := range catalog {
		out[i] = aslcontract.Function{Name: f.Name, Substitution: f.Substitution}
	}
	return out
}

func TestDecommissionASLTasksFollowTheRules(t *testing.T) {
	_, states := aslcontract.Load(t, decomASLPath)
	aslcontract.AssertTasksFollowTheRules(t, states, contractFunctions(Catalog(activities.Deps{})), []string{"arn:aws:states:::lambda:invoke"},
		[]string{"decommission_id.$", "node_id.$", "site_id.$", "mode.$", "attempt.$", "run.$", "correlation_id.$"},
		activities.LambdaServiceErrors(),
		func(name string, st aslcontract.State) {
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
	raw, _ := aslcontract.Load(t, decomASLPath)
	aslcontract.AssertWorkflowCodesDeclared(t, raw, WorkflowCodes())
}

func TestDecommissionASLParsesOnTheEngine(t *testing.T) {
	raw, _ := aslcontract.Load(t, decomASLPath)
	aslcontract.AssertParsesOnTheEngine(t, raw, contractFunctions(Catalog(activities.Deps{})), "FallbackRelease")
}

func TestDecommissionCatalog(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range append(onboarding.Catalog(activities.Deps{}), Catalog(activities.Deps{})...) {
		assert.False(t, seen[f.Name], "duplicate %s", f.Name)
		seen[f.Name] = true
	}
	for _, f := range Catalog(activities.Deps{}) {
		assert.Equal(t, f.Activity+"FunctionArn", f.Substitution)
		_, err := os.Stat(filepath.Join(".", strings.ReplaceAll(f.Name, "-", "_")+".go"))
		require.NoError(t, err, "activity %s has no file of its own", f.Activity)
		_, err = os.Stat(filepath.Join("..", "..", "..", "functions", f.Name, "main.go"))
		require.NoError(t, err, "activity %s has no Lambda main", f.Activity)
	}
	assert.Len(t, Catalog(activities.Deps{}), 9)
}
