package activities

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/run"
)

// stageCall is the prologue and epilogue every workflow's activity
// invocation shares, whatever its record R, stage S and timeline row E:
// the record as read at the start and after each write, the stage the
// activity works in, its logger, the stage entry with its stage_entered
// row in one conditional write, the timeline rows (now or with the next
// write), and the error boundary that records a failed exit. It checks
// what it can observe — the record still the execution's — and never
// which stage came before: the ASL orders the steps. A workflow brings
// its recordRules and embeds it.
type stageCall[R any, S ~string, E any] struct {
	a        *Activities
	activity string
	stage    S
	rec      R
	log      *slog.Logger
	// pending are timeline rows (later) that go with the call's next
	// write: its next timeline rows, record update or its end.
	pending []E
	rules   recordRules[R, S, E]
}

// recordRules is what the frame needs of a workflow's record and timeline.
type recordRules[R any, S ~string, E any] struct {
	id       func(r R) string
	stageOf  func(r R) S
	setStage func(r *R, s S)
	running  func(r R) bool
	// refuse is the error of a stored record this execution may no longer
	// write (another attempt or run, closed, stopped); nil when it may.
	refuse func(ctx context.Context, r R) error
	// quiet reports an error after which the boundary writes nothing
	// (the execution no longer holds the record).
	quiet func(err error) bool
	// write is the store's conditional update with its timeline rows in
	// the same write.
	write      func(ctx context.Context, change func(*R) error, rows func(before, after R) []E) (R, error)
	appendRows func(ctx context.Context, rows ...E) error
	// mayAppend, when set, is checked before rows are appended without a
	// record write: a stopped run appends nothing.
	mayAppend func(ctx context.Context) error
	// recordID and attempt are the execution's: every row is stamped with
	// them, with now (when it has no time) and the activity's stage (when
	// it names none). fields points at a row's members.
	recordID string
	attempt  int
	now      func() time.Time
	fields   func(r *E) rowFields[S]
	// loaded, when set, is told of each record read or written.
	loaded func(prev, next R)
}

// rowFields points at the members of a timeline row the frame fills in.
type rowFields[S ~string] struct {
	recordID *string
	attempt  *int
	time     *time.Time
	stage    *S
	kind     *domain.TimelineKind
	outcome  *string
	source   *string
	detail   *string
}

// newRow is a timeline row of the workflow's row type.
func (c *stageCall[R, S, E]) newRow(kind domain.TimelineKind, outcome, source, detail string) E {
	var r E
	f := c.rules.fields(&r)
	*f.kind, *f.outcome, *f.source, *f.detail = kind, outcome, source, detail
	return r
}

// load keeps the record as last read or written.
func (c *stageCall[R, S, E]) load(r R) {
	if c.rules.loaded != nil {
		c.rules.loaded(c.rec, r)
	}
	c.rec = r
}

// enterStage moves the running record of this execution into the
// activity's stage, from whatever stage it is in, applying change in the
// same conditional write (called with the previous stage still set, so an
// activity can tell a retry of itself from a fresh entry). A record
// already there with nothing to change is not written (a poll, a retry):
// it was read for this run at the start, and every later write is
// conditional again.
func (c *stageCall[R, S, E]) enterStage(ctx context.Context, change func(*R) error, what string) error {
	if change == nil && c.rules.stageOf(c.rec) == c.stage && c.rules.running(c.rec) {
		return nil
	}
	return c.write(ctx, change, true, what)
}

// write is the one conditional write of the record: refused when the
// stored record is no longer the execution's, it applies change, moves
// the record into the stage when into is set, and carries the pending
// rows and, on a stage change, its stage_entered row.
func (c *stageCall[R, S, E]) write(ctx context.Context, change func(*R) error, into bool, what string) error {
	var prev S
	rows := func(before, _ R) []E {
		out := append([]E(nil), c.pending...)
		if !into || c.rules.stageOf(before) == c.stage {
			return out
		}
		return append(out, c.row(c.newRow(domain.TimelineStageEntered, "", "", run.EnteredDetail(c.rules.stageOf(before)))))
	}
	updated, err := c.rules.write(ctx, func(r *R) error {
		if err := c.rules.refuse(ctx, *r); err != nil {
			return err
		}
		prev = c.rules.stageOf(*r)
		if change != nil {
			if err := change(r); err != nil {
				return err
			}
		}
		if into {
			c.rules.setStage(r, c.stage)
		}
		return nil
	}, rows)
	if err != nil {
		return storeError(what, err)
	}
	c.pending = nil
	c.load(updated)
	if into && prev != c.stage {
		c.log.InfoContext(ctx, "stage entered", slog.String("from", string(prev)))
	}
	return nil
}

// row stamps a timeline row with the clock, the record, the attempt and,
// when it names none, the activity's stage.
func (c *stageCall[R, S, E]) row(r E) E {
	f := c.rules.fields(&r)
	*f.recordID = c.rules.recordID
	*f.attempt = c.rules.attempt
	if f.time.IsZero() {
		*f.time = c.rules.now().UTC()
	}
	if *f.stage == "" {
		*f.stage = c.stage
	}
	return r
}

// timeline appends the pending rows and rows, stamped by row, in one write.
func (c *stageCall[R, S, E]) timeline(ctx context.Context, rows ...E) error {
	all := append([]E(nil), c.pending...)
	for _, r := range rows {
		all = append(all, c.row(r))
	}
	if len(all) == 0 {
		return nil
	}
	if c.rules.mayAppend != nil {
		if err := c.rules.mayAppend(ctx); err != nil {
			return err
		}
	}
	if err := c.rules.appendRows(ctx, all...); err != nil {
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
func (c *stageCall[R, S, E]) later(rows ...E) {
	for _, r := range rows {
		c.pending = append(c.pending, c.row(r))
	}
}

// note records a workflow decision on the timeline.
func (c *stageCall[R, S, E]) note(ctx context.Context, source, detail string) error {
	return c.timeline(ctx, c.newRow(domain.TimelineNote, "", source, detail))
}

// exit records the stage's successful end.
func (c *stageCall[R, S, E]) exit(ctx context.Context, detail string) error {
	c.log.InfoContext(ctx, "stage exited", slog.String("outcome", outcomeOK), slog.String("detail", detail))
	return c.timeline(ctx, c.newRow(domain.TimelineStageExited, outcomeOK, "", detail))
}

// finish is every activity's boundary (deferred): it turns *errp into the
// error vocabulary, logs it once, and, when the record is in this
// activity's stage, records the failed exit on the timeline with the rows
// still pending. An execution that no longer holds the record writes
// nothing: the operator's answer is the record's last word.
func (c *stageCall[R, S, E]) finish(ctx context.Context, errp *error) {
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
	var invalid *InvalidInputError
	if errors.As(err, &invalid) || c.rules.quiet(err) || c.rules.id(c.rec) == "" || c.rules.stageOf(c.rec) != c.stage {
		return
	}
	if c.rules.mayAppend != nil && c.rules.mayAppend(ctx) != nil {
		return // stopped by an operator
	}
	// Best effort: the error that ends the activity is the one to report.
	ctx = context.WithoutCancel(ctx)
	if terr := c.timeline(ctx, c.newRow(domain.TimelineStageExited, exitOutcome(err), "",
		fmt.Sprintf("%s: %s", errorName(err), err.Error()))); terr != nil {
		c.log.WarnContext(ctx, "timeline write failed", slog.String("error", terr.Error()))
	}
}
