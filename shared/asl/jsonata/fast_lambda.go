package jsonata

import (
	"maps"
	"slices"
	"sort"
	"strconv"
)

// The fast path's lambdas, `function($v, $i, $a) { body }`, and the
// higher-order functions that take them: $map, $filter, $reduce, $single,
// $sift, $each and $sort with a comparator.

// lambda is a lambda expression; evaluated, it is a closure.
type lambda struct {
	params []string
	body   fastNode
}

// closure is a lambda's value: it sees the variables and the context
// around the place it was written, as jsonata's procedures do.
type closure struct {
	params []string
	body   fastNode
	vars   Vars
	ctx    any
}

func compileLambda(node map[string]any) fastNode {
	// A signature or a thunk (jsonata's tail call) is the reference's.
	if !only(node, "arguments", "body") {
		return nil
	}
	args, _ := node["arguments"].([]any)
	l := lambda{}
	for _, a := range args {
		m, _ := a.(map[string]any)
		name, _ := m["value"].(string)
		if m["type"] != "variable" || !only(m, "value") || name == "" || isFunctionName(name) {
			return nil
		}
		l.params = append(l.params, name)
	}
	body, _ := node["body"].(map[string]any)
	if l.body = compileFast(tailCalls(body)); l.body == nil {
		return nil
	}
	return l
}

// tailCalls rewrites the thunks jsonata puts where a lambda's body ends in
// a function call (the body itself, a conditional's branches, a block's
// last expression) into tail calls: the result is the function's own, a
// sequence not reduced to its item, as jsonata's trampoline returns it.
func tailCalls(node map[string]any) map[string]any {
	switch node["type"] {
	case "lambda":
		if node["thunk"] != true || !only(node, "thunk", "arguments", "body") {
			return node
		}
		if a, _ := node["arguments"].([]any); len(a) != 0 {
			return node
		}
		body, _ := node["body"].(map[string]any)
		return map[string]any{"type": "tailcall", "call": body}
	case "condition":
		out := maps.Clone(node)
		if then, ok := node["then"].(map[string]any); ok {
			out["then"] = tailCalls(then)
		}
		if els, ok := node["else"].(map[string]any); ok {
			out["else"] = tailCalls(els)
		}
		return out
	case "block":
		exprs, _ := node["expressions"].([]any)
		if len(exprs) == 0 {
			return node
		}
		last, ok := exprs[len(exprs)-1].(map[string]any)
		if !ok {
			return node
		}
		out := maps.Clone(node)
		e := slices.Clone(exprs)
		e[len(e)-1] = tailCalls(last)
		out["expressions"] = e
		return out
	}
	return node
}

// rawResult marks a call as a tail call, or refuses it.
func rawResult(n fastNode) fastNode {
	switch c := n.(type) {
	case call:
		if c.name == "distinct" {
			return nil // a sequence or not as its argument was: not known here
		}
		c.raw = true
		return c
	case hofCall:
		c.raw = true
		return c
	case varCall:
		c.raw = true
		return c
	}
	return nil
}

// collapse is what jsonata makes of a function's result as the value of
// an expression: an empty sequence is undefined, a one-item sequence its
// item.
func collapse(v any, raw bool) any {
	seq, isSeq := v.(sequence)
	if !isSeq || raw {
		return v
	}
	return result(seq)
}

// seqItem is a result stored in a sequence: a sequence inside it is an array.
func seqItem(v any) any {
	if seq, isSeq := v.(sequence); isSeq {
		return []any(seq)
	}
	return v
}

func (l lambda) eval(env Env, ctx any) (any, error) {
	return &closure{params: l.params, body: l.body, vars: env.Vars, ctx: ctx}, nil
}

// maxCallDepth bounds nested lambda calls on the fast path.
const maxCallDepth = 200

// apply calls the closure: a missing argument is undefined, an extra one
// is dropped.
func (c *closure) apply(env Env, args ...any) (any, error) {
	depth := callDepth(env.Vars) + 1
	if depth > maxCallDepth {
		return nil, errNotSure // the reference reports its own stack limit
	}
	scope := &frame{parent: c.vars, vals: make(map[string]any, len(c.params)), calls: depth}
	for i, p := range c.params {
		if i < len(args) {
			scope.vals[p] = args[i]
		} else {
			scope.vals[p] = undefined
		}
	}
	env.Vars = scope
	return c.body.eval(env, c.ctx)
}

