package asl

import (
	"fmt"
	"math"
)

// jsonataFinish ends a JSONata state's visit: Assign, then Output (def
// when the state has none), both evaluated against the variables as they
// were before the state.
func (r *stateRun) jsonataFinish(s jstates, def any) (any, *failure) {
	j := r.st.j
	if f := r.jsonataAssign(j.assign, s); f != nil {
		return nil, f
	}
	if j.output == nil {
		return def, nil
	}
	out, f := j.output.eval(r, s)
	if f != nil {
		r.pending = nil
		return nil, f
	}
	return out, nil
}

// jsonataAssign evaluates a JSONata Assign and holds its values.
func (r *stateRun) jsonataAssign(a *jvalue, s jstates) *failure {
	r.pending = nil
	if a == nil {
		return nil
	}
	v, f := a.eval(r, s)
	if f != nil {
		return f
	}
	vals, _ := v.(map[string]any)
	return r.holdAssign(vals)
}

// jsonataChoice runs a JSONata Choice state: the first rule whose
// Condition is true decides; its Assign and Output apply, or the state's
// own when Default is taken. The output defaults to the state's input.
func (r *stateRun) jsonataChoice() (any, string, *failure) {
	var rule *jsonataState
	next := ""
	for _, c := range r.st.choices {
		v, f := c.j.condition.eval(r, jstates{})
		if f != nil {
			return nil, "", f
		}
		b, isBool := v.(bool)
		if !isBool {
			return nil, "", r.unexpectedType(c.j.condition, "boolean", v)
		}
		if b {
			rule, next = c.j, c.next
			break
		}
	}
	if next == "" {
		next = r.st.defaultNext
		rule = r.st.j
	}
	if next == "" {
		return nil, "", &failure{Error: ErrNoChoiceMatched, HasCause: true,
			Cause: fmt.Sprintf("No Matches! No choice rule of state '%s' matched and it has no Default.", r.st.name)}
	}
	if f := r.jsonataAssign(rule.assign, jstates{}); f != nil {
		return nil, "", f
	}
	if rule.output == nil {
		return r.raw, next, nil
	}
	out, f := rule.output.eval(r, jstates{})
	if f != nil {
		r.pending = nil
		return nil, "", f
	}
	return out, next, nil
}

// jsonataFail resolves a JSONata Fail state's Error and Cause, which must
// be strings.
func (r *stateRun) jsonataFail(f *failure) *failure {
	j := r.st.j
	for _, p := range []struct {
		v      *jvalue
		target *string
	}{{j.errorValue, &f.Error}, {j.causeValue, &f.Cause}} {
		if p.v == nil || p.v.kind == jLiteral {
			continue
		}
		v, ff := p.v.eval(r, jstates{})
		if ff != nil {
			return ff
		}
		s, ok := v.(string)
		if !ok {
			return r.unexpectedType(p.v, "string", v)
		}
		*p.target = s
	}
	return f
}

// jsonataCatch applies a matching catcher of a JSONata state: its Assign,
// then its Output, which defaults to the error output.
func (r *stateRun) jsonataCatch(c *catcher, errOut any) (any, *failure) {
	s := jstates{errorOutput: errOut, hasErrorOutput: true}
	if f := r.jsonataAssign(c.j.assign, s); f != nil {
		return nil, f
	}
	if c.j.output == nil {
		return errOut, nil
	}
	out, f := c.j.output.eval(r, s)
	if f != nil {
		r.pending = nil
		return nil, f
	}
	return out, nil
}

// jsonataInt evaluates a number field written as an expression, which
// must give an integer from lo to hi, or returns def when the field is
// not an expression.
func (r *stateRun) jsonataInt(v *jvalue, def, lo, hi int64) (int64, *failure) {
	if v == nil {
		return def, nil
	}
	got, f := v.eval(r, jstates{})
	if f != nil {
		return 0, f
	}
	n, isInt := isInteger(got)
	if !isInt || n < lo || n > hi {
		return 0, r.unexpectedType(v, fmt.Sprintf("integer from %d to %d", lo, hi), got)
	}
	return n, nil
}

// jsonataMapLimits evaluates a JSONata Map's MaxConcurrency and tolerated
// failure thresholds written as expressions; the others keep their values.
func (r *stateRun) jsonataMapLimits(maxConc, tolCount int64, tolPct float64) (int64, int64, float64, *failure) {
	j := r.st.j
	whole := func(v *jvalue, def int64) (int64, *failure) { return r.jsonataInt(v, def, 0, math.MaxInt32) }
	var f *failure
	if maxConc, f = whole(j.maxConcurrency, maxConc); f != nil {
		return 0, 0, 0, f
	}
	if tolCount, f = whole(j.tolCount, tolCount); f != nil {
		return 0, 0, 0, f
	}
	if v := j.tolPercent; v != nil {
		got, f := v.eval(r, jstates{})
		if f != nil {
			return 0, 0, 0, f
		}
		p, isNum := toFloat(got)
		if !isNum || p < 0 || p > 100 {
			return 0, 0, 0, r.unexpectedType(v, "number from 0 to 100", got)
		}
		tolPct = p
	}
	return maxConc, tolCount, tolPct, nil
}
