package decommission

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/domain"
)

func TestDecommissionOutcomeEventsAreOncePerRun(t *testing.T) {
	marker := func(attempt int, detail, run string) domain.DecommissionEvent {
		return domain.DecommissionEvent{Attempt: attempt, Kind: domain.TimelineNote, Source: activities.SourceEvent, Detail: detail, Outcome: run}
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
