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
	note := func(attempt int, source, detail string) domain.DecommissionEvent {
		return domain.DecommissionEvent{Attempt: attempt, Kind: domain.TimelineNote, Source: source, Detail: detail}
	}
	mi := "node.decommission.manual_intervention_required"
	started := "node.decommission.started"
	rows := []domain.DecommissionEvent{note(1, sourceEvent, started), note(1, sourceEvent, mi)}
	assert.True(t, publishedThisRun(rows, 1, mi), "a repeat in the same run publishes nothing")
	assert.False(t, publishedThisRun(rows, 2, mi), "another attempt is its own")

	rows = append(rows, note(1, "retry", "attempt 1 run 1: started"))
	assert.False(t, publishedThisRun(rows, 1, mi), "a retried run announces its own end")
	assert.True(t, publishedThisRun(rows, 1, started), "started stays once per attempt")
	rows = append(rows, note(1, "mark-manual-intervention", "frozen"))
	assert.False(t, publishedThisRun(rows, 1, mi), "a freeze starts no run")
	rows = append(rows, note(1, sourceEvent, mi))
	assert.True(t, publishedThisRun(rows, 1, mi))
}
