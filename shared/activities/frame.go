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

// Frame is the prologue and epilogue every workflow's activity
// invocation shares, whatever its record R, stage S and timeline row E:
// the record as read at the start and after each write, the stage the
// activity works in, its logger, the stage entry with its stage_entered
// row in one conditional write, the timeline rows (now or with the next
// write), and the error boundary that records a failed exit. It checks
// what it can observe — the record still the execution's — and never
// which stage came before: the ASL orders the steps. A workflow brings
// its RecordRules and embeds it.
type Frame[R any, S ~string, E any] struct {
	Activity string
	Stage    S
	Rec      R
	Log      *slog.Logger
	// Pending are timeline rows (later) that go with the call's next
	// write: its next timeline rows, record update or its end.
	Pending []E
	Rules   RecordRules[R, S, E]
}

// RecordRules is what the frame needs of a workflow's record and timeline.
type RecordRules[R any, S ~string, E any] struct {
	ID       func(r R) string
	StageOf  func(r R) S
	SetStage func(r *R, s S)
	Running  func(r R) bool
	// Refuse is the error of a stored record this execution may no longer
	// WriteRecord (another attempt or run, closed, stopped); nil when it may.
	Refuse func(ctx context.Context, r R) error
	// Quiet reports an error after which the boundary writes nothing
	// (the execution no longer holds the record).
	Quiet func(err error) bool
	// WriteRecord is the store's conditional update with its timeline rows in
	// the same write.
	WriteRecord func(ctx context.Context, change func(*R) error, rows func(before, after R) []E) (R, error)
	AppendRows  func(ctx context.Context, rows ...E) error
	// MayAppend, when set, is checked before rows are appended without a
	// record write: a stopped run appends nothing.
	MayAppend func(ctx context.Context) error
	// RecordID and attempt are the execution's: every row is stamped with
	// them, with now (when it has no time) and the activity's stage (when
	// it names none). fields points at a row's members.
	RecordID string
	Attempt  int
	Now      func() time.Time
	Fields   func(r *E) RowFields[S]
	// Loaded, when set, is told of each record read or written.
	Loaded func(prev, next R)
}

// RowFields points at the members of a timeline row the frame fills in.
type RowFields[S ~string] struct {
	RecordID *string
	Attempt  *int
	Time     *time.Time
	Stage    *S
	Kind     *domain.TimelineKind
	Outcome  *string
	Source   *string
	Detail   *string
}

// NewRow is a timeline row of the workflow's row type.
func (c *Frame[R, S, E]) NewRow(kind domain.TimelineKind, outcome, source, detail string) E {
	var r E
	f := c.Rules.Fields(&r)
	*f.Kind, *f.Outcome, *f.Source, *f.Detail = kind, outcome, source, detail
	return r
}

// load keeps the record as last read or written.
func (c *Frame[R, S, E]) Load(r R) {
	if c.Rules.Loaded != nil {
		c.Rules.Loaded(c.Rec, r)
	}
	c.Rec = r
}

// enterStage moves the running record of this execution into the
// activity's stage, from whatever stage it is in, applying change in the
// same conditional write (called with the previous stage still set, so an
// activity can tell a retry of itself from a fresh entry). A record
// already there with nothing to change is not written (a poll, a retry):
// it was read for this run at the start, and every later write is
// conditional again.
func (c *Frame[R, S, E]) EnterStage(ctx context.Context, change func(*R) error, what string) error {
	if change == nil && c.Rules.StageOf(c.Rec) == c.Stage && c.Rules.Running(c.Rec) {
		return nil
	}
	return c.Write(ctx, change, true, what)
}

// write is the one conditional write of the record: refused when the
// stored record is no longer the execution's, it applies change, moves
// the record into the stage when into is set, and carries the pending
// rows and, on a stage change, its stage_entered row.
func (c *Frame[R, S, E]) Write(ctx context.Context, change func(*R) error, into bool, what string) error {
	var prev S
	rows := func(before, _ R) []E {
		out := append([]E(nil), c.Pending...)
		if !into || c.Rules.StageOf(before) == c.Stage {
			return out
		}
		return append(out, c.Row(c.NewRow(domain.TimelineStageEntered, "", "", run.EnteredDetail(c.Rules.StageOf(before)))))
	}
	updated, err := c.Rules.WriteRecord(ctx, func(r *R) error {
		if err := c.Rules.Refuse(ctx, *r); err != nil {
			return err
		}
		prev = c.Rules.StageOf(*r)
		if change != nil {
			if err := change(r); err != nil {
				return err
			}
		}
		if into {
			c.Rules.SetStage(r, c.Stage)
		}
		return nil
	}, rows)
	if err != nil {
		return StoreError(what, err)
	}
	c.Pending = nil
	c.Load(updated)
	if into && prev != c.Stage {
		c.Log.InfoContext(ctx, "stage entered", slog.String("from", string(prev)))
	}
	return nil
}

