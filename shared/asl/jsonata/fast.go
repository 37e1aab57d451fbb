package jsonata

import (
	"errors"
	"math"
	"reflect"
)

// The fast path evaluates, natively, the expressions Step Functions states
// mostly hold: paths of field names from a variable ($states.input.order.id,
// mapped over arrays as jsonata maps them, with [n] and [predicate]
// filters), literals, comparisons, arithmetic, `&`, `and`/`or`,
// conditionals, object and array constructors, and calls of a few functions ($merge, $count, $exists,
// $string, $length, $uppercase, $lowercase, $sum, $not, $join, $contains,
// $split, $number, and Step Functions' own, which are Go code anyway). It reads
// jsonata's own parse tree and accepts a node only when every field of it
// is one it knows, so an operator or option it does not implement
// (`%`, `@`, `#`, sorting, grouping, blocks in a path, …) leaves the whole
// expression to the reference. At run time, whenever the data leaves what
// these rules certainly decide as jsonata does (an operand of an
// unexpected type, a number to format, non-ASCII text to order or
// case-fold), evaluation says errNotSure and the reference evaluates the
// expression instead.
type fastNode interface {
	eval(env Env, ctx any) (any, error)
}

// errNotSure says the fast path cannot decide: the reference must evaluate.
var errNotSure = errors.New("left to the JSONata implementation")

// undefined is JSONata's undefined inside the fast path (nil is null).
type undefinedType struct{}

var undefined any = undefinedType{}

func isUndefined(v any) bool { _, u := v.(undefinedType); return u }

// evalFast evaluates a fast expression: undefined becomes ErrUndefined.
func evalFast(n fastNode, env Env) (any, error) {
	v, err := n.eval(env, undefined)
	if err != nil {
		return nil, err
	}
	if isUndefined(v) {
		return nil, ErrUndefined
	}
	return model(v)
}

// compileFast recognizes a fast expression in jsonata's parse tree (the
// JSON of `ast()`), or returns nil.
func compileFast(node map[string]any) fastNode {
	if node == nil {
		return nil
	}
	typ, _ := node["type"].(string)
	switch typ {
	case "string":
		if !only(node, "value") {
			return nil
		}
		s, ok := node["value"].(string)
		if !ok {
			return nil
		}
		return literal{s}
	case "number":
		if !only(node, "value") {
			return nil
		}
		f, ok := node["value"].(float64)
		if !ok {
			return nil
		}
		return literal{numberValue(f)}
	case "value":
		if !only(node, "value") {
			return nil
		}
		return literal{node["value"]} // true, false or null
	case "variable":
		if !only(node, "value") {
			return nil
		}
		name, _ := node["value"].(string)
		if name == "" {
			return nil // $ is the context, which Step Functions leaves undefined
		}
		return path{root: name}
	case "path":
		return compilePath(node)
	case "binary":
		return compileBinary(node)
	case "condition":
		if !only(node, "condition", "then", "else") {
			return nil
		}
		c := conditional{cond: sub(node, "condition"), then: sub(node, "then")}
		if c.cond == nil || c.then == nil {
			return nil
		}
		if _, has := node["else"]; has {
			if c.els = sub(node, "else"); c.els == nil {
				return nil
			}
		}
		return c
	case "unary":
		return compileUnary(node)
	case "function":
		return compileCall(node)
	case "apply":
		return compileChain(node)
	case "block":
		return compileBlock(node)
	case "lambda":
		return compileLambda(node)
	case "tailcall":
		if !only(node, "call") {
			return nil
		}
		return rawResult(sub(node, "call"))
	}
	return nil
}

// only reports whether node has no fields but type, position and those
// named: any other field is an option the fast path does not implement.
func only(node map[string]any, fields ...string) bool {
	for k := range node {
		switch k {
		case "type", "position":
			continue
		}
		known := false
		for _, f := range fields {
			if k == f {
				known = true
				break
			}
		}
		if !known {
			return false
		}
	}
	return true
}

func sub(node map[string]any, field string) fastNode {
	m, _ := node[field].(map[string]any)
	return compileFast(m)
}

type literal struct{ v any }

func (l literal) eval(Env, any) (any, error) { return l.v, nil }

// path is $root.a.b… (a variable, then field names) or a.b… relative to
// the context (inside a filter); a name step may carry filters: [n] picks
// the n-th item, [predicate] keeps the items it holds true for.
type path struct {
	root     string // the variable; "" for a relative path
	steps    []step
	filtered bool // some step has filters
}

type step struct {
	name    string
	filters []filter
}