// hofArgs are what $map, $filter, $single, $sift and $each pass: the value,
// then the position and the whole only to a lambda that names them.
func (c *closure) hofArgs(v, pos, whole any) []any {
	switch {
	case len(c.params) >= 3:
		return []any{v, pos, whole}
	case len(c.params) == 2:
		return []any{v, pos}
	}
	return []any{v}
}

// varCall is $f(args…) of a variable holding a lambda.
type varCall struct {
	name string
	args []fastNode
	raw  bool // a tail call: the result as the function gives it
}

func (c varCall) eval(env Env, ctx any) (any, error) {
	if env.Vars == nil {
		return nil, errNotSure
	}
	v, _ := env.Vars.Var(c.name)
	f, isClosure := v.(*closure)
	var err error
	if !isClosure {
		return nil, errNotSure // a function of the caller's, or not a function
	}
	args, err := evalArgs(env, ctx, c.args)
	if err != nil {
		return nil, err
	}
	v, err = f.apply(env, args...)
	return collapse(v, c.raw), err
}

func evalArgs(env Env, ctx any, nodes []fastNode) ([]any, error) {
	args := make([]any, len(nodes))
	for i, a := range nodes {
		v, err := a.eval(env, ctx)
		if err != nil {
			return nil, err
		}
		args[i] = v
	}
	return args, nil
}

// higherOrder are the functions that take a lambda; they get the
// evaluation's Env to call it with.
var higherOrder = map[string]func(env Env, args []any) (any, error){
	"map":    hofMap,
	"filter": hofFilter,
	"reduce": hofReduce,
	"single": hofSingle,
	"sift":   hofSift,
	"each":   hofEach,
	"sort":   hofSort,
}

// hofCall is a call of one of higherOrder.
type hofCall struct {
	name string
	fn   func(env Env, args []any) (any, error)
	args []fastNode
	raw  bool // a tail call: the result as the function gives it
}

func (c hofCall) eval(env Env, ctx any) (any, error) {
	if env.Vars != nil {
		if _, shadowed := env.Vars.Var(c.name); shadowed {
			return nil, errNotSure
		}
	}
	args, err := evalArgs(env, ctx, c.args)
	if err != nil {
		return nil, err
	}
	v, err := c.fn(env, args)
	return collapse(v, c.raw), err
}

// arrayArg is an argument of signature `a` as jsonata validates it: an
// array as it is, any other JSON value as a one-item array.
func arrayArg(v any) ([]any, bool) {
	switch t := v.(type) {
	case []any:
		return t, true
	case sequence:
		return t, true
	case *closure:
		return nil, false
	}
	if !inModel(v) {
		return nil, false
	}
	return []any{v}, true
}

// lambdaArg is a function argument the fast path can call.
func lambdaArg(args []any, i int) (*closure, bool) {
	if i >= len(args) {
		return nil, false
	}
	f, ok := args[i].(*closure)
	return f, ok
}

// result is a sequence as an expression's value: empty is undefined, one
// item is the item.
func result(seq []any) any {
	switch len(seq) {
	case 0:
		return undefined
	case 1:
		return seq[0]
	}
	return seq
}

func hofMap(env Env, a []any) (any, error) {
	f, ok := lambdaArg(a, 1)
	if len(a) != 2 || !ok {
		return nil, errNotSure
	}
	if isUndefined(a[0]) {
		return undefined, nil
	}
	items, ok := arrayArg(a[0])
	if !ok {
		return nil, errNotSure
	}
	var out []any
	for i, item := range items {
		v, err := f.apply(env, f.hofArgs(item, int64(i), items)...)
		if err != nil {
			return nil, err
		}
		if !isUndefined(v) {
			out = append(out, seqItem(v))
		}
	}
	return sequence(out), nil
}

// predicate calls f and reads its result as jsonata's boolean does.
func predicate(env Env, f *closure, args []any) (bool, error) {
	v, err := f.apply(env, args...)
	if err != nil {
		return false, err
	}
	if isUndefined(v) {
		return false, nil
	}
	if _, isFn := v.(*closure); isFn {
		return false, errNotSure
	}
	keep, ok := effectiveBoolean(v)
	if !ok {
		return false, errNotSure
	}
	return keep, nil
}

