package metrics

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/events"
)

// Publisher is what the activities publish their events through.
type Publisher interface {
	Publish(ctx context.Context, detailType string, detail any) error
}

// StageSpan is how long one stage of a run took, from its timeline.
type StageSpan struct {
	Stage    string
	Duration time.Duration
}

// Timelines reads the stage spans of a closed run, so that an outcome
// line can carry each stage's duration. workflow is "onboarding" or
// "decommission".
type Timelines interface {
	StageSpans(ctx context.Context, workflow, runID string) ([]StageSpan, error)
}

// Outcomes publishes through next and, for each event that closes a run
// (completed, failed, manual_intervention_required of an onboarding or a
// decommission), writes the run's outcome as EMF: the metric Runs by
// (Workflow, Outcome) and by (SiteId, Workflow, Outcome), a manual
// intervention's reason (its error code) by (Workflow, Reason), and
// StageDuration by (Workflow, Stage) for each stage of the run's timeline.
// The line is written only once the event is published, so the metric
// counts what consumers were told, and as often: the activities publish a
// run's closing event once (they keep what they published on the record).
type Outcomes struct {
	next      Publisher
	emf       *EMF
	timelines Timelines
	log       *slog.Logger
}

// NewOutcomes wraps next. timelines may be nil (no stage durations); log
// takes what went wrong reading a timeline, which never fails a publish.
func NewOutcomes(next Publisher, emf *EMF, timelines Timelines, log *slog.Logger) *Outcomes {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Outcomes{next: next, emf: emf, timelines: timelines, log: log}
}

// closing maps each closing detail type to its workflow and outcome.
var closing = map[string][2]string{
	events.OnboardingCompleted:                    {"onboarding", "completed"},
	events.OnboardingFailed:                       {"onboarding", "failed"},
	events.OnboardingManualInterventionRequired:   {"onboarding", "manual_intervention"},
	events.DecommissionCompleted:                  {"decommission", "completed"},
	events.DecommissionFailed:                     {"decommission", "failed"},
	events.DecommissionManualInterventionRequired: {"decommission", "manual_intervention"},
}

// Publish implements Publisher.
func (o *Outcomes) Publish(ctx context.Context, detailType string, detail any) error {
	if err := o.next.Publish(ctx, detailType, detail); err != nil {
		return err
	}
	wo, ok := closing[detailType]
	if !ok {
		return nil
	}
	run := RunOutcome{Workflow: wo[0], Outcome: wo[1]}
	var failure *events.ErrorDetail
	switch d := detail.(type) {
	case events.OnboardingDetail:
		run.SiteID, run.RunID, failure = d.SiteID, d.OnboardingID, d.Error
	case *events.OnboardingDetail:
		run.SiteID, run.RunID, failure = d.SiteID, d.OnboardingID, d.Error
	case events.DecommissionDetail:
		run.SiteID, run.RunID, failure = d.SiteID, d.DecommissionID, d.Error
	case *events.DecommissionDetail:
		run.SiteID, run.RunID, failure = d.SiteID, d.DecommissionID, d.Error
	default:
		return nil
	}
	if run.Outcome == "manual_intervention" && failure != nil {
		run.Reason = failure.Code
	}
	if o.timelines != nil && run.RunID != "" {
		spans, err := o.timelines.StageSpans(ctx, run.Workflow, run.RunID)
		if err != nil {
			o.log.WarnContext(ctx, "stage durations left out of the outcome metric", "workflow", run.Workflow, "error", err)
		}
		run.Stages = spans
	}
	o.emf.RecordOutcome(run)
	return nil
}

// RunOutcome is how one run ended.
type RunOutcome struct {
	Workflow string
	Outcome  string
	SiteID   string
	RunID    string
	// Reason is a manual intervention's error code.
	Reason string
	Stages []StageSpan
}

// RecordOutcome writes the EMF lines of one closed run.
func (e *EMF) RecordOutcome(r RunOutcome) {
	ts := e.now().UnixMilli()
	runs := []emfMetric{{Name: "Runs", Unit: "Count"}}
	dims := [][]string{{"Workflow", "Outcome"}, {"SiteId", "Workflow", "Outcome"}}
	line := map[string]any{"Workflow": r.Workflow, "Outcome": r.Outcome, "SiteId": r.SiteID, "Runs": 1}
	if r.Reason != "" {
		dims = append(dims, []string{"Workflow", "Reason"})
		line["Reason"] = r.Reason
	}
	line["_aws"] = emfMeta{Timestamp: ts, CloudWatchMetrics: []emfDirective{{Namespace: Namespace, Dimensions: dims, Metrics: runs}}}
	lines := []map[string]any{line}
	for _, s := range r.Stages {
		lines = append(lines, map[string]any{
			"_aws": emfMeta{Timestamp: ts, CloudWatchMetrics: []emfDirective{{
				Namespace: Namespace, Dimensions: [][]string{{"Workflow", "Stage"}},
				Metrics: []emfMetric{{Name: "StageDuration", Unit: "Milliseconds"}},
			}}},
			"Workflow": r.Workflow, "Stage": s.Stage, "StageDuration": s.Duration.Milliseconds(),
		})
	}
	e.write(lines)
}

// write encodes lines one per line, together.
func (e *EMF) write(lines []map[string]any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	enc := json.NewEncoder(e.w)
	for _, l := range lines {
		_ = enc.Encode(l) // a metrics line that cannot be written is not worth failing a run for
	}
}

// SpansFromTimeline pairs each stage_entered row with the next
// stage_exited row of the same stage: a stage entered again (a retry, a
// restart at that stage) adds another span. rows are in timeline order;
// row says what a row is, so that both workflows' row types fit.
func SpansFromTimeline[R any](rows []R, row func(R) (kind domain.TimelineKind, stage string, at time.Time)) []StageSpan {
	open := map[string]time.Time{}
	var spans []StageSpan
	for _, r := range rows {
		kind, stage, at := row(r)
		switch kind {
		case domain.TimelineStageEntered:
			open[stage] = at
		case domain.TimelineStageExited:
			if t, ok := open[stage]; ok {
				spans = append(spans, StageSpan{Stage: stage, Duration: at.Sub(t)})
				delete(open, stage)
			}
		}
	}
	return spans
}
