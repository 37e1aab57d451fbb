package api

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/maasflow/maasflow/shared/domain"
)

// The recovery frame: one implementation of the recovery operations'
// shared steps for every workflow's record kind. A workflow states its
// recovery table (domain.RecoveryTable) and a recoveryKind; what an
// operation does beyond the frame (what retry resets, what adopt checks in
// MAAS) is its own handler.

// recoveryOpOf is a recovery operation the API carries out on a record of
// kind R (an onboarding, a decommission): handle carries it out on a record
// the operation is allowed for; done recognises a record the operation
// already moved, so a repeated request answers that record instead of
// running a second time.
type recoveryOpOf[R any] struct {
	op     domain.RecoveryOperation
	handle func(s *server, rq *request, r R, reason string) (R, error)
	done   func(s *server, rq *request, r R) bool
}

// recordState is what the frame reads of a record of any kind.
type recordState struct {
	id          string
	status      string
	stage       string
	attempt     int
	run         int
	executionID string
	// open: its run is live (pending or running); frozen:
	// mark-manual-intervention froze it; cancelled: a cancel closed it.
	open, frozen, cancelled bool
}

// timelineNote is what the frame reads of a timeline row of any kind.
type timelineNote struct {
	attempt int
	kind    domain.TimelineKind
	source  string
	outcome string
	detail  string
}

// recoveryKind is what the frame needs of a record kind: its name, how to
// read and conditionally write one, its state, its workflow's recovery
// table (through allows and served), how its run is stopped and its
// timeline noted, and the answer's form (nil view: the record). Every
// operation's shared steps — the repeat check, the 409, the freeze, the
// recording of a started run's execution — are written once against it.
type recoveryKind[R any] struct {
	name  string
	get   func(s *server, ctx context.Context, id string) (R, error)
	state func(r R) recordState
	// allows is the workflow's recovery table; served lists what the API
	// carries out of it for r (allowed_operations and the 409's list).
	allows func(r R, op domain.RecoveryOperation) bool
	served func(r R) []domain.RecoveryOperation
	// why, when set, explains a refusal beyond the table's row.
	why  func(r R, op domain.RecoveryOperation) string
	view func(r R) any
	// update is the conditional write of an operation that keeps the record
	// open; close is the one that freezes it (nil: update).
	update func(s *server, ctx context.Context, id string, change func(*R) error) (R, error)
	close  func(s *server, ctx context.Context, id string, change func(*R) error) (R, error)
	// freeze moves the record to manual_intervention with reason.
	freeze func(cur *R, reason string, now time.Time)
	// setExecution records a started run's execution.
	setExecution func(cur *R, executionID string)
	// stopper stops the record's execution, or answers why it cannot.
	stopper func(s *server) (func(ctx context.Context, executionID, cause string) error, error)
	// note appends one note row to the record's timeline.
	note     func(s *server, ctx context.Context, r R, op domain.RecoveryOperation, detail string) error
	timeline func(s *server, ctx context.Context, id string) ([]timelineNote, error)
	log      func(rq *request, r R) *slog.Logger
}

// answer is the record as the operations answer it.
func (k recoveryKind[R]) answer(r R) any {
	if k.view == nil {
		return r
	}
	return k.view(r)
}

// refuse is the 409 for an operation the record's state refuses, naming
// the state and the operations allowed from it.
func (k recoveryKind[R]) refuse(r R, op domain.RecoveryOperation) *StatusError {
	st := k.state(r)
	why := ""
	if k.why != nil {
		why = k.why(r, op)
	}
	return &StatusError{Status: http.StatusConflict, Code: CodeConflict,
		Message: fmt.Sprintf("%s %s is %s at stage %s: %s is not allowed%s; allowed operations: %s",
			k.name, st.id, st.status, stageOrStart(st.stage), op, why, opList(k.served(r)))}
}

// runRecovery is the frame every recovery operation shares, whatever the
// record kind: the optional reason, the repeat check, the 409 naming the
// state and the operations allowed from it, then the operation itself.
func runRecovery[R any](s *server, rq *request, kind recoveryKind[R], op recoveryOpOf[R]) (int, any, error) {
	in, err := decodeCancel(rq)
	if err != nil {
		return 0, nil, err
	}
	r, err := kind.get(s, rq.ctx(), rq.r.PathValue("id"))
	if err != nil {
		return 0, nil, err
	}
	if op.done(s, rq, r) {
		// A repeat is not answered with a run whose execution is not
		// recorded yet: a concurrent request is starting it, and a 2xx
		// carries the run's execution id (409 names the run).
		if st := kind.state(r); runStarting(op.op, st.executionID) {
			return 0, nil, conflictf("%s %s: a concurrent %s is starting attempt %d run %d and has not recorded its execution yet; read it again",
				kind.name, st.id, op.op, st.attempt, st.run)
		}
		return http.StatusOK, kind.answer(r), nil
	}
	if !kind.allows(r, op.op) {
		return 0, nil, kind.refuse(r, op.op)
	}
	updated, err := op.handle(s, rq, r, in.Reason)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, kind.answer(updated), nil
}

