package jsonata

import (
	"errors"
	"reflect"

	"github.com/blues/jsonata-go/jparse"
)

// fastExpr is an expression simple enough to evaluate without the
// library, which is what most expressions of Step Functions states are: a
// path of field names from a variable ($states.input.order.id, $v.x), or
// such a path compared with a number, string or boolean literal
// ($states.input.step = 3). Whenever the data leaves what these rules
// certainly decide as JSONata does (an array on the way, an operand that is
// not a number, string or boolean, types that differ under < or >), the
// library evaluates the expression instead.
type fastExpr struct {
	root  string
	steps []string
	op    jparse.ComparisonOperator // 0: the path's value itself
	lit   any                       // float64, string or bool
}

// compileFast recognizes a fast expression in a parsed one, or returns nil.
func compileFast(node jparse.Node) *fastExpr {
	if c, ok := node.(*jparse.ComparisonOperatorNode); ok {
		switch c.Type {
		case jparse.ComparisonEqual, jparse.ComparisonNotEqual, jparse.ComparisonLess,
			jparse.ComparisonLessEqual, jparse.ComparisonGreater, jparse.ComparisonGreaterEqual:
		default:
			return nil
		}
		f := fastPath(c.LHS)
		if f == nil {
			return nil
		}
		switch r := c.RHS.(type) {
		case *jparse.NumberNode:
			f.lit = r.Value
		case *jparse.StringNode:
			f.lit = r.Value
		case *jparse.BooleanNode:
			f.lit = r.Value
		default:
			return nil
		}
		f.op = c.Type
		return f
	}
	return fastPath(node)
}

// fastPath recognizes $name or $name.a.b… (plain names, no wildcards,
// filters, functions or array constructors).
func fastPath(node jparse.Node) *fastExpr {
	switch n := node.(type) {
	case *jparse.VariableNode:
		if n.Name == "" {
			return nil
		}
		return &fastExpr{root: n.Name}
	case *jparse.PathNode:
		if n.KeepArrays || len(n.Steps) < 2 {
			return nil
		}
		v, ok := n.Steps[0].(*jparse.VariableNode)
		if !ok || v.Name == "" {
			return nil
		}
		f := &fastExpr{root: v.Name}
		for _, st := range n.Steps[1:] {
			name, ok := st.(*jparse.NameNode)
			if !ok {
				return nil
			}
			f.steps = append(f.steps, name.Value)
		}
		return f
	}
	return nil
}

// errNotSure says the fast path cannot decide: the library must evaluate.
var errNotSure = errors.New("left to the JSONata library")

// eval evaluates the expression, or returns errNotSure.
func (f *fastExpr) eval(env Env) (any, error) {
	if env.Vars == nil {
		return nil, errNotSure
	}
	cur, ok := env.Vars.Var(f.root)
	if !ok {
		return nil, errNotSure
	}
	defined := true
	for _, name := range f.steps {
		switch m := cur.(type) {
		case map[string]any:
			cur, defined = m[name]
		case []any:
			return nil, errNotSure // JSONata maps a step over an array
		default:
			defined = false // a field of a scalar is undefined
		}
		if !defined {
			break
		}
	}
	if defined {
		if _, isArr := cur.([]any); isArr {
			return nil, errNotSure // sequence rules: left to the library
		}
	}
	if f.op == 0 {
		if !defined {
			return nil, ErrUndefined
		}
		if !isModel(cur) {
			return normalize(reflect.ValueOf(cur))
		}
		return cur, nil
	}
	if _, isBool := f.lit.(bool); isBool && f.op != jparse.ComparisonEqual && f.op != jparse.ComparisonNotEqual {
		return nil, errNotSure // ordering a boolean is the library's type error
	}
	if !defined {
		return false, nil // a comparison with undefined is false
	}
	switch l := cur.(type) {
	case int64:
		r, isNum := f.lit.(float64)
		if !isNum {
			return f.mismatch()
		}
		return compareNumbers(f.op, float64(l), r), nil
	case float64:
		r, isNum := f.lit.(float64)
		if !isNum {
			return f.mismatch()
		}
		return compareNumbers(f.op, l, r), nil
	case string:
		r, isStr := f.lit.(string)
		if !isStr {
			return f.mismatch()
		}
		if f.op != jparse.ComparisonEqual && f.op != jparse.ComparisonNotEqual && (!ascii(l) || !ascii(r)) {
			return nil, errNotSure // JavaScript orders UTF-16 code units, Go bytes
		}
		switch f.op {
		case jparse.ComparisonEqual:
			return l == r, nil
		case jparse.ComparisonNotEqual:
			return l != r, nil
		case jparse.ComparisonLess:
			return l < r, nil
		case jparse.ComparisonLessEqual:
			return l <= r, nil
		case jparse.ComparisonGreater:
			return l > r, nil
		case jparse.ComparisonGreaterEqual:
			return l >= r, nil
		}
	case bool:
		r, isBool := f.lit.(bool)
		if !isBool {
			return f.mismatch()
		}
		switch f.op {
		case jparse.ComparisonEqual:
			return l == r, nil
		case jparse.ComparisonNotEqual:
			return l != r, nil
		}
	}
	return nil, errNotSure
}

// mismatch answers = and != between different types (never equal) and
// leaves the ordering operators' type error to the library.
func (f *fastExpr) mismatch() (any, error) {
	switch f.op {
	case jparse.ComparisonEqual:
		return false, nil
	case jparse.ComparisonNotEqual:
		return true, nil
	}
	return nil, errNotSure
}

func compareNumbers(op jparse.ComparisonOperator, l, r float64) bool {
	switch op {
	case jparse.ComparisonEqual:
		return l == r
	case jparse.ComparisonNotEqual:
		return l != r
	case jparse.ComparisonLess:
		return l < r
	case jparse.ComparisonLessEqual:
		return l <= r
	case jparse.ComparisonGreater:
		return l > r
	}
	return l >= r
}

func ascii(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
