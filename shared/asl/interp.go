package asl

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"time"
)

// errCanceled unwinds a cancelled thread; the execution's final status comes
// from the cancel reason, not from this failure.
var errCanceled = &failure{Error: "States.Canceled"}

// stateRun carries what one visit to a state needs: the raw input, the
// entered time and a lazily built context object.
type stateRun struct {
	t         *thread
	st        *state
	raw       any
	entered   time.Time
	enteredID int64 // id of the *StateEntered event
	// enteredPrev is the previous event id of the *StateEntered event.
	enteredPrev int64
	retryCount  int
	token       string
	mapItem     *mapItem
	ctxObj      any
	pending     map[string]any // Assign values, stored when the state succeeds
	// pendingSizes are their serialized sizes.
	pendingSizes map[string]int
	// What JSONata expressions of the visit see (see stateRun.Var): the
	// phase's $states, built once, and what the evaluation under way
	// needs.
	jsStates  map[string]any
	jsFor     uint8
	jsNow     jstates
	jsContext bool
}

type mapItem struct {
	index int
	value any
}

// context returns the context object ($$) for this visit, built on first use.
func (r *stateRun) context() any {
	if r.ctxObj != nil {
		return r.ctxObj
	}
	x := r.t.x
	stateObj := map[string]any{"Name": r.st.name, "EnteredTime": r.entered.UTC().Format(timeLayout)}
	if r.st.typ == typeTask {
		stateObj["RetryCount"] = int64(r.retryCount)
	}
	c := map[string]any{
		"Execution": map[string]any{
			"Id": x.arn, "Input": x.input, "Name": x.name, "RoleArn": x.e.roleARN(),
			"StartTime": x.startTime.UTC().Format(timeLayout), "RedriveCount": int64(0),
		},
		"StateMachine": map[string]any{"Id": x.sm.arn, "Name": x.sm.name},
		"State":        stateObj,
	}
	if cx := r.t.cx; cx != nil {
		c["Execution"] = map[string]any{
			"Id": cx.arn, "Input": cx.input, "Name": cx.name, "RoleArn": x.e.roleARN(),
			"StartTime": cx.start.UTC().Format(timeLayout), "RedriveCount": int64(0),
		}
		c["StateMachine"] = map[string]any{"Id": cx.smARN, "Name": cx.smName}
	}
	if r.token != "" {
		c["Task"] = map[string]any{"Token": r.token}
	}
	if r.mapItem != nil {
		c["Map"] = map[string]any{"Item": map[string]any{"Index": int64(r.mapItem.index), "Value": r.mapItem.value}}
	}
	r.ctxObj = c
	return c
}

// runMachine runs a state machine from StartAt and returns its output.
func (t *thread) runMachine(m *machine, input any) (any, *failure) {
	name := m.startAt
	// The first state's input is measured on entry; every later one is the
	// state before's output, measured as it left (values do not change).
	measured := false
	for {
		if t.reason() != nil {
			return nil, errCanceled
		}
		st := m.states[name]
		out, next, f := t.runState(st, input, measured)
		if f != nil {
			return nil, f
		}
		if next == "" {
			return out, nil
		}
		name, input, measured = next, out, true
	}
}

// runState runs one visit to a state and returns its output and the next
// state's name ("" when the machine ends). measured says raw is known to be
// within the payload limit already. A States.Runtime failure the state
// raised leaves it naming the state.
func (t *thread) runState(st *state, raw any, measured bool) (any, string, *failure) {
	var entered int64
	out, next, f := t.visit(st, raw, measured, &entered)
	if f != nil && f.unplaced {
		f = f.placed(st.name, entered)
	}
	return out, next, f
}

// visit is runState's work; it stores the id of the *StateEntered event
// in entered.
func (t *thread) visit(st *state, raw any, measured bool, entered *int64) (any, string, *failure) {
	r := &t.visiting
	*r = stateRun{t: t, st: st, raw: raw, entered: t.x.e.clock.Now(), enteredPrev: t.last}
	*entered = t.record(event{at: r.entered, typ: st.enteredType, name: st.name, value: raw, hasValue: true})
	r.enteredID = *entered
	if !measured && jsonSize(raw) > MaxPayloadBytes {
		return nil, "", dataLimit(st.name)
	}
	var out any
	var next string
	var f *failure
	switch st.typ {
	case typePass:
		out, f = r.pass()
		next = st.next
	case typeSucceed:
		out, f = r.passThrough()
	case typeChoice:
		out, next, f = r.choice()
	case typeWait:
		out, f = r.wait()
		next = st.next
	case typeFail:
		return nil, "", r.fail()
	case typeTask, typeParallel, typeMap:
		out, next, f := r.withRetry()
		if f == nil {
			r.commitAssign()
		}
		return out, next, f
	}
	if f != nil {
		return nil, "", f
	}
	if st.typ != typeChoice && st.typ != typeSucceed && st.end {
		next = ""
	}
	// A Choice, Wait or Succeed state without InputPath and OutputPath
	// passes its input on as it is, and the input was measured already.
	passesInput := (st.typ == typeChoice || st.typ == typeWait || st.typ == typeSucceed) &&
		st.inputPath == nil && !st.inputNull && st.outputPath == nil && !st.outputNull
	if !passesInput && jsonSize(out) > MaxPayloadBytes {
		return nil, "", dataLimit(st.name)
	}
	r.exited(out)
	r.commitAssign()
	return out, next, nil
}

