package activities

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

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
		return &InvalidInputError{Field: "onboarding_id", Reason: "is required"}
	case r.Attempt < 1:
		return &InvalidInputError{Field: "attempt", Reason: "must be 1 or more"}
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

// call is one activity invocation: the onboarding as read at the start,
// the stage the activity works in, and its logger.
type call struct {
	a        *Activities
	activity string
	stage    domain.Stage
	ref      OnboardingRef
	ob       domain.Onboarding
	log      *slog.Logger
	// base is log without the fields that change during the call (node_id,
	// maas_system_id), which setOnboarding adds afresh.
	base *slog.Logger
	// pending are timeline rows (later) that go with the call's next
	// write: its next timeline rows, onboarding update or its end.
	pending []domain.TimelineEntry
}

// DefaultInvocationBudget bounds one activity invocation, and with it
// every MAAS call it makes, when Deps.InvocationBudget is zero. It sits
// below the functions' Lambda timeout (60 s) and far below the Tasks'
// TimeoutSeconds, so a MAAS that is slow to answer surfaces as a retryable
// MAASTimeoutError the state machine backs off from, never as the
// platform killing the function mid-call.
const DefaultInvocationBudget = 45 * time.Second

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
	c := &call{a: a, activity: activity, stage: stage, ref: ref, log: log, base: log}
	if err := ref.validate(); err != nil {
		return c, err
	}
	ob, err := a.d.Store.GetOnboarding(ctx, ref.OnboardingID)
	if err != nil {
		return c, storeError("read onboarding", err)
	}
	if ref.stale(ob) {
		return c, ref.staleError(ob)
	}
	c.setOnboarding(ob)
	return c, nil
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

func (c *call) setOnboarding(ob domain.Onboarding) {
	if ob.NodeID != c.ob.NodeID || ob.MAASSystemID != c.ob.MAASSystemID || c.ob.ID == "" {
		c.log = c.base.With(slog.String(logfield.NodeID, ob.NodeID), slog.String(logfield.MAASSystemID, ob.MAASSystemID))
	}
	c.ob = ob
}

// requireRunning refuses to work on an onboarding that is not running.
func (c *call) requireRunning() error {
	if c.ob.Status != domain.OnboardingRunning {
		return &OnboardingClosedError{OnboardingID: c.ob.ID, Status: c.ob.Status}
	}
	return nil
}

// enter moves the running onboarding of this attempt into the activity's
// stage, from whatever stage it is in: the state machine alone orders the
// steps, so an activity never lists the stages it may follow, and an
// execution may enter the workflow at any stage. One conditional update
// also applies change (called with the previous stage still set, so an
// activity can tell a retry of itself from a fresh entry). A stage change
// adds a stage_entered row to the timeline.
func (c *call) enter(ctx context.Context, change func(*domain.Onboarding) error) error {
	if change == nil && c.ob.Stage == c.stage && c.ob.Status == domain.OnboardingRunning {
		// Already there (a poll, a retry): nothing to write. The onboarding
		// was read for this attempt in begin, and every later write is
		// conditional again.
		return nil
	}
	var prev domain.Stage
	// A stage change and its stage_entered row are one write.
	entered := func(before, _ domain.Onboarding) []domain.TimelineEntry {
		rows := append([]domain.TimelineEntry(nil), c.pending...)
		if before.Stage == c.stage {
			return rows
		}
		return append(rows, c.row(domain.TimelineEntry{
			Kind: domain.TimelineStageEntered, Stage: c.stage, Detail: run.EnteredDetail(before.Stage)}))
	}
	updated, err := c.a.d.Store.UpdateOnboardingWithTimeline(ctx, c.ref.OnboardingID, func(o *domain.Onboarding) error {
		if c.ref.stale(*o) {
			return c.ref.staleError(*o)
		}
		if o.Status != domain.OnboardingRunning {
			return &OnboardingClosedError{OnboardingID: o.ID, Status: o.Status}
		}
		prev = o.Stage
		// change sees the previous stage (DeployMachine counts a deploy only
		// when it enters the deploy stage).
		if change != nil {
			if err := change(o); err != nil {
				return err
			}
		}
		o.Stage = c.stage
		return nil
	}, entered)
	if err != nil {
		return storeError("move onboarding to stage "+string(c.stage), err)
	}
	c.pending = nil
	c.setOnboarding(updated)
	if prev != c.stage {
		c.log.InfoContext(ctx, "stage entered", slog.String("from", string(prev)))
	}
	return nil
}

