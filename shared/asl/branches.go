package asl

import (
	"fmt"
	"math"
)

// group tracks the child threads of one Parallel or Map visit. The parent
// parks on notify, which the children claim whenever one of them ends.
type group struct {
	parent   *thread
	running  map[*thread]struct{}
	results  []any
	failed   int
	done     int
	first    *failure // first failure that stops the group
	firstIdx int
	stopped  bool
	notify   *waiter
}

func newGroup(parent *thread, n int) *group {
	return &group{parent: parent, running: map[*thread]struct{}{}, results: make([]any, n), firstIdx: -1}
}

// spawn runs fn in a child thread for slot i. tolerate decides, under the
// execution's lock, whether a failure stops the group.
func (g *group) spawn(i int, prev int64, fn func(c *thread) (any, *failure), tolerate func() bool) {
	t := g.parent
	x := t.x
	c := t.child(prev)
	x.mu.Lock()
	g.running[c] = struct{}{}
	x.mu.Unlock()
	x.e.busy()
	go func() {
		defer x.e.idle()
		out, f := fn(c)
		c.detach()
		x.mu.Lock()
		defer x.mu.Unlock()
		delete(g.running, c)
		g.done++
		switch f {
		case nil:
			g.results[i] = out
		case errCanceled:
		default:
			g.failed++
			g.results[i] = errorOutput(f)
			if !g.stopped && !tolerate() {
				g.stopped = true
				g.first, g.firstIdx = f, i
				for sib := range g.running {
					x.cancelLocked(sib, &cancelReason{f: f})
				}
			}
		}
		if g.notify != nil {
			g.notify.claimLocked(x.e, wakeDone, nil, nil)
		}
	}()
}

// waitChange parks the parent until a child ends; it reports false when the
// parent itself was cancelled.
func (g *group) waitChange() bool {
	x := g.parent.x
	x.mu.Lock()
	if len(g.running) == 0 {
		x.mu.Unlock()
		return g.parent.reason() == nil
	}
	w := newWaiter()
	w.noCancel = true
	g.notify = w
	x.mu.Unlock()
	g.parent.park(w)
	x.mu.Lock()
	g.notify = nil
	x.mu.Unlock()
	return w.kind == wakeDone
}

func (g *group) runningCount() int {
	x := g.parent.x
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(g.running)
}

// waitAll parks until every child has ended. A cancelled parent still waits
// for its children to unwind, so their aborted events precede its own.
func (g *group) waitAll() {
	for g.runningCount() > 0 {
		g.waitChange()
	}
}

func (g *group) isStopped() bool {
	x := g.parent.x
	x.mu.Lock()
	defer x.mu.Unlock()
	return g.stopped
}

// parallel runs one attempt of a Parallel state. If a branch fails, the
// state fails with that branch's error and cause (AWS's recorded behaviour,
// not States.BranchFailed) and the other branches are aborted.
func (r *stateRun) parallel() (any, *failure) {
	st := r.st
	t := r.t
	eff, f := r.inputPath()
	if f != nil {
		return nil, f
	}
	if eff, f = r.parameters(eff); f != nil {
		return nil, f
	}
	started := t.record(event{typ: "ParallelStateStarted"})
	g := newGroup(t, len(st.branches))
	for i, b := range st.branches {
		b := b
		g.spawn(i, started, func(c *thread) (any, *failure) { return c.runMachine(b, eff) }, func() bool { return false })
	}
	g.waitAll()
	if t.reason() != nil {
		t.record(event{typ: "ParallelStateAborted"})
		return nil, errCanceled
	}
	if g.first != nil {
		t.record(event{typ: "ParallelStateFailed"})
		return nil, g.first
	}
	t.record(event{typ: "ParallelStateSucceeded"})
	return r.finishResult(g.results)
}

