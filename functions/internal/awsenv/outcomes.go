package awsenv

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/metrics"
	"github.com/maasflow/maasflow/shared/store"
)

// outcomes is the activities' event bus with the run outcome metric: each
// closed onboarding and decommission is written to the function's log
// stream as EMF, with its stages' durations read from its timeline.
func (c *clients) outcomes() *metrics.Outcomes {
	return metrics.NewOutcomes(c.bus, metrics.NewEMF(os.Stdout, nil), storeTimelines{c.store}, c.logger)
}

// storeTimelines reads a closed run's stage spans from its timeline rows.
type storeTimelines struct{ s *store.Store }

func (t storeTimelines) StageSpans(ctx context.Context, workflow, runID string) ([]metrics.StageSpan, error) {
	switch workflow {
	case "onboarding":
		rows, err := t.s.ListOnboardingEvents(ctx, runID)
		return metrics.SpansFromTimeline(rows, func(r domain.TimelineEntry) (domain.TimelineKind, string, time.Time) {
			return r.Kind, string(r.Stage), r.Time
		}), err
	case "decommission":
		rows, err := t.s.ListDecommissionEvents(ctx, runID)
		return metrics.SpansFromTimeline(rows, func(r domain.DecommissionEvent) (domain.TimelineKind, string, time.Time) {
			return r.Kind, string(r.Stage), r.Time
		}), err
	}
	return nil, fmt.Errorf("no timeline for workflow %q", workflow)
}