func hofFilter(env Env, a []any) (any, error) {
	f, ok := lambdaArg(a, 1)
	if len(a) != 2 || !ok {
		return nil, errNotSure
	}
	if isUndefined(a[0]) {
		return undefined, nil
	}
	items, ok := arrayArg(a[0])
	if !ok {
		return nil, errNotSure
	}
	var out []any
	for i, item := range items {
		keep, err := predicate(env, f, f.hofArgs(item, int64(i), items))
		if err != nil {
			return nil, err
		}
		if keep {
			out = append(out, item)
		}
	}
	return sequence(out), nil
}

// hofSingle is $single: exactly one match, or jsonata's error (D3138,
// D3139), which the reference words.
func hofSingle(env Env, a []any) (any, error) {
	f, ok := lambdaArg(a, 1)
	if len(a) != 2 || !ok {
		return nil, errNotSure
	}
	if isUndefined(a[0]) {
		return undefined, nil
	}
	items, ok := arrayArg(a[0])
	if !ok {
		return nil, errNotSure
	}
	found := undefined
	for i, item := range items {
		keep, err := predicate(env, f, f.hofArgs(item, int64(i), items))
		if err != nil {
			return nil, err
		}
		if keep {
			if !isUndefined(found) {
				return nil, errNotSure
			}
			found = item
		}
	}
	if isUndefined(found) {
		return nil, errNotSure
	}
	return found, nil
}

// hofReduce is $reduce (jsonata's foldLeft), with and without init.
func hofReduce(env Env, a []any) (any, error) {
	f, ok := lambdaArg(a, 1)
	if (len(a) != 2 && len(a) != 3) || !ok || len(f.params) < 2 {
		return nil, errNotSure // D3050 for a lambda of one parameter: the reference words it
	}
	if isUndefined(a[0]) {
		return undefined, nil
	}
	items, ok := arrayArg(a[0])
	if !ok {
		return nil, errNotSure
	}
	acc, i := undefined, 0
	if len(a) == 3 {
		if _, isFn := a[2].(*closure); isFn {
			return nil, errNotSure
		}
		acc = a[2]
	}
	if isUndefined(acc) && len(items) > 0 {
		acc, i = items[0], 1
	}
	for ; i < len(items); i++ {
		args := []any{acc, items[i]}
		if len(f.params) >= 3 {
			args = append(args, int64(i))
		}
		if len(f.params) >= 4 {
			args = append(args, items)
		}
		var err error
		if acc, err = f.apply(env, args...); err != nil {
			return nil, err
		}
	}
	return acc, nil
}