// update changes the running onboarding of this attempt without moving it
// (with the pending timeline rows, in one write).
func (c *call) update(ctx context.Context, change func(*domain.Onboarding) error) error {
	pending := func(_, _ domain.Onboarding) []domain.TimelineEntry {
		return append([]domain.TimelineEntry(nil), c.pending...)
	}
	updated, err := c.a.d.Store.UpdateOnboardingWithTimeline(ctx, c.ref.OnboardingID, func(o *domain.Onboarding) error {
		if c.ref.stale(*o) {
			return c.ref.staleError(*o)
		}
		if o.Status != domain.OnboardingRunning {
			return &OnboardingClosedError{OnboardingID: o.ID, Status: o.Status}
		}
		return change(o)
	}, pending)
	if err != nil {
		return storeError("update onboarding", err)
	}
	c.pending = nil
	c.setOnboarding(updated)
	return nil
}

// row stamps a timeline row with the clock, the onboarding, the attempt
// and, when it names none, the activity's stage.
func (c *call) row(r domain.TimelineEntry) domain.TimelineEntry {
	r.OnboardingID = c.ref.OnboardingID
	r.Attempt = c.ref.Attempt
	if r.Time.IsZero() {
		r.Time = c.a.d.Clock.Now().UTC()
	}
	if r.Stage == "" {
		r.Stage = c.stage
	}
	return r
}

// timeline appends the pending rows and rows, stamped by row, in one write.
func (c *call) timeline(ctx context.Context, rows ...domain.TimelineEntry) error {
	now := c.a.d.Clock.Now().UTC()
	all := append([]domain.TimelineEntry(nil), c.pending...)
	for _, r := range rows {
		if r.Time.IsZero() {
			r.Time = now
		}
		all = append(all, c.row(r))
	}
	if len(all) == 0 {
		return nil
	}
	if err := c.a.d.Store.AppendOnboardingEvents(ctx, all...); err != nil {
		return storeError("append timeline", err)
	}
	c.pending = nil
	return nil
}

// later stamps rows and keeps them for the call's next write (timeline,
// enter, update) or, at the latest, its end (finish): rows that need not
// be stored before anything else happens cost no database call of their
// own. A row that must be stored before a side effect (a MAAS create)
// goes through timeline.
func (c *call) later(rows ...domain.TimelineEntry) {
	for _, r := range rows {
		c.pending = append(c.pending, c.row(r))
	}
}

// note records a workflow decision on the timeline.
func (c *call) note(ctx context.Context, source, detail string) error {
	return c.timeline(ctx, domain.TimelineEntry{Kind: domain.TimelineNote, Source: source, Detail: detail})
}

// exit records the stage's successful end.
func (c *call) exit(ctx context.Context, detail string) error {
	c.log.InfoContext(ctx, "stage exited", slog.String("outcome", outcomeOK), slog.String("detail", detail))
	return c.timeline(ctx, domain.TimelineEntry{Kind: domain.TimelineStageExited, Outcome: outcomeOK, Detail: detail})
}

// finish is every activity's boundary (deferred): it turns *errp into the
// error vocabulary, logs it once, and, when the onboarding is in this
// activity's stage, records the failed exit on the timeline. A stale or
// conflicting execution writes nothing.
func (c *call) finish(ctx context.Context, errp *error) {
	if *errp == nil {
		if len(c.pending) > 0 {
			if err := c.timeline(ctx); err != nil {
				*errp = failAtBoundary(ctx, c.log, c.activity, err)
			}
		}
		return
	}
	err := failAtBoundary(ctx, c.log, c.activity, *errp)
	*errp = err
	var stale *StaleAttemptError
	var closed *OnboardingClosedError
	var invalid *InvalidInputError
	if errors.As(err, &stale) || errors.As(err, &closed) || errors.As(err, &invalid) ||
		c.ob.ID == "" || c.ob.Stage != c.stage {
		return
	}
	outcome := exitOutcome(err)
	// Best effort: the error that ends the activity is the one to report.
	ctx = context.WithoutCancel(ctx)
	// The pending rows (what the call did before it failed) go with it.
	if terr := c.timeline(ctx, domain.TimelineEntry{
		Kind: domain.TimelineStageExited, Outcome: outcome, Detail: fmt.Sprintf("%s: %s", errorName(err), err.Error()),
	}); terr != nil {
		c.log.WarnContext(ctx, "timeline write failed", slog.String("error", terr.Error()))
	}
}

// stageOrStart names an onboarding stage on the timeline.
var stageOrStart = run.StageOrStart[domain.Stage]

// failAtBoundary maps err to the error vocabulary (boundary) and logs it
// once: a warning when the state machine will retry it, an error otherwise.
func failAtBoundary(ctx context.Context, log *slog.Logger, activity string, err error) error {
	err = boundary(activity, err)
	attrs := []any{slog.String("error_name", errorName(err)), slog.String("error", err.Error())}
	if classOf(err) == domain.ErrorRetryable {
		log.WarnContext(ctx, "activity failed, retryable", attrs...)
	} else {
		log.ErrorContext(ctx, "activity failed", attrs...)
	}
	return err
}

// exitOutcome is the failed stage exit's outcome on the timeline: what the
// state machine does next with err's class.
func exitOutcome(err error) string { return run.ExitOutcome(classOf(err)) }