// runStarting reports whether a repeat of op finds the run it would answer
// still without its execution: its starter has not answered yet.
func runStarting(op domain.RecoveryOperation, executionID string) bool {
	return op != domain.OpCancel && op != domain.OpMarkManualIntervention && executionID == ""
}

// recoveryRoutesOf is one route per served operation of a kind, so each
// has its own audit action (<kind>.<op>) on <kind>:{id}, and an unknown
// operation is a 404.
func recoveryRoutesOf[R any](base string, kind func() recoveryKind[R], ops []recoveryOpOf[R],
	handle func(s *server, rq *request, op recoveryOpOf[R]) (int, any, error)) []route {
	name := kind().name
	out := make([]route, 0, len(ops))
	for _, r := range ops {
		op := r
		out = append(out, route{method: http.MethodPost, pattern: base + "/{id}/" + string(op.op),
			action: name + "." + string(op.op), target: name + ":{id}",
			handle: func(s *server, rq *request) (int, any, error) { return handle(s, rq, op) }})
	}
	return out
}

// stopRun stops the record's execution before any write, so no later
// state of it changes the record; 503 when it cannot be stopped.
func stopRun[R any](s *server, rq *request, kind recoveryKind[R], r R, cause string) error {
	st := kind.state(r)
	if st.executionID == "" {
		return nil
	}
	stop, err := kind.stopper(s)
	if err != nil {
		return err
	}
	if err := s.auditAhead(rq); err != nil { // the stop is a change no store write carries
		return err
	}
	if err := stop(rq.ctx(), st.executionID, cause); err != nil {
		kind.log(rq, r).ErrorContext(rq.ctx(), "stop "+kind.name+" workflow", "execution_id", st.executionID, "error", err.Error())
		return &StatusError{Status: http.StatusServiceUnavailable, Code: CodeUnavailable,
			Message: fmt.Sprintf("the workflow service is unavailable; %s %s was not changed, retry later", kind.name, st.id)}
	}
	return nil
}

// noteOp records an operation on the record's timeline. The record is
// already written: a missing note is logged, not answered.
func noteOp[R any](s *server, ctx context.Context, rq *request, kind recoveryKind[R], r R, op domain.RecoveryOperation, detail string) {
	if err := kind.note(s, ctx, r, op, detail); err != nil {
		kind.log(rq, r).ErrorContext(ctx, "record the operation on the timeline", "op", string(op), "error", err.Error())
	}
}

// freezeOp is mark-manual-intervention for any kind: the execution is
// stopped first (as for cancel, so no later state of it writes the
// record), then the record becomes manual_intervention with the
// operator's reason (kind.freeze) in one conditional write, and the note
// goes on the timeline. Whatever the record holds stays held: nothing may
// touch the machine until an operator resolves it.
func freezeOp[R any](kind func() recoveryKind[R]) recoveryOpOf[R] {
	return recoveryOpOf[R]{
		op: domain.OpMarkManualIntervention,
		done: func(_ *server, _ *request, r R) bool {
			return kind().state(r).frozen
		},
		handle: func(s *server, rq *request, r R, reason string) (R, error) {
			k := kind()
			if reason == "" {
				reason = "frozen by " + rq.actor
			}
			if err := stopRun(s, rq, k, r, reason); err != nil {
				return r, err
			}
			wctx, cancel := detachedCtx(s, rq)
			defer cancel()
			now := s.clock.Now().UTC()
			st := k.state(r)
			prev := st.status
			write := k.close
			if write == nil {
				write = k.update
			}
			updated, err := write(s, wctx, st.id, func(cur *R) error {
				c := k.state(*cur)
				if c.attempt != st.attempt || !k.allows(*cur, domain.OpMarkManualIntervention) {
					// The run ended or moved on between the read and the stop.
					return k.refuse(*cur, domain.OpMarkManualIntervention)
				}
				prev = c.status
				k.freeze(cur, reason, now)
				return nil
			})
			if err != nil {
				return r, err
			}
			after := k.state(updated)
			noteOp(s, wctx, rq, k, updated, domain.OpMarkManualIntervention,
				fmt.Sprintf("frozen by %s (was %s) at stage %s: %s", rq.actor, prev, stageOrStart(after.stage), reason))
			k.log(rq, r).InfoContext(rq.ctx(), k.name+" frozen", "previous_status", prev, "stage", after.stage)
			return updated, nil
		},
	}
}

// startedWhere recognises a record whose current run an operation started:
// it is open, and match finds the operation's note on its timeline.
func startedWhere[R any](kind func() recoveryKind[R], match func(st recordState, rows []timelineNote) bool) func(s *server, rq *request, r R) bool {
	return func(s *server, rq *request, r R) bool {
		k := kind()
		st := k.state(r)
		if !st.open {
			return false
		}
		rows, err := k.timeline(s, rq.ctx(), st.id)
		if err != nil {
			return false
		}
		return match(st, rows)
	}
}