// mapState runs one attempt of a Map state: inline, or distributed (run
// inline, each item or batch as a child execution; see distributedMap).
func (r *stateRun) mapState() (any, *failure) {
	st := r.st
	t := r.t
	eff, f := r.inputPath()
	if f != nil {
		return nil, f
	}
	items, f := r.mapItems(eff)
	if f != nil {
		return nil, f
	}
	maxConc, tolCount, tolPct, f := r.mapLimits(eff)
	if f != nil {
		return nil, f
	}
	// Item inputs are built before any iteration starts, so a broken
	// ItemSelector fails the state without running anything.
	inputs := make([]any, len(items))
	for i, item := range items {
		if st.j != nil && st.j.itemSelector != nil {
			ir := &stateRun{t: t, st: st, raw: r.raw, entered: r.entered, enteredID: r.enteredID, mapItem: &mapItem{index: i, value: item}}
			v, f := st.j.itemSelector.eval(ir, jstates{})
			if f != nil {
				return nil, f
			}
			inputs[i] = v
			continue
		}
		if st.itemSelector == nil {
			inputs[i] = item
			continue
		}
		ir := &stateRun{t: t, st: st, raw: r.raw, entered: r.entered, mapItem: &mapItem{index: i, value: item}}
		v, f := st.itemSelector.eval(eff, ir, t.x.e.entropy)
		if f != nil {
			return nil, f
		}
		inputs[i] = v
	}
	// weights[i] is how many items unit i carries (a batch counts each of
	// its items when it fails); nil means one each.
	units, weights, f := r.batches(eff, inputs)
	if f != nil {
		return nil, f
	}
	var run *mapRun
	var started int64
	if st.dist != nil {
		run = r.newMapRun(len(units))
		started = t.record(event{typ: "MapRunStarted", name: run.arn})
	} else {
		started = t.record(event{typ: "MapStateStarted", index: len(items)})
	}
	g := newGroup(t, len(units))
	failedItems := 0
	tolerated := tolCount >= 0 || tolPct >= 0
	tolerate := func(i int) bool {
		if weights != nil {
			failedItems += weights[i]
		} else {
			failedItems++
		}
		if !tolerated {
			return false
		}
		if tolCount >= 0 && int64(failedItems) > tolCount {
			return false
		}
		if tolPct >= 0 && len(items) > 0 && float64(failedItems)*100/float64(len(items)) > tolPct {
			return false
		}
		return true
	}
	for i := range units {
		if maxConc > 0 {
			for g.runningCount() >= int(maxConc) && !g.isStopped() && t.reason() == nil {
				g.waitChange()
			}
		}
		if g.isStopped() || t.reason() != nil {
			break
		}
		i := i
		g.spawn(i, started, func(c *thread) (any, *failure) {
			if run != nil {
				return run.runChild(c, st.processor, i, units[i])
			}
			c.record(event{typ: "MapIterationStarted", name: st.name, index: i})
			out, f := c.runMachine(st.processor, units[i])
			switch f {
			case nil:
				c.record(event{typ: "MapIterationSucceeded", name: st.name, index: i})
			case errCanceled:
				c.record(event{typ: "MapIterationAborted", name: st.name, index: i})
			default:
				c.record(event{typ: "MapIterationFailed", name: st.name, index: i})
			}
			return out, f
		}, func() bool { return tolerate(i) })
	}
	g.waitAll()
	if weights == nil {
		failedItems = g.failed // every failure, those after the threshold too
	}
	return r.mapEnd(g, run, tolerated || run != nil, failedItems, len(items))
}

// mapEnd records how a Map attempt ended and builds its result. A
// distributed Map fails with States.ExceedToleratedFailureThreshold when
// failures exceed its threshold, which is 0 when none is set.
func (r *stateRun) mapEnd(g *group, run *mapRun, tolerated bool, failedItems, total int) (any, *failure) {
	t := r.t
	prefix := "MapState"
	if run != nil {
		prefix = "MapRun"
	}
	if t.reason() != nil {
		t.record(event{typ: prefix + "Aborted"})
		return nil, errCanceled
	}
	if g.first != nil {
		f := g.first
		if tolerated {
			f = &failure{Error: ErrExceedToleratedFailureThreshold, HasCause: true,
				Cause: "The specified tolerated failure threshold was exceeded"}
		}
		t.record(event{typ: prefix + "Failed", err: f.Error, cause: f.Cause, hasCause: f.HasCause})
		return nil, f
	}
	result := any(g.results)
	if run != nil {
		var f *failure
		if result, f = run.results(r, g.results); f != nil {
			t.record(event{typ: prefix + "Failed", err: f.Error, cause: f.Cause, hasCause: f.HasCause})
			return nil, f
		}
	}
	t.record(event{typ: prefix + "Succeeded"})
	return r.finishResult(result)
}