// objectKeys lists an object's keys in the order the interpreter sees
// them: this runtime hands objects over with their keys sorted; a key
// JavaScript reads as an array index it would list first, so such an
// object is the reference's.
func objectKeys(o map[string]any) ([]string, bool) {
	keys := make([]string, 0, len(o))
	for k := range o {
		if n, err := strconv.ParseUint(k, 10, 32); err == nil && strconv.FormatUint(n, 10) == k {
			return nil, false
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys, true
}

// objectAndLambda is the (object, lambda) pair $sift and $each take, with
// the object's keys in the order the reference would see them.
func objectAndLambda(a []any) (o map[string]any, keys []string, f *closure, ok bool) {
	f, ok = lambdaArg(a, 1)
	if len(a) != 2 || !ok {
		return nil, nil, nil, false
	}
	o, ok = a[0].(map[string]any)
	if !ok {
		return nil, nil, nil, false
	}
	keys, ok = objectKeys(o)
	return o, keys, f, ok
}

func hofSift(env Env, a []any) (any, error) {
	o, keys, f, ok := objectAndLambda(a)
	if !ok {
		return nil, errNotSure
	}
	out := map[string]any{}
	for _, k := range keys {
		keep, err := predicate(env, f, f.hofArgs(o[k], k, o))
		if err != nil {
			return nil, err
		}
		if keep {
			out[k] = o[k]
		}
	}
	if len(out) == 0 {
		return undefined, nil
	}
	return out, nil
}

func hofEach(env Env, a []any) (any, error) {
	o, keys, f, ok := objectAndLambda(a)
	if !ok {
		return nil, errNotSure
	}
	var out []any
	for _, k := range keys {
		v, err := f.apply(env, f.hofArgs(o[k], k, o)...)
		if err != nil {
			return nil, err
		}
		if !isUndefined(v) {
			out = append(out, seqItem(v))
		}
	}
	return sequence(out), nil
}

// hofSort is $sort: without a comparator nativeSort's; with one, jsonata's
// merge sort, stable, the comparator's true meaning "swap".
func hofSort(env Env, a []any) (any, error) {
	if len(a) == 1 {
		return nativeSort(a)
	}
	f, ok := lambdaArg(a, 1)
	if len(a) != 2 || !ok {
		return nil, errNotSure
	}
	if isUndefined(a[0]) {
		return undefined, nil
	}
	items, ok := arrayArg(a[0])
	if !ok {
		return nil, errNotSure
	}
	if len(items) <= 1 {
		if _, isArr := a[0].([]any); !isArr {
			return nil, errNotSure // a wrapped value: the reference's array
		}
		return items, nil
	}
	return mergeSort(env, f, items)
}

func mergeSort(env Env, f *closure, items []any) ([]any, error) {
	if len(items) <= 1 {
		return items, nil
	}
	mid := len(items) / 2
	left, err := mergeSort(env, f, items[:mid])
	if err != nil {
		return nil, err
	}
	right, err := mergeSort(env, f, items[mid:])
	if err != nil {
		return nil, err
	}
	out := make([]any, 0, len(items))
	for len(left) > 0 && len(right) > 0 {
		v, err := f.apply(env, left[0], right[0])
		if err != nil {
			return nil, err
		}
		swap, ok := truth(v) // JavaScript's truth of other values is not jsonata's
		if !ok {
			return nil, errNotSure
		}
		if swap {
			out = append(out, right[0])
			right = right[1:]
		} else {
			out = append(out, left[0])
			left = left[1:]
		}
	}
	out = append(out, left...)
	return append(out, right...), nil
}

// nativeKeys is $keys: an object's keys; of an array, its items' keys
// merged in the order first seen.
func nativeKeys(a []any) (any, error) {
	if len(a) != 1 {
		return nil, errNotSure
	}
	var out []any
	seen := map[string]bool{}
	var collect func(v any) bool
	collect = func(v any) bool {
		switch t := v.(type) {
		case map[string]any:
			keys, ok := objectKeys(t)
			if !ok {
				return false
			}
			for _, k := range keys {
				if !seen[k] {
					seen[k] = true
					out = append(out, k)
				}
			}
		case []any:
			for _, e := range t {
				if !collect(e) {
					return false
				}
			}
		default:
			return inModel(v) || isUndefined(v)
		}
		return true
	}
	if !collect(a[0]) {
		return nil, errNotSure
	}
	return sequence(out), nil
}

// mapStep is the map operator as a path's last step, `path.(expr)`: expr
// evaluated with each item of the path's sequence as the context.
type mapStep struct {
	over fastNode // the path before the step
	expr fastNode
}

func compileMapStep(node map[string]any, steps []any, last map[string]any) fastNode {
	if !only(last, "expressions") {
		return nil // a predicate, sorting or focus on the step
	}
	expr := compileBlock(last)
	if expr == nil {
		return nil
	}
	var over fastNode
	if first, _ := steps[0].(map[string]any); len(steps) == 2 && first["type"] == "variable" {
		over = compileFast(first)
	} else {
		prefix := map[string]any{"type": "path", "steps": steps[:len(steps)-1]}
		over = compilePath(prefix)
	}
	if _, isPath := over.(path); !isPath {
		return nil
	}
	return mapStep{over: over, expr: expr}
}

func (m mapStep) eval(env Env, ctx any) (any, error) {
	v, err := m.over.eval(env, ctx)
	if err != nil {
		return nil, err
	}
	if isUndefined(v) {
		return undefined, nil
	}
	items, isArr := v.([]any)
	if !isArr {
		items = []any{v}
	}
	var out []any
	for _, it := range items {
		if _, isArr := it.([]any); isArr || !inModel(it) {
			return nil, errNotSure // an array as the context: jsonata's flattening rules
		}
		r, err := m.expr.eval(env, it)
		if err != nil {
			return nil, err
		}
		switch r.(type) {
		case undefinedType:
			continue
		case []any, sequence, *closure:
			return nil, errNotSure // whether jsonata flattens it depends on how it was built
		}
		out = append(out, r)
	}
	return result(out), nil
}