func dataLimit(name string) *failure {
	return &failure{Error: ErrDataLimitExceeded, HasCause: true,
		Cause: fmt.Sprintf("The state/task '%s' returned a result with a size exceeding the maximum number of bytes service limit.", name)}
}

// inputPath applies InputPath to the raw input.
func (r *stateRun) inputPath() (any, *failure) {
	st := r.st
	if st.inputNull {
		return map[string]any{}, nil
	}
	if st.inputPath == nil {
		return r.raw, nil
	}
	v, ok := st.inputPath.get(r.raw, r)
	if !ok {
		return nil, runtimeFailure(fmt.Sprintf("Invalid path '%s' : No results for path: %s", st.inputPath.text, st.inputPath.normalized()))
	}
	return v, nil
}

// outputPath applies OutputPath to v.
func (r *stateRun) outputPath(v any) (any, *failure) {
	st := r.st
	if st.outputNull {
		return map[string]any{}, nil
	}
	if st.outputPath == nil {
		return v, nil
	}
	out, ok := st.outputPath.get(v, r)
	if !ok {
		return nil, runtimeFailure(fmt.Sprintf("Invalid path '%s' : No results for path: %s", st.outputPath.text, st.outputPath.normalized()))
	}
	return out, nil
}

// resultPath places result into the raw input as ResultPath says.
func (r *stateRun) resultPath(result any) (any, *failure) {
	st := r.st
	if st.resultNull {
		return r.raw, nil
	}
	if st.resultPath == nil {
		return result, nil
	}
	out, ok := st.resultPath.set(r.raw, result)
	if !ok {
		return nil, &failure{Error: ErrResultPathMatchFailure, HasCause: true,
			Cause: fmt.Sprintf("Unable to apply ResultPath '%s' to input '%s'", st.resultPath.text, toJSON(r.raw))}
	}
	return out, nil
}

// finishResult runs ResultSelector, ResultPath and OutputPath on a result
// (Assign and Output in a JSONata state).
func (r *stateRun) finishResult(result any) (any, *failure) {
	if r.st.j != nil {
		return r.jsonataFinish(jstates{result: result, hasResult: true}, result)
	}
	if r.st.resultSelector != nil {
		v, f := r.st.resultSelector.eval(result, r, r.t.x.e.entropy)
		if f != nil {
			return nil, f
		}
		result = v
	}
	if f := r.evalAssign(result); f != nil {
		return nil, f
	}
	out, f := r.resultPath(result)
	if f == nil {
		out, f = r.outputPath(out)
	}
	if f != nil {
		r.pending = nil
		return nil, f
	}
	return out, nil
}

func (r *stateRun) parameters(eff any) (any, *failure) {
	if j := r.st.j; j != nil {
		if j.arguments == nil {
			return eff, nil
		}
		return j.arguments.eval(r, jstates{})
	}
	if r.st.parameters == nil {
		return eff, nil
	}
	return r.st.parameters.eval(eff, r, r.t.x.e.entropy)
}

func (r *stateRun) pass() (any, *failure) {
	if r.st.j != nil {
		return r.jsonataFinish(jstates{}, r.raw)
	}
	eff, f := r.inputPath()
	if f != nil {
		return nil, f
	}
	if eff, f = r.parameters(eff); f != nil {
		return nil, f
	}
	result := eff
	if r.st.hasResult {
		result = r.st.result
	}
	if f := r.evalAssign(result); f != nil {
		return nil, f
	}
	out, f := r.resultPath(result)
	if f != nil {
		return nil, f
	}
	return r.outputPath(out)
}

// passThrough is Succeed's processing: InputPath then OutputPath.
func (r *stateRun) passThrough() (any, *failure) {
	if j := r.st.j; j != nil && j.output != nil {
		return j.output.eval(r, jstates{})
	}
	eff, f := r.inputPath()
	if f != nil {
		return nil, f
	}
	return r.outputPath(eff)
}