// mapItems returns the items a Map iterates over: its ItemReader's, or
// those ItemsPath selects from the effective input.
func (r *stateRun) mapItems(eff any) ([]any, *failure) {
	st := r.st
	if st.dist != nil && st.dist.reader != nil {
		return r.readItems(eff)
	}
	itemsVal := eff
	if st.j != nil {
		if st.j.items == nil {
			items, ok := eff.([]any)
			if !ok {
				return nil, r.queryFailure("", "Map state input must be an array but was: "+toJSON(eff))
			}
			return items, nil
		}
		v, f := st.j.items.eval(r, jstates{})
		if f != nil {
			return nil, f
		}
		items, ok := v.([]any)
		if !ok {
			return nil, r.unexpectedType(st.j.items, "array", v)
		}
		return items, nil
	}
	if st.itemsPath != nil {
		v, ok := st.itemsPath.get(eff, r)
		if !ok {
			return nil, runtimeFailure(fmt.Sprintf("Invalid path '%s' : No results for path: %s", st.itemsPath.text, st.itemsPath.normalized()))
		}
		itemsVal = v
	}
	items, ok := itemsVal.([]any)
	if !ok {
		return nil, runtimeFailure(fmt.Sprintf("Map state '%s': the ItemsPath must select a JSON array, got %s", st.name, toJSON(itemsVal)))
	}
	return items, nil
}

// mapLimits resolves MaxConcurrency and the tolerated failure thresholds
// (-1 when not set).
func (r *stateRun) mapLimits(eff any) (int64, int64, float64, *failure) {
	st := r.st
	maxConc, tolCount, tolPct := st.maxConcurrency, st.toleratedCount, st.toleratedPercent
	if st.j != nil {
		return r.jsonataMapLimits(maxConc, tolCount, tolPct)
	}
	// The causes are AWS's recorded ones ("The MaxConcurrencyPath field
	// refers to value "NoNumber" which is not a valid integer: $.x",
	// "ToleratedFailureCount cannot be negative.").
	num := func(field string, p *path, float bool) (float64, *failure) {
		v, ok := p.get(eff, r)
		if !ok {
			return 0, runtimeFailure(fmt.Sprintf("Invalid path '%s' : No results for path: %s", p.text, p.normalized()))
		}
		n, isNum := toFloat(v)
		kind := "integer"
		if float {
			kind = "float"
		}
		if !isNum || math.IsNaN(n) || (!float && n != math.Trunc(n)) {
			return 0, runtimeFailure(fmt.Sprintf("The %s field refers to value \"%s\" which is not a valid %s: %s", field, rawText(v), kind, p.text))
		}
		return n, nil
	}
	if st.maxConcurrencyPath != nil {
		n, f := num("MaxConcurrencyPath", st.maxConcurrencyPath, false)
		if f != nil {
			return 0, 0, 0, f
		}
		if n < 0 {
			return 0, 0, 0, runtimeFailure("MaxConcurrency cannot be negative.")
		}
		maxConc = int64(n)
	}
	if st.toleratedCountPath != nil {
		n, f := num("ToleratedFailureCountPath", st.toleratedCountPath, false)
		if f != nil {
			return 0, 0, 0, f
		}
		if n < 0 {
			return 0, 0, 0, runtimeFailure("ToleratedFailureCount cannot be negative.")
		}
		tolCount = int64(n)
	}
	if st.toleratedPercentPath != nil {
		n, f := num("ToleratedFailurePercentagePath", st.toleratedPercentPath, true)
		if f != nil {
			return 0, 0, 0, f
		}
		if n < 0 || n > 100 {
			return 0, 0, 0, runtimeFailure("ToleratedFailurePercentage must be between 0 and 100.")
		}
		tolPct = n
	}
	return maxConc, tolCount, tolPct, nil
}
