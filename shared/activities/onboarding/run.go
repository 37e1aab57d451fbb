package onboarding

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/logfield"
	"github.com/maasflow/maasflow/shared/run"
)

// OnboardingRef identifies the onboarding and the execution's attempt. It
// is the execution input, and every activity input embeds it.
type OnboardingRef struct {
	OnboardingID string `json:"onboarding_id"`
	SiteID       string `json:"site_id"`
	Hostname     string `json:"hostname"`
	Attempt      int    `json:"attempt"`
	// Run is the run of the attempt the execution is (Onboarding.Run): a
	// step of a run a recovery operation replaced (a stopped execution's
	// Lambda still in flight, which Step Functions does not cancel) is
	// stale and writes nothing.
	Run           int    `json:"run"`
	CorrelationID string `json:"correlation_id"`
	// Context is ValidateOnboarding's RunContext, which the state machine
	// passes to the steps after it; absent, they read the records.
	Context *RunContext `json:"context,omitempty"`
}

// stale reports whether the record has moved past the execution's attempt
// and run (run.Fence).
func (r OnboardingRef) stale(o domain.Onboarding) bool {
	return !run.Fence{Attempt: r.Attempt, Run: r.Run}.Holds(o.Attempt, o.Run)
}

// staleError is the refusal of a step whose attempt or run is no longer
// the record's.
func (r OnboardingRef) staleError(o domain.Onboarding) *StaleAttemptError {
	return &StaleAttemptError{OnboardingID: o.ID, Attempt: r.Attempt, Run: r.Run, Current: o.Attempt, CurrentRun: o.Run}
}

func (r OnboardingRef) validate() error {
	switch {
	case r.OnboardingID == "":
		return &activities.InvalidInputError{Field: "onboarding_id", Reason: "is required"}
	case r.Attempt < 1:
		return &activities.InvalidInputError{Field: "attempt", Reason: "must be 1 or more"}
	}
	return nil
}

// Timeline stage-exit outcomes (run's).
const (
	outcomeOK     = run.OutcomeOK
	outcomeRetry  = run.OutcomeRetry
	outcomeFailed = run.OutcomeFailed
	outcomeManual = run.OutcomeManual
)

// call is one onboarding activity invocation: the frame (activities.Frame)
// over the onboarding as read at the start, and the execution's reference.
type call struct {
	activities.Frame[domain.Onboarding, domain.Stage, domain.TimelineEntry]
	a   *Activities
	ref OnboardingRef
	// base is log without the fields that change during the call (node_id,
	// maas_system_id), which setOnboarding adds afresh.
	base *slog.Logger
}

// invocationReserve is kept back from a deadline the runtime set (the
// Lambda's), to report the error and write the timeline before it.
const invocationReserve = 5 * time.Second

// bound returns ctx limited to the invocation budget, and to the runtime's
// own deadline less the reserve when it has one.
func (a *Activities) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	// Wall time on purpose: the runtime's deadline is wall time.
	deadline := time.Now().Add(a.d.InvocationBudget)
	if dl, ok := ctx.Deadline(); ok {
		deadline = minTime(deadline, dl.Add(-invocationReserve))
	}
	return context.WithDeadline(ctx, deadline)
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// begin reads the onboarding and fences the execution: a different attempt
// owns the onboarding → StaleAttemptError, and nothing is written.
func (a *Activities) begin(ctx context.Context, activity string, stage domain.Stage, ref OnboardingRef) (*call, error) {
	log := a.d.Logger.With(
		slog.String(logfield.Activity, activity), slog.String(logfield.Stage, string(stage)),
		slog.String(logfield.OnboardingID, ref.OnboardingID), slog.String(logfield.SiteID, ref.SiteID),
		slog.String(logfield.Hostname, ref.Hostname), slog.String(logfield.CorrelationID, ref.CorrelationID),
	)
	c := &call{a: a, ref: ref, base: log}
	c.Frame = activities.Frame[domain.Onboarding, domain.Stage, domain.TimelineEntry]{
		Activity: activity, Stage: stage, Log: log, Rules: onboardingRules(a, ref, c)}
	if err := ref.validate(); err != nil {
		return c, err
	}
	ob, err := a.d.Store.GetOnboarding(ctx, ref.OnboardingID)
	if err != nil {
		return c, activities.StoreError("read onboarding", err)
	}
	if ref.stale(ob) {
		return c, ref.staleError(ob)
	}
	c.setOnboarding(ob)
	return c, nil
}

