package activities

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
)

// TestDecommissionASLEntersAtEveryStage: a recovery operation can start a
// decommission run at any stage (start_stage), and the entry Choice names
// only stages that exist.
func TestDecommissionASLEntersAtEveryStage(t *testing.T) {
	_, states := loadDecomASL(t)
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
	src, err := os.ReadFile(filepath.Join("..", "domain", "decommission.go"))
	require.NoError(t, err)
	var out []domain.DecommissionStage
	for _, m := range regexp.MustCompile(`(?m)^\s*DecomStage\w+\s+DecommissionStage\s*=\s*"(\w+)"`).FindAllSubmatch(src, -1) {
		out = append(out, domain.DecommissionStage(m[1]))
	}
	require.GreaterOrEqual(t, len(out), 7)
	return out
}

func TestDecommissionOutcomeEventsAreOncePerRun(t *testing.T) {
	marker := func(attempt int, detail, run string) domain.DecommissionEvent {
		return domain.DecommissionEvent{Attempt: attempt, Kind: domain.TimelineNote, Source: sourceEvent, Detail: detail, Outcome: run}
	}
	mi := "node.decommission.manual_intervention_required"
	started := "node.decommission.started"
	run0 := DecommissionRef{Attempt: 1}
	run1 := DecommissionRef{Attempt: 1, Run: 1}
	rows := []domain.DecommissionEvent{marker(1, started, "run 0"), marker(1, mi, "run 0")}
	assert.True(t, publishedThisRun(rows, run0, mi), "a repeat in the same run publishes nothing")
	assert.False(t, publishedThisRun(rows, DecommissionRef{Attempt: 2}, mi), "another attempt is its own")
	assert.False(t, publishedThisRun(rows, run1, mi), "a retried run announces its own end")
	assert.True(t, publishedThisRun(rows, run1, started), "started stays once per attempt")
	assert.True(t, publishedThisRun([]domain.DecommissionEvent{marker(1, mi, "")}, run0, mi), "an untagged marker is run 0's")
	rows = append(rows, marker(1, mi, "run 1"))
	assert.True(t, publishedThisRun(rows, run1, mi))
}

func TestDecommissionActivitiesActOnlyOnTheirRun(t *testing.T) {
	d := &domain.Decommission{Attempt: 1, Run: 2}
	assert.True(t, DecommissionRef{Attempt: 1, Run: 2}.onRun(d))
	assert.False(t, DecommissionRef{Attempt: 1, Run: 1}.onRun(d), "a run a recovery operation replaced")
	assert.False(t, DecommissionRef{Attempt: 2, Run: 2}.onRun(d))
}
