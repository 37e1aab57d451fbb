package decommission

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/activities/aslcontract"
	"github.com/maasflow/maasflow/shared/domain"
)

// TestDecommissionASLEntersAtEveryStage: a recovery operation can start a
// decommission run at any stage (start_stage), and the entry Choice names
// only stages that exist.
func TestDecommissionASLEntersAtEveryStage(t *testing.T) {
	_, states := aslcontract.Load(t, decomASLPath)
	assert.Equal(t, "StartStageGiven", states["BeginDecommission"].Next, "the entry comes after BeginDecommission")
	entry, ok := states["EnterAtStage"]
	require.True(t, ok)
	routed := map[domain.DecommissionStage]string{}
	for _, c := range entry.Choices {
		assert.Equal(t, "$.start_stage", c.Variable)
		routed[domain.DecommissionStage(c.StringEquals)] = c.Next
		assert.Contains(t, states, c.Next, "start_stage %s goes to a missing state", c.StringEquals)
	}
	assert.Equal(t, "UnknownStartStage", entry.Default)
	assert.Equal(t, "RecordManualIntervention", states["UnknownStartStage"].Next,
		"a bad entry after the node left service needs an operator, not the failed path")
	stages := declaredDecommissionStages(t)
	for _, s := range stages {
		assert.Contains(t, routed, s, "stage %s cannot be entered", s)
	}
	for s := range routed {
		assert.Contains(t, stages, s, "EnterAtStage routes %s, which is no stage", s)
	}
	assert.Equal(t, "ReleaseMachine", routed[domain.DecomStageRelease], "retry of the release sends it again")
}

// declaredDecommissionStages parses the domain.DecommissionStage constants
// from their source.
func declaredDecommissionStages(t *testing.T) []domain.DecommissionStage {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "..", "domain", "decommission.go"))
	require.NoError(t, err)
	var out []domain.DecommissionStage
	for _, m := range regexp.MustCompile(`(?m)^\s*DecomStage\w+\s+DecommissionStage\s*=\s*"(\w+)"`).FindAllSubmatch(src, -1) {
		out = append(out, domain.DecommissionStage(m[1]))
	}
	require.GreaterOrEqual(t, len(out), 7)
	return out
}
