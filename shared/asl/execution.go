package asl

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/maasflow/maasflow/shared/clock"
)

// execution is one run of a state machine. Its mutex guards the history,
// the status and the thread tree (cancellation and parked waiters).
type execution struct {
	e         *Engine
	sm        *registered
	arn, name string
	input     any
	inputText string
	startTime time.Time

	mu         sync.Mutex
	status     string
	output     any
	errName    string
	cause      string
	stopTime   time.Time
	events     eventLog
	limitHit   bool
	root       *thread
	timeoutTmr interface{ Stop() bool }
	// throttledThreads counts its threads in the engine's backlog.
	throttledThreads int
	done             chan struct{}
	endHooks         []func() // run under mu as the execution ends; see executionTask.await
	// varBytes is the serialized size of every variable the execution's
	// threads hold (AWS limits it to 10 MiB).
	varBytes atomic.Int64
}

func newExecution(e *Engine, r *registered, arn, name string, in any, inText string) *execution {
	x := &execution{
		e: e, sm: r, arn: arn, name: name, input: in, inputText: inText,
		startTime: e.clock.Now(), status: StatusRunning, done: make(chan struct{}),
	}
	x.root = &thread{x: x, vars: &varScope{}}
	return x
}

func (x *execution) start() {
	x.mu.Lock()
	x.events = newEventLog(x.sm.historyCapacity(x.e.maxHist))
	x.events.append(event{id: 1, at: x.startTime, typ: "ExecutionStarted", value: x.input, hasValue: true})
	if t := x.sm.sm.root.timeout; t > 0 {
		x.timeoutTmr = x.e.clock.AfterFunc(time.Duration(t)*time.Second, func() {
			x.mu.Lock()
			x.cancelLocked(x.root, &cancelReason{status: StatusTimedOut, f: &failure{Error: ErrTimeout, HasCause: true}})
			x.mu.Unlock()
		})
	}
	x.mu.Unlock()
	x.e.log.Debug("execution started", "execution_arn", x.arn)
	x.e.busy()
	go x.run()
}

func (x *execution) run() {
	defer x.e.idle()
	out, f := x.root.runMachine(x.sm.sm.root, x.input)
	x.finish(out, f)
	x.mu.Lock()
	n := x.throttledThreads
	x.throttledThreads = 0
	x.mu.Unlock()
	x.e.addBacklog(-n) // an execution that ended waits for nothing
}

// setThrottled moves t in or out of the engine's backlog of executions
// waiting to retry a refused invocation.
func (t *thread) setThrottled(on bool) {
	if t.throttled == on {
		return
	}
	t.throttled = on
	d := 1
	if !on {
		d = -1
	}
	t.x.mu.Lock()
	t.x.throttledThreads += d
	t.x.mu.Unlock()
	t.x.e.addBacklog(d)
}

// finish records the execution's end exactly once.
func (x *execution) finish(out any, f *failure) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.status != StatusRunning {
		return
	}
	if x.timeoutTmr != nil {
		x.timeoutTmr.Stop()
	}
	now := x.e.clock.Now()
	x.stopTime = now
	reason := x.root.reason()
	ev := event{at: now, prev: x.root.last}
	switch {
	case reason != nil && reason.status != "":
		x.status = reason.status
		ev.err, ev.cause = reason.f.Error, reason.f.Cause
		x.errName, x.cause = reason.f.Error, reason.f.Cause
		switch reason.status {
		case StatusAborted:
			ev.typ = "ExecutionAborted"
		case StatusTimedOut:
			ev.typ = "ExecutionTimedOut"
		default:
			ev.typ = "ExecutionFailed"
		}
	case f != nil:
		x.status = StatusFailed
		ev.typ, ev.err, ev.cause = "ExecutionFailed", f.Error, f.Cause
		x.errName, x.cause = f.Error, f.Cause
	case jsonSize(out) > MaxPayloadBytes:
		x.status = StatusFailed
		ev.typ, ev.err = "ExecutionFailed", ErrDataLimitExceeded
		ev.cause = "The execution output exceeds the maximum number of bytes service limit."
		x.errName, x.cause = ev.err, ev.cause
	default:
		x.status = StatusSucceeded
		x.output = out
		ev.typ, ev.value, ev.hasValue = "ExecutionSucceeded", out, true
	}
	ev.id = int64(x.events.len() + 1)
	x.events.append(ev)
	x.sm.histLen.Store(int64(x.events.len()))
	for _, h := range x.endHooks {
		h()
	}
	close(x.done)
	x.e.log.Debug("execution ended", "execution_arn", x.arn, "status", x.status)
}

