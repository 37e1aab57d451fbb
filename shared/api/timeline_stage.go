package api

import (
	"sort"
	"time"

	"github.com/maasflow/maasflow/shared/domain"
)

// MAAS's events are copied onto a timeline by the activity that reads
// them, after the fact, and carry the stage that was running at the read:
// a clean onboarding's commissioning events, read while waiting for the
// deployment, would all say wait_deployed. A reader wants the stage that
// was running when MAAS logged the event, so the API labels each MAAS
// event by its time (MAAS's own) against the timeline's stage entries:
// the stage entered last at or before it. An event older than every stage
// entry keeps the stage it was read in.

// stageRow is what relabelling reads of one timeline row.
type stageRow struct {
	time  time.Time
	kind  domain.TimelineKind
	stage string
}

// stagesAtEventTimes returns, for each row (sorted by time), the stage its
// label should name: the row's own for everything but MAAS events.
func stagesAtEventTimes(n int, row func(i int) stageRow) []string {
	type entry struct {
		at    time.Time
		stage string
	}
	var entries []entry
	out := make([]string, n)
	for i := range n {
		r := row(i)
		out[i] = r.stage
		if r.kind == domain.TimelineStageEntered {
			entries = append(entries, entry{r.time, r.stage})
		}
	}
	for i := range n {
		r := row(i)
		if r.kind != domain.TimelineMAASEvent {
			continue
		}
		// The first entry after the event; the one before it ran then.
		k := sort.Search(len(entries), func(j int) bool { return entries[j].at.After(r.time) })
		if k > 0 {
			out[i] = entries[k-1].stage
		}
	}
	return out
}
