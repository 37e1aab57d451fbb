package asl

import "fmt"

// scope is what a path or template reads besides the state's input: the
// context object ($$) and workflow variables ($name).
type scope interface {
	context() any
	variable(name string) (any, bool)
}

// MaxVariableBytes is the largest serialized value one variable may hold
// (AWS: 256 KiB per variable).
const MaxVariableBytes = 256 * 1024

// MaxExecutionVariableBytes is the largest total of all variables one
// execution holds at once (AWS: 10 MiB per execution).
const MaxExecutionVariableBytes = 10 * 1024 * 1024

// varScope holds the variables one thread assigned. A Parallel branch or
// Map iteration starts a scope of its own whose parent is the outer one:
// outer variables are readable inside, and assignments inside never
// reach back out.
type varScope struct {
	vals   map[string]any
	sizes  map[string]int // serialized size of each value, for the execution's total
	total  int
	parent *varScope
}

func (s *varScope) lookup(name string) (any, bool) {
	for ; s != nil; s = s.parent {
		if v, ok := s.vals[name]; ok {
			return v, true
		}
	}
	return nil, false
}

// variable reads a workflow variable visible from this state.
func (r *stateRun) variable(name string) (any, bool) { return r.t.vars.lookup(name) }

// evalAssign evaluates the state's Assign against v (the state's result)
// and holds the values until commitAssign: every expression, and the
// state's own output, sees the variables as they were before the state.
func (r *stateRun) evalAssign(v any) *failure { return r.evalAssignOf(r.st.assign, v) }

// evalAssignOf is evalAssign for a given Assign (a state's or a catcher's).
func (r *stateRun) evalAssignOf(assign *template, v any) *failure {
	r.pending = nil
	if assign == nil {
		return nil
	}
	out, f := assign.eval(v, r, r.t.x.e.entropy)
	if f != nil {
		return f
	}
	vals, _ := out.(map[string]any)
	return r.holdAssign(vals)
}

// holdAssign checks the size limits of the values one Assign computed and
// holds them until commitAssign.
func (r *stateRun) holdAssign(vals map[string]any) *failure {
	total, delta := 0, 0
	sizes := make(map[string]int, len(vals))
	for _, name := range sortedKeys(vals) {
		n := jsonSize(vals[name])
		if n > MaxVariableBytes {
			return runtimeFailure(fmt.Sprintf("The variable '%s' assigned in state '%s' has a size of %d bytes, exceeding the limit of %d bytes.", name, r.st.name, n, MaxVariableBytes))
		}
		total += n
		sizes[name] = n
		if r.t.vars != nil {
			delta -= r.t.vars.sizes[name] // the value it replaces
		}
		delta += n
	}
	// AWS also limits what one Assign stores, all variables together.
	if total > MaxVariableBytes {
		return runtimeFailure(fmt.Sprintf("The variables assigned in state '%s' have a combined size of %d bytes, exceeding the limit of %d bytes.", r.st.name, total, MaxVariableBytes))
	}
	// And what the whole execution holds at once.
	if held := r.t.x.varBytes.Load(); held+int64(delta) > MaxExecutionVariableBytes {
		return runtimeFailure(fmt.Sprintf("The variables assigned in state '%s' would bring the execution's variables to %d bytes, exceeding the limit of %d bytes.", r.st.name, held+int64(delta), MaxExecutionVariableBytes))
	}
	r.pending, r.pendingSizes = vals, sizes
	return nil
}

// commitAssign stores the values evalAssign held, once the state has
// produced its output.
func (r *stateRun) commitAssign() {
	if len(r.pending) == 0 {
		return
	}
	t := r.t
	if t.vars == nil {
		t.vars = &varScope{}
	}
	if t.vars.vals == nil {
		t.vars.vals = make(map[string]any, len(r.pending))
		t.vars.sizes = make(map[string]int, len(r.pending))
	}
	delta := 0
	for name, val := range r.pending {
		t.vars.vals[name] = val
		n := r.pendingSizes[name]
		delta += n - t.vars.sizes[name]
		t.vars.sizes[name] = n
	}
	t.vars.total += delta
	t.x.varBytes.Add(int64(delta))
	r.pending, r.pendingSizes = nil, nil
}

// exited records the state's *StateExited event with the variables it
// assigns, as AWS's stateExitedEventDetails.assignedVariables does.
func (r *stateRun) exited(out any) {
	r.t.record(event{typ: r.st.exitedType, name: r.st.name, value: out, hasValue: true, vars: r.pending})
}