func (x *execution) stop(errName, cause string) {
	x.mu.Lock()
	if x.status != StatusRunning {
		x.mu.Unlock()
		return
	}
	x.cancelLocked(x.root, &cancelReason{status: StatusAborted, f: &failure{Error: errName, Cause: cause, HasCause: cause != ""}})
	x.mu.Unlock()
	<-x.done
}

func (x *execution) describe() Execution {
	x.mu.Lock()
	defer x.mu.Unlock()
	d := Execution{
		ExecutionARN: x.arn, StateMachineARN: x.sm.arn, Name: x.name, Status: x.status,
		Input: x.inputText, Error: x.errName, Cause: x.cause,
		StartDate: x.startTime, StopDate: x.stopTime,
	}
	if x.status == StatusSucceeded {
		d.Output = toJSON(x.output)
	}
	return d
}

// cancelReason says why a thread was cancelled: status is the execution's
// final status (ABORTED, TIMED_OUT, FAILED for the history limit) or "" when
// a sibling's failure stopped a Parallel branch or Map iteration.
type cancelReason struct {
	status string
	f      *failure
}

// thread runs one state machine (the execution's, a Parallel branch's or a
// Map iteration's) in its own goroutine.
type thread struct {
	x        *execution
	parent   *thread
	children map[*thread]struct{}
	canceled atomic.Pointer[cancelReason]
	waiter   *waiter
	hcancel  context.CancelFunc
	last     int64 // id of this thread's latest event
	// throttled is set while the thread's last invocation was refused
	// (Lambda.TooManyRequestsException) and no later one admitted; only the
	// thread itself touches it.
	throttled bool
	// vars are the workflow variables this thread sees and assigns.
	vars *varScope
	// cx is set in the threads of a distributed Map's child execution:
	// its identity in the context object; its events stay out of the
	// parent's history, as a child execution's have a history of their own.
	cx *childRun
	// visiting is the state visit under way, reused from one visit to
	// the next: nothing keeps a visit's stateRun once it has returned,
	// and a transition then allocates nothing for it.
	visiting stateRun
}

func (t *thread) reason() *cancelReason { return t.canceled.Load() }

// child creates a thread under t whose first event follows prev.
func (t *thread) child(prev int64) *thread {
	c := &thread{x: t.x, parent: t, last: prev, vars: &varScope{parent: t.vars}, cx: t.cx}
	t.x.mu.Lock()
	if t.children == nil {
		t.children = map[*thread]struct{}{}
	}
	t.children[c] = struct{}{}
	if r := t.reason(); r != nil {
		c.canceled.Store(r)
	}
	t.x.mu.Unlock()
	return c
}

func (t *thread) detach() {
	if t.parent == nil {
		return
	}
	if t.vars != nil && t.vars != t.parent.vars {
		// A branch's or iteration's variables end with it.
		t.x.varBytes.Add(-int64(t.vars.total))
	}
	t.x.mu.Lock()
	delete(t.parent.children, t)
	t.x.mu.Unlock()
}

// cancelLocked cancels t and its descendants: parked waits wake at once and
// running task handlers see their context cancelled.
func (x *execution) cancelLocked(t *thread, r *cancelReason) {
	if t.canceled.Load() == nil {
		t.canceled.Store(r)
	}
	if t.waiter != nil && !t.waiter.noCancel {
		t.waiter.claimLocked(x.e, wakeCancel, nil, nil)
	}
	if t.hcancel != nil {
		t.hcancel()
	}
	for c := range t.children {
		x.cancelLocked(c, r)
	}
}