// row stamps a timeline row with the clock, the record, the attempt and,
// when it names none, the activity's stage.
func (c *Frame[R, S, E]) Row(r E) E {
	f := c.Rules.Fields(&r)
	*f.RecordID = c.Rules.RecordID
	*f.Attempt = c.Rules.Attempt
	if f.Time.IsZero() {
		*f.Time = c.Rules.Now().UTC()
	}
	if *f.Stage == "" {
		*f.Stage = c.Stage
	}
	return r
}

// timeline appends the pending rows and rows, stamped by row, in one write.
func (c *Frame[R, S, E]) Timeline(ctx context.Context, rows ...E) error {
	all := append([]E(nil), c.Pending...)
	for _, r := range rows {
		all = append(all, c.Row(r))
	}
	if len(all) == 0 {
		return nil
	}
	if c.Rules.MayAppend != nil {
		if err := c.Rules.MayAppend(ctx); err != nil {
			return err
		}
	}
	if err := c.Rules.AppendRows(ctx, all...); err != nil {
		return StoreError("append timeline", err)
	}
	c.Pending = nil
	return nil
}

// later stamps rows and keeps them for the call's next write (timeline,
// enter, update) or, at the latest, its end (finish): rows that need not
// be stored before anything else happens cost no database call of their
// own. A row that must be stored before a side effect (a MAAS create)
// goes through timeline.
func (c *Frame[R, S, E]) Later(rows ...E) {
	for _, r := range rows {
		c.Pending = append(c.Pending, c.Row(r))
	}
}

// note records a workflow decision on the timeline.
func (c *Frame[R, S, E]) Note(ctx context.Context, source, detail string) error {
	return c.Timeline(ctx, c.NewRow(domain.TimelineNote, "", source, detail))
}

// exit records the stage's successful end.
func (c *Frame[R, S, E]) Exit(ctx context.Context, detail string) error {
	c.Log.InfoContext(ctx, "stage exited", slog.String("outcome", run.OutcomeOK), slog.String("detail", detail))
	return c.Timeline(ctx, c.NewRow(domain.TimelineStageExited, run.OutcomeOK, "", detail))
}

// finish is every activity's boundary (deferred): it turns *errp into the
// error vocabulary, logs it once, and, when the record is in this
// activity's stage, records the failed exit on the timeline with the rows
// still pending. An execution that no longer holds the record writes
// nothing: the operator's answer is the record's last word.
func (c *Frame[R, S, E]) Finish(ctx context.Context, errp *error) {
	if *errp == nil {
		if len(c.Pending) > 0 {
			if err := c.Timeline(ctx); err != nil {
				*errp = failAtBoundary(ctx, c.Log, c.Activity, err)
			}
		}
		return
	}
	err := failAtBoundary(ctx, c.Log, c.Activity, *errp)
	*errp = err
	var invalid *InvalidInputError
	if errors.As(err, &invalid) || c.Rules.Quiet(err) || c.Rules.ID(c.Rec) == "" || c.Rules.StageOf(c.Rec) != c.Stage {
		return
	}
	if c.Rules.MayAppend != nil && c.Rules.MayAppend(ctx) != nil {
		return // stopped by an operator
	}
	// Best effort: the error that ends the activity is the one to report.
	ctx = context.WithoutCancel(ctx)
	if terr := c.Timeline(ctx, c.NewRow(domain.TimelineStageExited, exitOutcome(err), "",
		fmt.Sprintf("%s: %s", errorName(err), err.Error()))); terr != nil {
		c.Log.WarnContext(ctx, "timeline write failed", slog.String("error", terr.Error()))
	}
}