// recordExecution records the execution a recovery operation started on
// the reopened record. When another operation (a cancel, a new run) moved
// the record between this run's start and its answer, it answers 409
// saying what won, not 200 with someone else's state.
func recordExecution[R any](s *server, rq *request, kind recoveryKind[R], reopened R, op domain.RecoveryOperation, execID string) (R, error) {
	wctx, cancel := detachedCtx(s, rq)
	defer cancel()
	started := kind.state(reopened)
	var lost *recordState
	updated, err := kind.update(s, wctx, started.id, func(cur *R) error {
		lost = nil // the store calls this again on a write conflict, with the record read anew
		c := kind.state(*cur)
		if c.attempt != started.attempt || c.run != started.run || c.cancelled {
			lost = &c
			return nil
		}
		kind.setExecution(cur, execID)
		return nil
	})
	if err != nil {
		kind.log(rq, reopened).WarnContext(rq.ctx(), "record execution id", "error", err.Error())
		kind.setExecution(&reopened, execID)
		updated = reopened
	}
	if lost != nil {
		return reopened, conflictf("%s %s: %s started attempt %d run %d, but a concurrent operation won: the %s is now %s at stage %s (attempt %d run %d); read it again",
			kind.name, started.id, op, started.attempt, started.run, kind.name, lost.status, stageOrStart(lost.stage), lost.attempt, lost.run)
	}
	return updated, nil
}

// opList names operations for a message ("none" for none).
func opList(ops []domain.RecoveryOperation) string {
	if len(ops) == 0 {
		return "none"
	}
	names := make([]string, len(ops))
	for i, o := range ops {
		names[i] = string(o)
	}
	return strings.Join(names, ", ")
}

func detachedCtx(s *server, rq *request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(rq.ctx()), s.cfg.DetachedWriteTimeout)
}

// runStart is how one recovery operation starts a run of a stopped record
// (startRun): the conditional write that reopens it, the timeline note,
// what is prepared before the execution starts, and the start itself.
type runStart[R any] struct {
	op domain.RecoveryOperation
	// at names where the execution enters, for the log ("" is the top).
	at string
	// reopen changes the stored record into the new run: pending, its
	// attempt or run counted, what the operation resets. It is called only
	// on a record still on the read attempt and run whose table allows op.
	reopen func(cur *R)
	// note is the timeline note's text, given the record as it was and as
	// it is reopened.
	note func(prev, reopened R) string
	// prepare, when set, runs after the note and before the execution
	// starts; an error closes the run unstarted with why.
	prepare func(ctx context.Context, reopened R) (why string, err error)
	// start starts the execution of the reopened record.
	start func(ctx context.Context, reopened R) (executionID string, err error)
	// unstarted closes a reopened run whose execution never started with
	// why; failed, when the start itself failed, is the answer (a 503).
	unstarted func(rq *request, reopened R, why string)
	failed    func(reopened R) error
}

// startRun is the one way a recovery operation starts a run, whatever the
// record kind: the conditional write that reopens the record (refused with
// the 409 when another operation moved it since it was read), the note on
// the timeline, the preparation, the execution started, and its id
// recorded (recordExecution). A start that fails leaves the record closed
// the way its workflow says (r.unstarted) and answers 503.
func startRun[R any](s *server, rq *request, kind recoveryKind[R], r R, rs runStart[R]) (R, error) {
	ctx := rq.ctx()
	read := kind.state(r)
	prev := r
	reopened, err := kind.update(s, ctx, read.id, func(cur *R) error {
		c := kind.state(*cur)
		if c.attempt != read.attempt || c.run != read.run || !kind.allows(*cur, rs.op) {
			return kind.refuse(*cur, rs.op)
		}
		prev = *cur
		rs.reopen(cur)
		return nil
	})
	if err != nil {
		return r, err
	}
	wctx, cancel := detachedCtx(s, rq)
	defer cancel()
	noteOp(s, wctx, rq, kind, reopened, rs.op, rs.note(prev, reopened))
	if rs.prepare != nil {
		if why, err := rs.prepare(wctx, reopened); err != nil {
			rs.unstarted(rq, reopened, why)
			return r, err
		}
	}
	execID, err := rs.start(ctx, reopened)
	if err != nil {
		kind.log(rq, r).ErrorContext(ctx, "start "+kind.name+" workflow", "error", err.Error())
		rs.unstarted(rq, reopened, "the "+kind.name+" workflow could not be started")
		return r, rs.failed(reopened)
	}
	updated, err := recordExecution(s, rq, kind, reopened, rs.op, execID)
	if err != nil {
		return r, err
	}
	st := kind.state(updated)
	kind.log(rq, r).InfoContext(ctx, kind.name+" run started", "op", string(rs.op), "attempt", st.attempt, "run", st.run,
		"start_stage", rs.at, "previous_status", kind.state(prev).status)
	return updated, nil
}