type wakeKind uint8

const (
	wakeNone wakeKind = iota
	wakeTimer
	wakeDone
	wakeCancel
	wakeHeartbeat
	wakeTimeout
)

// waiter is one parked wait of a thread. Exactly one party claims it: a
// timer, the event waited for, or a cancellation. The claimer marks the
// thread busy again (virtual time) before waking it, so the clock cannot
// move between the wake-up and the thread resuming.
type waiter struct {
	ch     chan struct{}
	kind   wakeKind
	value  any
	fail   *failure
	done   bool
	parked bool
	holds  bool // the thread stays busy while parked (task tokens)
	// noCancel waits are not woken by cancellation: a parent waiting for
	// its children keeps waiting until the cancelled children have unwound.
	noCancel bool
}

func newWaiter() *waiter { return &waiter{ch: make(chan struct{})} }

// claimLocked wakes the waiter unless it was already claimed; the caller
// holds the execution's mutex.
func (w *waiter) claimLocked(e *Engine, k wakeKind, v any, f *failure) bool {
	if w.done {
		return false
	}
	w.done, w.kind, w.value, w.fail = true, k, v, f
	if w.parked && !w.holds {
		e.busy()
	}
	close(w.ch)
	return true
}

// park blocks the thread until w is claimed.
func (t *thread) park(w *waiter) {
	x := t.x
	x.mu.Lock()
	if !w.done && !w.noCancel && t.reason() != nil {
		w.claimLocked(x.e, wakeCancel, nil, nil)
	}
	if w.done {
		x.mu.Unlock()
		return
	}
	w.parked = true
	t.waiter = w
	x.mu.Unlock()
	if !w.holds {
		x.e.idle()
	}
	<-w.ch
	x.mu.Lock()
	t.waiter = nil
	x.mu.Unlock()
}

// after claims w with kind k once d has passed on the engine's clock.
func (t *thread) after(d time.Duration, w *waiter, k wakeKind) interface{ Stop() bool } {
	return t.afterOn(t.x.e.clock, d, w, k)
}

// afterOn is after on another clock than the engine's (InvokeClock).
func (t *thread) afterOn(c clock.Clock, d time.Duration, w *waiter, k wakeKind) interface{ Stop() bool } {
	x := t.x
	return c.AfterFunc(d, func() {
		x.mu.Lock()
		w.claimLocked(x.e, k, nil, nil)
		x.mu.Unlock()
	})
}

// sleep parks the thread for d; it reports false when cancelled.
func (t *thread) sleep(d time.Duration) bool {
	if d <= 0 {
		return t.reason() == nil
	}
	w := newWaiter()
	tm := t.after(d, w, wakeTimer)
	t.park(w)
	tm.Stop()
	return w.kind == wakeTimer
}

// record appends an event to the history on behalf of t. Once the history
// limit is reached the execution fails with States.Runtime, as AWS does: the
// failure is the last event and nothing is recorded after it.
func (t *thread) record(ev event) int64 {
	if t.cx != nil {
		return t.last
	}
	x := t.x
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.limitHit || x.status != StatusRunning {
		return t.last
	}
	if x.events.len() >= x.e.maxHist-1 {
		x.limitHit = true
		x.cancelLocked(x.root, &cancelReason{status: StatusFailed, f: &failure{
			Error: ErrRuntime, HasCause: true,
			Cause: fmt.Sprintf("The execution reached the maximum number of history events (%d).", x.e.maxHist),
		}})
		// The root's last event id becomes the one before the failure.
		x.root.last = int64(x.events.len())
		return t.last
	}
	if ev.at.IsZero() {
		ev.at = x.e.clock.Now()
	}
	ev.id = int64(x.events.len() + 1)
	ev.prev = t.last
	t.last = ev.id
	x.events.append(ev)
	return ev.id
}