type filter struct {
	index float64  // when pred is nil
	pred  fastNode // evaluated with each item as the context
}

func compilePath(node map[string]any) fastNode {
	if !only(node, "steps") {
		return nil
	}
	steps, _ := node["steps"].([]any)
	if len(steps) == 0 {
		return nil
	}
	if last, _ := steps[len(steps)-1].(map[string]any); last["type"] == "block" && len(steps) >= 2 {
		return compileMapStep(node, steps, last)
	}
	p := path{}
	first, _ := steps[0].(map[string]any)
	if first["type"] == "variable" {
		if len(steps) < 2 || !only(first, "value") {
			return nil
		}
		p.root, _ = first["value"].(string)
		if p.root == "" {
			return nil // $ (the context) as a first step
		}
		steps = steps[1:]
	}
	for _, s := range steps {
		st, _ := s.(map[string]any)
		if st["type"] != "name" || !only(st, "value", "stages") {
			return nil
		}
		name, ok := st["value"].(string)
		if !ok {
			return nil
		}
		sp := step{name: name}
		stages, _ := st["stages"].([]any)
		for _, sg := range stages {
			stage, _ := sg.(map[string]any)
			if stage["type"] != "filter" || !only(stage, "expr") {
				return nil
			}
			expr, _ := stage["expr"].(map[string]any)
			if expr["type"] == "number" && only(expr, "value") {
				n, _ := expr["value"].(float64)
				sp.filters = append(sp.filters, filter{index: n})
				continue
			}
			pred := compileFast(expr)
			if pred == nil {
				return nil
			}
			sp.filters = append(sp.filters, filter{pred: pred})
		}
		p.filtered = p.filtered || len(sp.filters) > 0
		p.steps = append(p.steps, sp)
	}
	return p
}

func (p path) eval(env Env, ctx any) (any, error) {
	if p.root == "" {
		if isUndefined(ctx) {
			return undefined, nil
		}
		return p.overSequences(env, ctx)
	}
	if env.Vars == nil {
		return nil, errNotSure
	}
	cur, ok := env.Vars.Var(p.root)
	if !ok {
		return nil, errNotSure
	}
	if p.filtered {
		return p.overSequences(env, cur)
	}
	if f, isFn := cur.(*closure); isFn && len(p.steps) == 0 {
		return f, nil // a lambda bound to a variable, as a value
	}
	return p.walk(env, cur)
}

// plain evaluates an unfiltered path from a variable as a whole
// expression: undefined is ErrUndefined, the result in the JSON model.
func (p path) plain(env Env) (any, error) {
	if env.Vars == nil {
		return nil, errNotSure
	}
	cur, ok := env.Vars.Var(p.root)
	if !ok {
		return nil, errNotSure
	}
	v, err := p.walk(env, cur)
	if err != nil {
		return nil, err
	}
	switch v.(type) {
	case string, bool, int64, nil:
		return v, nil
	case undefinedType:
		return nil, ErrUndefined
	}
	return model(v)
}

// walk follows the steps from the variable's value through objects, and
// maps them over the first array on the way.
func (p path) walk(env Env, cur any) (any, error) {
	for _, st := range p.steps {
		switch m := cur.(type) {
		case map[string]any:
			v, has := m[st.name]
			if !has {
				return undefined, nil
			}
			cur = v
		case []any:
			// jsonata maps the steps over an array.
			root, _ := env.Vars.Var(p.root)
			return p.overSequences(env, root)
		default:
			if !scalar(cur) {
				return nil, errNotSure // a Go type outside the JSON model
			}
			return undefined, nil // a field of a scalar or null is undefined
		}
	}
	if !inModel(cur) {
		return nil, errNotSure
	}
	// An array reached through objects only is the data's own array, which
	// jsonata returns as it is (a one-item array stays an array).
	return cur, nil
}

// inModel reports whether v's own type (not its contents') is one of the
// JSON model's, which the fast path's rules are written for.
func inModel(v any) bool {
	switch v.(type) {
	case []any, map[string]any:
		return true
	}
	return scalar(v)
}

// sequence is one of jsonata's result sequences, as opposed to an array
// of the data: it is flattened into the sequence that holds it.
type sequence []any

