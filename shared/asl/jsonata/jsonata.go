// Package jsonata evaluates the JSONata expressions of Step Functions
// states ("{% … %}"), with the functions Step Functions adds ($partition,
// $range, $hash, $random, $uuid, $parse) and without $eval, which Step
// Functions does not offer (calling it fails the evaluation, as on AWS).
//
// The language is jsonata-js 2.0.6 itself, the implementation Step
// Functions runs, embedded and run on a JavaScript interpreter
// (github.com/dop251/goja): its parser, operators, functions, error codes
// and messages are the reference's. That path costs tens of microseconds,
// so the commonest expressions of state machines — paths from variables,
// comparisons, object and array constructors, arithmetic, a few functions —
// are evaluated natively in Go on the reference's own parse tree (fast.go),
// and a differential test holds the two to the same answers.
package jsonata

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"sort"

	"github.com/dop251/goja"
)

// ErrUndefined is returned when an expression evaluates to nothing
// (JSONata's undefined), which JSON cannot represent.
var ErrUndefined = errors.New("the expression returned nothing (undefined)")

// ErrUnsupportedResult is returned when an expression evaluates to what JSON
// cannot hold: a function, or a number that is not finite.
var ErrUnsupportedResult = errors.New("the expression returned an unsupported result type")

// Expr is one compiled expression, safe for concurrent use.
type Expr struct {
	src   string
	names []string // every $name the expression mentions, sorted
	fast  fastNode // nil: only the reference evaluates it
}

// Compile parses an expression (the text between "{%" and "%}"). A syntax
// error is jsonata's (*Error, "S0202: Expected \")\", got \"(end)\"").
func Compile(src string) (e *Expr, err error) {
	m, err := borrow()
	if err != nil {
		return nil, err
	}
	defer func() {
		// As in evalReference: a Go panic fails this call, and the
		// interpreter it left behind is not reused.
		if p := recover(); p != nil {
			e, err = nil, fmt.Errorf("the JSONata implementation failed: %v", p)
			return
		}
		giveBack(m)
	}()
	x, err := m.compiled(src)
	if err != nil {
		return nil, err
	}
	tree, err := m.ast(goja.Undefined(), x)
	if err != nil {
		return nil, jsError(err)
	}
	var node map[string]any
	if err := json.Unmarshal([]byte(tree.String()), &node); err != nil {
		return nil, fmt.Errorf("reading the JSONata parse tree: %w", err)
	}
	e = &Expr{src: src, names: variableNames(src), fast: compileFast(node)}
	if e.fast != nil {
		// The interpreter compiles it again should the fast path ever
		// leave it an evaluation; meanwhile its parse tree is not kept
		// alive (the collector would scan it on every cycle).
		m.forget(src)
	}
	return e, nil
}

// String returns the expression's text.
func (x *Expr) String() string { return x.src }

// Names returns every $name the expression mentions (variables, functions
// and local bindings alike), so a caller binds only what it may read.
func (x *Expr) Names() []string { return x.names }

// Mentions reports whether the expression mentions $name.
func (x *Expr) Mentions(name string) bool {
	i := sort.SearchStrings(x.names, name)
	return i < len(x.names) && x.names[i] == name
}

// Vars gives an evaluation the values of $names: Step Functions' $states
// and the workflow variables.
type Vars interface {
	// Var returns the value of $name, or false when nothing is bound to
	// it. It is asked only for the names the expression mentions.
	Var(name string) (any, bool)
}

// Env is what one evaluation sees besides the language's own functions.
type Env struct {
	Vars Vars
	// Entropy feeds an unseeded $random() and $uuid(); nil means
	// crypto/rand.
	Entropy io.Reader
}

// Eval evaluates the expression. Values are the generic JSON model (nil,
// bool, int64, float64, string, []any, map[string]any); a whole number
// comes back as int64. An undefined result returns ErrUndefined, a failure
// jsonata reports an *Error.
func (x *Expr) Eval(env Env) (v any, err error) {
	if p, isPath := x.fast.(path); isPath && !p.filtered && p.root != "" {
		// The commonest expression of all, a plain path from a variable,
		// without the interface calls of the general case.
		if v, err := p.plain(env); err != errNotSure { //nolint:errorlint // errNotSure is returned as is
			return v, err
		}
	} else if x.fast != nil {
		if v, err := evalFast(x.fast, env); !errors.Is(err, errNotSure) {
			return v, err
		}
	}
	return x.evalReference(env, noInput)
}

// evalReference evaluates the expression with jsonata-js.
func (x *Expr) evalReference(env Env, input any) (v any, err error) {
	m, err := borrow()
	if err != nil {
		return nil, err
	}
	defer func() {
		// A Go panic inside the interpreter fails this evaluation, not the
		// process; the interpreter it left behind is not reused.
		if p := recover(); p != nil {
			v, err = nil, fmt.Errorf("the JSONata implementation failed: %v", p)
			return
		}
		giveBack(m)
	}()
	return m.evaluate(x.src, x.names, env, input)
}

// variableNames lists the distinct $names in src outside string literals.
func variableNames(src string) []string {
	set := map[string]bool{}
	var quote byte
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case quote != 0:
			switch c {
			case '\\':
				i++
			case quote:
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '$':
			j := i + 1
			for j < len(src) && (src[j] == '_' || src[j] >= 'a' && src[j] <= 'z' || src[j] >= 'A' && src[j] <= 'Z' || src[j] >= '0' && src[j] <= '9') {
				j++
			}
			if j > i+1 {
				set[src[i+1:j]] = true
			}
			i = j - 1
		}
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// normalize converts a library result to the generic JSON model.
func normalize(v reflect.Value) (any, error) {
	for v.IsValid() && (v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer) {
		if v.IsNil() {
			return nil, nil //nolint:nilnil // nil is JSON null, a value
		}
		v = v.Elem()
	}
	if !v.IsValid() {
		return nil, nil //nolint:nilnil // nil is JSON null, a value
	}
	switch v.Kind() {
	case reflect.Bool:
		return v.Bool(), nil
	case reflect.String:
		return v.String(), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int(), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if u := v.Uint(); u <= math.MaxInt64 {
			return int64(u), nil
		}
		return float64(v.Uint()), nil
	case reflect.Float32, reflect.Float64:
		f := v.Float()
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, ErrUnsupportedResult
		}
		if f == math.Trunc(f) && math.Abs(f) <= 1<<53 {
			return int64(f), nil
		}
		return f, nil
	case reflect.Slice, reflect.Array:
		out := make([]any, v.Len())
		for i := range out {
			e, err := normalize(v.Index(i))
			if err != nil {
				return nil, err
			}
			out[i] = e
		}
		return out, nil
	case reflect.Map:
		out := make(map[string]any, v.Len())
		it := v.MapRange()
		for it.Next() {
			e, err := normalize(it.Value())
			if err != nil {
				return nil, err
			}
			out[fmt.Sprint(it.Key().Interface())] = e
		}
		return out, nil
	}
	return nil, ErrUnsupportedResult
}
