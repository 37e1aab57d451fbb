package jsonata

import (
	"math"
	"strconv"
)

// The fast path's operators and constructors.

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
	case "=", "!=", "<", "<=", ">", ">=", "+", "-", "*", "/", "%", "&", "and", "or", "in":
	default:
		return nil // .., ~> and the rest: the reference's
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
	case "in":
		return includes(l, r)
	}
	return compare(b.op, l, r)
}

// includes is `l in r`: whether r (an array, or one value) holds l, as
// JavaScript's === finds it — by value for scalars; objects and arrays
// by identity, which is the reference's to decide.
func includes(l, r any) (any, error) {
	if isUndefined(l) || isUndefined(r) {
		return false, nil
	}
	if !scalar(l) {
		return nil, errNotSure
	}
	items, isArr := r.([]any)
	if !isArr {
		items = []any{r}
	}
	for _, e := range items {
		if !scalar(e) {
			continue // an object or array is never === a scalar
		}
		if eq, err := compare("=", l, e); err != nil || eq == true {
			return eq, err
		}
	}
	return false, nil
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
	if f == math.Trunc(f) && math.Abs(f) <= 1<<53 && !(f == 0 && math.Signbit(f)) {
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