// overSequences evaluates the path as jsonata's evaluatePath does for
// name steps: each step looks the name up in every item of the sequence
// before it and filters what it finds; arrays among the results are
// flattened one level, except a data array that is the last step's only
// result, which comes back as it is; an empty sequence is undefined and a
// one-item sequence its item.
func (p path) overSequences(env Env, start any) (any, error) {
	seq := flatten([]any{start})
	for i, st := range p.steps {
		var results []any
		for _, item := range seq {
			if !inModel(item) {
				return nil, errNotSure
			}
			res := lookup(item, st.name)
			if !isUndefined(res) && !inModel(res) {
				if _, isSeq := res.(sequence); !isSeq {
					return nil, errNotSure
				}
			}
			for _, f := range st.filters {
				var err error
				if res, err = f.apply(env, res); err != nil {
					return nil, err
				}
			}
			if !isUndefined(res) {
				results = append(results, res)
			}
		}
		if i == len(p.steps)-1 && len(results) == 1 {
			if data, isData := results[0].([]any); isData {
				return data, nil
			}
		}
		seq = flatten(results)
		if len(seq) == 0 {
			return undefined, nil
		}
	}
	if len(seq) == 1 {
		return seq[0], nil
	}
	return []any(seq), nil
}

// apply is jsonata's evaluateFilter on one step's value.
func (f filter) apply(env Env, input any) (any, error) {
	var items []any
	switch t := input.(type) {
	case []any:
		items = t
	case sequence:
		items = t
	case undefinedType:
		if f.pred == nil {
			return sequence{}, nil
		}
		items = []any{undefined}
	default:
		items = []any{input}
	}
	if f.pred == nil {
		i := int(math.Floor(f.index))
		if i < 0 {
			i += len(items)
		}
		if i < 0 || i >= len(items) {
			return sequence{}, nil
		}
		if data, isData := items[i].([]any); isData {
			return data, nil // an array item replaces the sequence
		}
		return sequence{items[i]}, nil
	}
	out := sequence{}
	for _, item := range items {
		r, err := f.pred.eval(env, item)
		if err != nil {
			return nil, err
		}
		keep, ok := truth(r)
		if !ok {
			return nil, errNotSure // numbers select positions; other values' truth is the reference's
		}
		if keep {
			if isUndefined(item) {
				return nil, errNotSure
			}
			out = append(out, item)
		}
	}
	return out, nil
}

// flatten pushes the items of arrays (of the data or sequences) and the
// other values as they are.
func flatten(results []any) []any {
	out := make([]any, 0, len(results))
	for _, r := range results {
		out = spread(out, r)
	}
	return out
}

// spread appends v to out, an array's items one by one.
func spread[S ~[]any](out S, v any) S {
	switch t := v.(type) {
	case undefinedType:
		return out
	case []any:
		return append(out, t...)
	case sequence:
		return append(out, t...)
	}
	return append(out, v)
}

// lookup is jsonata's: a field of an object, mapped over an array (its
// array results flattened), undefined for anything else.
func lookup(input any, key string) any {
	switch t := input.(type) {
	case map[string]any:
		if v, ok := t[key]; ok {
			return v
		}
	case []any:
		out := sequence{}
		for _, e := range t {
			out = spread(out, lookup(e, key))
		}
		return out
	}
	return undefined
}

// model returns a fast result in the JSON model: whole numbers as int64.
func model(v any) (any, error) {
	switch t := v.(type) {
	case nil, bool, string, int64:
		return v, nil
	case float64:
		if math.IsInf(t, 0) || math.IsNaN(t) {
			return nil, errNotSure
		}
		if t == math.Trunc(t) && math.Abs(t) <= 1<<53 {
			return int64(t), nil
		}
		return t, nil
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			x, err := model(e)
			if err != nil {
				return nil, err
			}
			out[i] = x
		}
		return out, nil
	case *closure:
		return nil, errNotSure // a function as a result: the reference says what it is
	case sequence:
		return model([]any(t))
	case map[string]any:
		if isModel(t) {
			return t, nil
		}
		out := make(map[string]any, len(t))
		for k, e := range t {
			x, err := model(e)
			if err != nil {
				return nil, err
			}
			out[k] = x
		}
		return out, nil
	}
	return normalize(reflect.ValueOf(v))
}

// isModel reports whether v is already in the generic JSON model with
// whole numbers as int64, so it needs no copy.
func isModel(v any) bool {
	switch t := v.(type) {
	case nil, bool, string, int64:
		return true
	case float64:
		return t != math.Trunc(t) && !math.IsInf(t, 0) && !math.IsNaN(t)
	case []any:
		for _, e := range t {
			if !isModel(e) {
				return false
			}
		}
		return true
	case map[string]any:
		for _, e := range t {
			if !isModel(e) {
				return false
			}
		}
		return true
	}
	return false
}
