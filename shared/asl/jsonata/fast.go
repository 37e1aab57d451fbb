package jsonata

import (
	"errors"
	"math"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The fast path evaluates, natively, the expressions Step Functions states
// mostly hold: paths of field names from a variable ($states.input.order.id,
// mapped over arrays as jsonata maps them, with [n] and [predicate]
// filters), literals, comparisons, arithmetic, `&`, `and`/`or`,
// conditionals, object and array constructors, and calls of a few functions ($merge, $count, $exists,
// $string, $length, $uppercase, $lowercase, $sum, $not, $join, $contains,
// $split, and Step Functions' own, which are Go code anyway). It reads
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
	case "block":
		if !only(node, "expressions") {
			return nil
		}
		exprs, _ := node["expressions"].([]any)
		if len(exprs) != 1 {
			return nil // bindings (:=) need scopes: the reference's
		}
		m, _ := exprs[0].(map[string]any)
		return compileFast(m)
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

// binOp is an operator between two operands.
type binOp struct {
	op       string
	lhs, rhs fastNode
}

func compileBinary(node map[string]any) fastNode {
	if !only(node, "value", "lhs", "rhs") {
		return nil
	}
	op, _ := node["value"].(string)
	switch op {
	case "=", "!=", "<", "<=", ">", ">=", "+", "-", "*", "/", "%", "&", "and", "or":
	default:
		return nil // in, .., ~> and the rest: the reference's
	}
	b := binOp{op: op, lhs: sub(node, "lhs"), rhs: sub(node, "rhs")}
	if b.lhs == nil || b.rhs == nil {
		return nil
	}
	return b
}

func (b binOp) eval(env Env, ctx any) (any, error) {
	l, err := b.lhs.eval(env, ctx)
	if err != nil {
		return nil, err
	}
	switch b.op {
	case "and", "or":
		lb, ok := truth(l)
		if !ok {
			return nil, errNotSure
		}
		if b.op == "and" && !lb || b.op == "or" && lb {
			return lb, nil
		}
		r, err := b.rhs.eval(env, ctx)
		if err != nil {
			return nil, err
		}
		rb, ok := truth(r)
		if !ok {
			return nil, errNotSure
		}
		return rb, nil
	}
	r, err := b.rhs.eval(env, ctx)
	if err != nil {
		return nil, err
	}
	switch b.op {
	case "&":
		ls, lok := concatOperand(l)
		rs, rok := concatOperand(r)
		if !lok || !rok {
			return nil, errNotSure // $string's number and object forms
		}
		return ls + rs, nil
	case "+", "-", "*", "/", "%":
		return arithmetic(b.op, l, r)
	}
	return compare(b.op, l, r)
}

// truth is jsonata's boolean reading of a value, for the values it
// certainly reads: booleans, and undefined as false.
func truth(v any) (bool, bool) {
	switch t := v.(type) {
	case bool:
		return t, true
	case undefinedType:
		return false, true
	}
	return false, false
}

func concatOperand(v any) (string, bool) {
	switch t := v.(type) {
	case string:
		return t, true
	case undefinedType:
		return "", true
	case bool:
		return strconv.FormatBool(t), true
	}
	return "", false
}

func num(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

func arithmetic(op string, l, r any) (any, error) {
	if isUndefined(l) || isUndefined(r) {
		return undefined, nil
	}
	a, aok := num(l)
	b, bok := num(r)
	if !aok || !bok {
		return nil, errNotSure // T2001/T2002: the reference words it
	}
	var v float64
	switch op {
	case "+":
		v = a + b
	case "-":
		v = a - b
	case "*":
		v = a * b
	case "/":
		v = a / b
	case "%":
		v = math.Mod(a, b)
	}
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return nil, errNotSure
	}
	return numberValue(v), nil
}

// numberValue is a number in the JSON model: whole numbers as int64, so
// results built from them need no conversion afterwards.
func numberValue(f float64) any {
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 && !(f == 0 && math.Signbit(f)) {
		return int64(f)
	}
	return f
}

func compare(op string, l, r any) (any, error) {
	if op != "=" && op != "!=" {
		if !orderable(l) || !orderable(r) {
			return nil, errNotSure // T2010: the reference words it
		}
		if isUndefined(l) || isUndefined(r) {
			return undefined, nil // ordering with undefined is undefined
		}
	}
	if isUndefined(l) || isUndefined(r) {
		return false, nil // equality with undefined is false
	}
	if !scalar(l) || !scalar(r) {
		return nil, errNotSure // deep equality and type errors: the reference's
	}
	ln, lnum := num(l)
	rn, rnum := num(r)
	ls, lstr := l.(string)
	rs, rstr := r.(string)
	switch op {
	case "=", "!=":
		var eq bool
		switch {
		case lnum && rnum:
			eq = ln == rn
		case lnum || rnum:
			eq = false
		default:
			eq = l == r
		}
		return eq == (op == "="), nil
	}
	switch {
	case lnum && rnum:
		return order(op, ln < rn, ln == rn), nil
	case lstr && rstr && ascii(ls) && ascii(rs):
		// JavaScript orders UTF-16 code units, Go bytes: the same for ASCII.
		return order(op, ls < rs, ls == rs), nil
	}
	return nil, errNotSure // T2009/T2010: the reference words it
}

// orderable: what jsonata lets < <= > >= compare (or find undefined).
func orderable(v any) bool {
	switch v.(type) {
	case undefinedType, string, int64, float64:
		return true
	}
	return false
}

func scalar(v any) bool {
	switch v.(type) {
	case nil, bool, string, int64, float64:
		return true
	}
	return false
}

func order(op string, less, equal bool) bool {
	switch op {
	case "<":
		return less
	case "<=":
		return less || equal
	case ">":
		return !less && !equal
	}
	return !less
}

func ascii(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// conditional is `cond ? then : else`.
type conditional struct{ cond, then, els fastNode }

func (c conditional) eval(env Env, ctx any) (any, error) {
	v, err := c.cond.eval(env, ctx)
	if err != nil {
		return nil, err
	}
	t, ok := truth(v)
	if !ok {
		return nil, errNotSure
	}
	if t {
		return c.then.eval(env, ctx)
	}
	if c.els == nil {
		return undefined, nil
	}
	return c.els.eval(env, ctx)
}

func compileUnary(node map[string]any) fastNode {
	op, _ := node["value"].(string)
	switch op {
	case "-":
		if !only(node, "value", "expression") {
			return nil
		}
		if e := sub(node, "expression"); e != nil {
			return negation{e}
		}
	case "{":
		if !only(node, "value", "lhs") {
			return nil
		}
		pairs, _ := node["lhs"].([]any)
		o := object{}
		for _, p := range pairs {
			kv, _ := p.([]any)
			if len(kv) != 2 {
				return nil
			}
			k, _ := kv[0].(map[string]any)
			v, _ := kv[1].(map[string]any)
			kn, vn := compileFast(k), compileFast(v)
			if kn == nil || vn == nil {
				return nil
			}
			o.keys, o.vals = append(o.keys, kn), append(o.vals, vn)
		}
		return o
	case "[":
		if !only(node, "value", "expressions") {
			return nil
		}
		items, _ := node["expressions"].([]any)
		a := array{}
		for _, it := range items {
			m, _ := it.(map[string]any)
			n := compileFast(m)
			if n == nil {
				return nil
			}
			_, nested := n.(array)
			a.items, a.nested = append(a.items, n), append(a.nested, nested)
		}
		return a
	}
	return nil
}

type negation struct{ e fastNode }

func (n negation) eval(env Env, ctx any) (any, error) {
	v, err := n.e.eval(env, ctx)
	if err != nil || isUndefined(v) {
		return v, err
	}
	f, ok := num(v)
	if !ok {
		return nil, errNotSure
	}
	return numberValue(-f), nil
}

// object is an object constructor {k: v, …}: a key whose value is
// undefined is left out.
type object struct{ keys, vals []fastNode }

func (o object) eval(env Env, ctx any) (any, error) {
	out := make(map[string]any, len(o.keys))
	for i, kn := range o.keys {
		k, err := kn.eval(env, ctx)
		if err != nil {
			return nil, err
		}
		ks, ok := k.(string)
		if !ok {
			return nil, errNotSure // T1003: the reference words it
		}
		if _, dup := out[ks]; dup {
			return nil, errNotSure // D1009: the reference words it
		}
		v, err := o.vals[i].eval(env, ctx)
		if err != nil {
			return nil, err
		}
		if isUndefined(v) {
			// A later duplicate key still fails on the reference, so
			// remember the key without a value.
			out[ks] = undefined
			continue
		}
		out[ks] = v
	}
	for k, v := range out {
		if isUndefined(v) {
			delete(out, k)
		}
	}
	return out, nil
}

// array is an array constructor [a, b, …]: undefined items are left out,
// an array value is spliced in unless it came from a nested constructor.
type array struct {
	items  []fastNode
	nested []bool
}

func (a array) eval(env Env, ctx any) (any, error) {
	out := make([]any, 0, len(a.items))
	for i, n := range a.items {
		v, err := n.eval(env, ctx)
		if err != nil {
			return nil, err
		}
		switch t := v.(type) {
		case undefinedType:
		case []any:
			if a.nested[i] {
				out = append(out, t)
			} else {
				out = append(out, t...)
			}
		default:
			out = append(out, v)
		}
	}
	return out, nil
}

// call is $f(args…) of a function the fast path implements.
type call struct {
	name string
	fn   func(args []any) (any, error) // one of natives, or
	sf   sfFunction                    // one of Step Functions'
	args []fastNode
}

// natives are the functions implemented here, each for the arguments it
// certainly decides as jsonata does (errNotSure otherwise).
var natives = map[string]func(args []any) (any, error){
	"merge":     nativeMerge,
	"count":     nativeCount,
	"exists":    nativeExists,
	"string":    nativeString,
	"length":    nativeLength,
	"uppercase": func(a []any) (any, error) { return caseFold(a, strings.ToUpper) },
	"lowercase": func(a []any) (any, error) { return caseFold(a, strings.ToLower) },
	"sum":       nativeSum,
	"not":       nativeNot,
	"join":      nativeJoin,
	"contains":  nativeContains,
	"split":     nativeSplit,
}

func compileCall(node map[string]any) fastNode {
	if !only(node, "value", "procedure", "arguments") || node["value"] != "(" {
		return nil
	}
	proc, _ := node["procedure"].(map[string]any)
	if proc["type"] != "variable" || !only(proc, "value") {
		return nil
	}
	name, _ := proc["value"].(string)
	c := call{name: name}
	if sf, isSF := stepFunctions[name]; isSF {
		if sf == nil {
			return nil // $eval: the reference says what a call of nothing is
		}
		c.sf = sf
	} else if c.fn = natives[name]; c.fn == nil {
		return nil
	}
	args, _ := node["arguments"].([]any)
	for _, a := range args {
		m, _ := a.(map[string]any)
		if m["type"] == "operator" {
			return nil // a `?` placeholder: partial application
		}
		n := compileFast(m)
		if n == nil {
			return nil
		}
		c.args = append(c.args, n)
	}
	return c
}

func (c call) eval(env Env, ctx any) (any, error) {
	if c.sf != nil {
		// Step Functions' functions come before variables, as the
		// reference binds them.
		args := make([]any, len(c.args))
		for i, a := range c.args {
			v, err := a.eval(env, ctx)
			if err != nil {
				return nil, err
			}
			args[i] = v
		}
		return callStepFunction(c.name, c.sf, env.Entropy, args)
	}
	if env.Vars != nil {
		if _, shadowed := env.Vars.Var(c.name); shadowed {
			return nil, errNotSure // a variable of that name is what is called
		}
	}
	args := make([]any, len(c.args))
	for i, a := range c.args {
		v, err := a.eval(env, ctx)
		if err != nil {
			return nil, err
		}
		args[i] = v
	}
	return c.fn(args)
}

func nativeMerge(a []any) (any, error) {
	if len(a) != 1 {
		return nil, errNotSure
	}
	out := map[string]any{}
	switch t := a[0].(type) {
	case undefinedType:
		return undefined, nil
	case map[string]any:
		for k, v := range t {
			out[k] = v
		}
	case []any:
		for _, e := range t {
			m, ok := e.(map[string]any)
			if !ok {
				return nil, errNotSure // T0412: the reference words it
			}
			for k, v := range m {
				out[k] = v
			}
		}
	default:
		return nil, errNotSure
	}
	return out, nil
}

func nativeCount(a []any) (any, error) {
	if len(a) != 1 {
		return nil, errNotSure
	}
	switch t := a[0].(type) {
	case undefinedType:
		return int64(0), nil
	case []any:
		return int64(len(t)), nil
	}
	return int64(1), nil
}

func nativeExists(a []any) (any, error) {
	if len(a) != 1 {
		return nil, errNotSure
	}
	return !isUndefined(a[0]), nil
}

// nativeString converts what needs no JavaScript formatting: strings,
// booleans, null and safe integers.
func nativeString(a []any) (any, error) {
	if len(a) != 1 {
		return nil, errNotSure
	}
	switch t := a[0].(type) {
	case undefinedType, string:
		return t, nil
	case bool:
		return strconv.FormatBool(t), nil
	case nil:
		return "null", nil
	case int64:
		if t > -1e15 && t < 1e15 {
			return strconv.FormatInt(t, 10), nil
		}
	case float64:
		if t == math.Trunc(t) && math.Abs(t) < 1e15 {
			return strconv.FormatInt(int64(t), 10), nil
		}
	}
	return nil, errNotSure
}

func nativeLength(a []any) (any, error) {
	if len(a) != 1 {
		return nil, errNotSure
	}
	switch t := a[0].(type) {
	case undefinedType:
		return undefined, nil
	case string:
		// jsonata counts code points (Array.from), not UTF-16 units.
		return int64(utf8.RuneCountInString(t)), nil
	}
	return nil, errNotSure
}

func caseFold(a []any, fold func(string) string) (any, error) {
	if len(a) != 1 {
		return nil, errNotSure
	}
	switch t := a[0].(type) {
	case undefinedType:
		return undefined, nil
	case string:
		if ascii(t) {
			return fold(t), nil
		}
	}
	return nil, errNotSure // Unicode case rules: the reference's
}

func nativeSum(a []any) (any, error) {
	if len(a) != 1 {
		return nil, errNotSure
	}
	items, isArr := a[0].([]any)
	switch {
	case isUndefined(a[0]):
		return undefined, nil
	case !isArr:
		items = []any{a[0]}
	}
	total := 0.0
	for _, e := range items {
		n, ok := num(e)
		if !ok {
			return nil, errNotSure
		}
		total += n
	}
	return numberValue(total), nil
}

func nativeNot(a []any) (any, error) {
	if len(a) != 1 {
		return nil, errNotSure
	}
	switch t := a[0].(type) {
	case undefinedType:
		return undefined, nil
	case bool:
		return !t, nil
	}
	return nil, errNotSure
}

func nativeJoin(a []any) (any, error) {
	if len(a) < 1 || len(a) > 2 {
		return nil, errNotSure
	}
	sep := ""
	if len(a) == 2 {
		s, ok := a[1].(string)
		if !ok {
			return nil, errNotSure
		}
		sep = s
	}
	switch t := a[0].(type) {
	case undefinedType:
		return undefined, nil
	case string:
		return t, nil
	case []any:
		parts := make([]string, len(t))
		for i, e := range t {
			s, ok := e.(string)
			if !ok {
				return nil, errNotSure
			}
			parts[i] = s
		}
		return strings.Join(parts, sep), nil
	}
	return nil, errNotSure
}

func nativeContains(a []any) (any, error) {
	if len(a) != 2 {
		return nil, errNotSure
	}
	s, ok := a[0].(string)
	if !ok {
		if isUndefined(a[0]) {
			return undefined, nil
		}
		return nil, errNotSure
	}
	sub, ok := a[1].(string)
	if !ok {
		return nil, errNotSure // a regex pattern: the reference's
	}
	return strings.Contains(s, sub), nil
}

// nativeSplit splits on a non-empty string separator, as JavaScript's
// String.split does (a regex or a limit: the reference's).
func nativeSplit(a []any) (any, error) {
	if len(a) != 2 {
		return nil, errNotSure
	}
	sep, ok := a[1].(string)
	if !ok || sep == "" {
		return nil, errNotSure
	}
	switch t := a[0].(type) {
	case undefinedType:
		return undefined, nil
	case string:
		parts := strings.Split(t, sep)
		out := make([]any, len(parts))
		for i, p := range parts {
			out[i] = p
		}
		return out, nil
	}
	return nil, errNotSure
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
		if t == math.Trunc(t) && math.Abs(t) < 1<<53 {
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