func (r *stateRun) choice() (any, string, *failure) {
	if r.st.j != nil {
		return r.jsonataChoice()
	}
	eff, f := r.inputPath()
	if f != nil {
		return nil, "", f
	}
	next := ""
	assign := r.st.assign
	for _, rule := range r.st.choices {
		ok, f := rule.eval(eff, r)
		if f != nil {
			return nil, "", f
		}
		if ok {
			next, assign = rule.next, rule.assign
			break
		}
	}
	if next == "" {
		next = r.st.defaultNext
	}
	if next == "" {
		return nil, "", &failure{Error: ErrNoChoiceMatched, HasCause: true,
			Cause: fmt.Sprintf("No Matches! No choice rule of state '%s' matched and it has no Default.", r.st.name)}
	}
	// A matched rule's Assign applies; the state's own when Default is taken.
	if f := r.evalAssignOf(assign, eff); f != nil {
		return nil, "", f
	}
	out, f := r.outputPath(eff)
	return out, next, f
}

func (r *stateRun) wait() (any, *failure) {
	st := r.st
	eff, f := r.inputPath()
	if f != nil {
		return nil, f
	}
	now := r.t.x.e.clock.Now()
	var until time.Time
	switch {
	case st.hasSeconds:
		until = now.Add(time.Duration(st.waitSeconds) * time.Second)
	case st.hasTimestamp:
		until = st.timestamp
	case st.secondsPath != nil:
		// AWS's recorded causes, one per way the value can be wrong.
		v, ok := st.secondsPath.get(eff, r)
		if !ok {
			return nil, runtimeFailure(fmt.Sprintf("The SecondsPath parameter does not reference an input value: %s", st.secondsPath.text))
		}
		n, isInt := isInteger(v)
		if !isInt {
			return nil, runtimeFailure(fmt.Sprintf("The SecondsPath parameter cannot be parsed as a long value: %s == %s", st.secondsPath.text, rawText(v)))
		}
		if n < 0 {
			return nil, runtimeFailure(fmt.Sprintf("The SecondsPath parameter references a negative value: %s == %d", st.secondsPath.text, n))
		}
		until = now.Add(time.Duration(n) * time.Second)
	case st.j != nil && st.j.seconds != nil:
		v, f := st.j.seconds.eval(r, jstates{})
		if f != nil {
			return nil, f
		}
		n, isInt := isInteger(v)
		if !isInt || n < 0 || n > 99999999 {
			return nil, r.unexpectedType(st.j.seconds, "integer from 0 to 99999999", v)
		}
		until = now.Add(time.Duration(n) * time.Second)
	case st.j != nil && st.j.timestamp != nil:
		v, f := st.j.timestamp.eval(r, jstates{})
		if f != nil {
			return nil, f
		}
		s, isStr := v.(string)
		ts, valid := parseTimestamp(s)
		if !isStr || !valid {
			return nil, r.unexpectedType(st.j.timestamp, "ISO-8601 extended offset date-time string", v)
		}
		until = ts
	case st.timestampPath != nil:
		v, ok := st.timestampPath.get(eff, r)
		if !ok {
			return nil, runtimeFailure(fmt.Sprintf("Invalid path '%s' : No results for path: %s", st.timestampPath.text, st.timestampPath.normalized()))
		}
		s, isStr := v.(string)
		ts, valid := parseTimestamp(s)
		if !isStr || !valid {
			return nil, runtimeFailure(fmt.Sprintf("The TimestampPath parameter does not reference a valid ISO-8601 extended offset date-time format string: %s == %s", st.timestampPath.text, rawText(v)))
		}
		until = ts
	}
	if d := until.Sub(now); d > 0 {
		if !r.t.sleep(d) {
			r.t.record(event{typ: "WaitStateAborted", name: st.name})
			return nil, errCanceled
		}
	}
	if st.j != nil {
		return r.jsonataFinish(jstates{}, eff)
	}
	if f := r.evalAssign(eff); f != nil {
		return nil, f
	}
	return r.outputPath(eff)
}

func (r *stateRun) fail() *failure {
	st := r.st
	f := &failure{Error: st.errorName, Cause: st.cause, HasCause: st.hasCause}
	if st.j != nil {
		return r.jsonataFail(f)
	}
	if st.errorExpr != nil {
		s, ff := r.dynamicString(st.errorExpr, "ErrorPath")
		if ff != nil {
			return ff
		}
		f.Error = s
	}
	if st.causeExpr != nil {
		s, ff := r.dynamicString(st.causeExpr, "CausePath")
		if ff != nil {
			return ff
		}
		f.Cause, f.HasCause = s, true
	}
	return f
}