// onboardingRules is the onboarding's record and timeline for the frame.
func onboardingRules(a *Activities, ref OnboardingRef, c *call) activities.RecordRules[domain.Onboarding, domain.Stage, domain.TimelineEntry] {
	return activities.RecordRules[domain.Onboarding, domain.Stage, domain.TimelineEntry]{
		ID:       func(o domain.Onboarding) string { return o.ID },
		StageOf:  func(o domain.Onboarding) domain.Stage { return o.Stage },
		SetStage: func(o *domain.Onboarding, s domain.Stage) { o.Stage = s },
		Running:  func(o domain.Onboarding) bool { return o.Status == domain.OnboardingRunning },
		Refuse: func(_ context.Context, o domain.Onboarding) error {
			if ref.stale(o) {
				return ref.staleError(o)
			}
			if o.Status != domain.OnboardingRunning {
				return &OnboardingClosedError{OnboardingID: o.ID, Status: o.Status}
			}
			return nil
		},
		Quiet: func(err error) bool {
			var stale *StaleAttemptError
			var closed *OnboardingClosedError
			return errors.As(err, &stale) || errors.As(err, &closed)
		},
		WriteRecord: func(ctx context.Context, change func(*domain.Onboarding) error, rows func(before, after domain.Onboarding) []domain.TimelineEntry) (domain.Onboarding, error) {
			return a.d.Store.UpdateOnboardingWithTimeline(ctx, ref.OnboardingID, change, rows)
		},
		AppendRows: func(ctx context.Context, rows ...domain.TimelineEntry) error {
			return a.d.Store.AppendOnboardingEvents(ctx, rows...)
		},
		RecordID: ref.OnboardingID,
		Attempt:  ref.Attempt,
		Now:      a.d.Clock.Now,
		Fields: func(r *domain.TimelineEntry) activities.RowFields[domain.Stage] {
			return activities.RowFields[domain.Stage]{RecordID: &r.OnboardingID, Attempt: &r.Attempt, Time: &r.Time, Stage: &r.Stage,
				Kind: &r.Kind, Outcome: &r.Outcome, Source: &r.Source, Detail: &r.Detail}
		},
		Loaded: func(prev, next domain.Onboarding) {
			if next.NodeID != prev.NodeID || next.MAASSystemID != prev.MAASSystemID || prev.ID == "" {
				c.Log = c.base.With(slog.String(logfield.NodeID, next.NodeID), slog.String(logfield.MAASSystemID, next.MAASSystemID))
			}
		},
	}
}

// beginIn is begin followed by enter(nil): the prologue of the activities
// that move the onboarding into their stage before any other work. The
// call is returned even on error, for the deferred finish.
func (a *Activities) beginIn(ctx context.Context, activity string, stage domain.Stage, ref OnboardingRef) (*call, error) {
	c, err := a.begin(ctx, activity, stage, ref)
	if err != nil {
		return c, err
	}
	return c, c.enter(ctx, nil)
}

// setOnboarding keeps the onboarding as last read or written.
func (c *call) setOnboarding(ob domain.Onboarding) { c.Load(ob) }

// requireRunning refuses to work on an onboarding that is not running.
func (c *call) requireRunning() error {
	if c.Rec.Status != domain.OnboardingRunning {
		return &OnboardingClosedError{OnboardingID: c.Rec.ID, Status: c.Rec.Status}
	}
	return nil
}

// enter moves the running onboarding of this attempt into the activity's
// stage, from whatever stage it is in: the state machine alone orders the
// steps, so an activity never lists the stages it may follow, and an
// execution may enter the workflow at any stage. One conditional update
// also applies change (called with the previous stage still set, so an
// activity can tell a retry of itself from a fresh entry). A stage change
// adds a stage_entered row to the timeline in the same write.
func (c *call) enter(ctx context.Context, change func(*domain.Onboarding) error) error {
	return c.EnterStage(ctx, change, "move onboarding to stage "+string(c.Stage))
}

// update changes the running onboarding of this attempt without moving it
// (with the pending timeline rows, in one write).
func (c *call) update(ctx context.Context, change func(*domain.Onboarding) error) error {
	return c.Write(ctx, change, false, "update onboarding")
}

// stageOrStart names an onboarding stage on the timeline.
var stageOrStart = run.StageOrStart[domain.Stage]