func (r *stateRun) dynamicString(d *dynamicValue, field string) (string, *failure) {
	var v any
	if d.path != nil {
		got, ok := d.path.get(r.raw, r)
		if !ok {
			return "", runtimeFailure(fmt.Sprintf("The JSONPath '%s' specified for the field '%s' could not be found in the input '%s'", d.text, field, toJSON(r.raw)))
		}
		v = got
	} else {
		tp := &template{fields: []templateField{{key: "v", call: d.call, src: field, expr: d.text}}}
		got, f := tp.eval(r.raw, r, r.t.x.e.entropy)
		if f != nil {
			return "", f
		}
		v = got.(map[string]any)["v"]
	}
	s, ok := v.(string)
	if !ok {
		return "", runtimeFailure(fmt.Sprintf("The %s field must reference a string, but '%s' is %s", field, d.text, toJSON(v)))
	}
	return s, nil
}

// retryKey counts the retries one retrier granted to one error name.
type retryKey struct {
	retrier int
	name    string
}

// withRetry runs a Task, Parallel or Map visit with its retriers and
// catchers. As the developer guide's worked example requires (errors A, B,
// C, B, B wait 1, 2, 5 and 4 seconds, then go to Catch), each retrier's
// back-off grows with every retry it granted during the visit, while
// MaxAttempts limits the retries of each error name the retrier matched.
func (r *stateRun) withRetry() (any, string, *failure) {
	st := r.st
	attempts := make([]int64, len(st.retry))
	var perName map[retryKey]int64
	if len(st.retry) > 0 {
		perName = map[retryKey]int64{}
	}
	for {
		r.ctxObj, r.jsStates = nil, nil
		var out any
		var f *failure
		switch st.typ {
		case typeTask:
			out, f = r.task()
		case typeParallel:
			out, f = r.parallel()
		case typeMap:
			out, f = r.mapState()
		}
		if f == nil {
			if jsonSize(out) > MaxPayloadBytes {
				f = dataLimit(st.name)
				r.pending = nil
			} else {
				next := st.next
				if st.end {
					next = ""
				}
				r.exited(out)
				return out, next, nil
			}
		}
		if f == errCanceled || r.t.reason() != nil {
			return nil, "", errCanceled
		}
		idx := -1
		for i, rt := range st.retry {
			if matchesError(rt.errorEquals, f.Error) {
				idx = i
				break
			}
		}
		if idx >= 0 && perName[retryKey{idx, f.Error}] < st.retry[idx].maxAttempts {
			rt := st.retry[idx]
			delay := rt.interval * math.Pow(rt.backoff, float64(attempts[idx]))
			if rt.maxDelay > 0 && delay > rt.maxDelay {
				delay = rt.maxDelay
			}
			if rt.jitterFull {
				delay *= r.t.x.e.random()
			}
			attempts[idx]++
			perName[retryKey{idx, f.Error}]++
			r.retryCount++
			if !r.t.sleep(time.Duration(delay * float64(time.Second))) {
				r.t.record(event{typ: st.abortedType, name: st.name})
				return nil, "", errCanceled
			}
			continue
		}
		for _, c := range st.catch {
			if !matchesError(c.errorEquals, f.Error) {
				continue
			}
			var out any = errorOutput(f)
			if c.j != nil {
				out, f = r.jsonataCatch(c, out)
				if f != nil {
					return nil, "", f
				}
			} else if af := r.evalAssignOf(c.assign, out); af != nil {
				// A catcher's Assign sees the error output, as its ResultPath does.
				return nil, "", af
			}
			switch {
			case c.resultNull:
				out = r.raw
			case c.resultPath != nil:
				v, ok := c.resultPath.set(r.raw, out)
				if !ok {
					return nil, "", &failure{Error: ErrResultPathMatchFailure, HasCause: true,
						Cause: fmt.Sprintf("Unable to apply ResultPath '%s' to input '%s'", c.resultPath.text, toJSON(r.raw))}
				}
				out = v
			}
			if jsonSize(out) > MaxPayloadBytes {
				r.pending = nil
				return nil, "", dataLimit(st.name)
			}
			r.exited(out)
			return out, c.next, nil
		}
		return nil, "", f
	}
}

// random returns a uniform float in [0,1) from the engine's entropy.
func (e *Engine) random() float64 {
	var b [8]byte
	if _, err := io.ReadFull(e.entropy, b[:]); err != nil {
		return 1
	}
	return float64(binary.BigEndian.Uint64(b[:])>>11) / (1 << 53)
}
