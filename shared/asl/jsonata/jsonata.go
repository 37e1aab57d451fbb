// Package jsonata evaluates the JSONata expressions of Step Functions
// states ("{% … %}"), with the functions Step Functions adds ($partition,
// $range, $hash, $random, $uuid, $parse) and without $eval, which Step
// Functions does not offer (calling it fails the evaluation, as on AWS).
//
// The language itself comes from github.com/blues/jsonata-go (jsonata-js
// 1.5.4 semantics; docs/asl-runtime.md lists what differs from the 2.0.6
// that Step Functions implements). This package hides it behind Compile
// and Eval and works around two of its defects: evaluating `a ~> $f(b)`
// rewrites the parsed expression in place (so such an expression is parsed
// again for every evaluation), and its built-in functions keep the
// evaluation context in shared fields (so evaluations are serialized).
package jsonata

import (
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"sort"
	"sync"

	blues "github.com/blues/jsonata-go"
	"github.com/blues/jsonata-go/jparse"
)

// ErrUndefined is returned when an expression evaluates to nothing
// (JSONata's undefined), which JSON cannot represent.
var ErrUndefined = errors.New("the expression returned nothing (undefined)")

// ErrUnsupportedResult is returned when an expression evaluates to what JSON
// cannot hold: a function, or a number that is not finite.
var ErrUnsupportedResult = errors.New("the expression returned an unsupported result type")

// evalMu serializes evaluations: the library's built-in functions are
// package-level values whose evaluation context is a field set on every
// call, so two evaluations at once would race on it.
var evalMu sync.Mutex

// Expr is one compiled expression, safe for concurrent use.
type Expr struct {
	src      string
	compiled *blues.Expr
	reparse  bool     // the expression holds `~> $f(…)`, which evaluation rewrites
	names    []string // every $name the expression mentions, sorted
	fast     *fastExpr
}

// Compile parses an expression (the text between "{%" and "%}").
func Compile(src string) (*Expr, error) {
	node, err := jparse.Parse(src)
	if err != nil {
		return nil, fmt.Errorf("%s", describe(err))
	}
	x := &Expr{src: src, names: variableNames(src), fast: compileFast(node)}
	x.reparse = hasChainedCall(node)
	if !x.reparse {
		if x.compiled, err = blues.Compile(src); err != nil {
			return nil, fmt.Errorf("%s", describe(err))
		}
	}
	return x, nil
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
// comes back as int64. An undefined result returns ErrUndefined.
func (x *Expr) Eval(env Env) (v any, err error) {
	// The library is a reflection-based interpreter of arbitrary input; a
	// panic in it fails this evaluation, not the process.
	defer func() {
		if p := recover(); p != nil {
			v, err = nil, fmt.Errorf("the JSONata library failed: %v", p)
		}
	}()
	if x.fast != nil {
		if v, err := x.fast.eval(env); !errors.Is(err, errNotSure) {
			return v, err
		}
	}
	bind := make(map[string]any, len(x.names))
	var fns map[string]any
	for _, name := range x.names {
		if isStepFunctionsFunction(name) {
			if fns == nil {
				fns = functions(env)
			}
			bind[name] = fns[name]
			continue
		}
		if env.Vars == nil {
			continue
		}
		if v, ok := env.Vars.Var(name); ok {
			bind[name] = v
		}
	}
	evalMu.Lock()
	defer evalMu.Unlock()
	e := x.compiled
	if x.reparse {
		var err error
		if e, err = blues.Compile(x.src); err != nil {
			return nil, fmt.Errorf("%s", describe(err))
		}
	} else {
		// A shallow copy takes the variables; the compiled expression
		// holds no registry of its own, so the copy gets a fresh one.
		cp := *e
		e = &cp
	}
	if len(bind) > 0 {
		if err := e.RegisterVars(bind); err != nil {
			return nil, err
		}
	}
	v, err = e.Eval(nil)
	if errors.Is(err, blues.ErrUndefined) {
		return nil, ErrUndefined
	}
	if err != nil {
		return nil, fmt.Errorf("%s", describe(err))
	}
	if isModel(v) {
		return v, nil
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

// describe words a library error without its Go type noise.
func describe(err error) string {
	var pe *jparse.Error
	if errors.As(err, &pe) {
		return fmt.Sprintf("%s (at position %d)", pe.Error(), pe.Position)
	}
	return err.Error()
}

// hasChainedCall reports whether node holds `a ~> $f(…)` anywhere.
func hasChainedCall(node jparse.Node) bool {
	found := false
	var walk func(v reflect.Value)
	seen := map[uintptr]bool{}
	walk = func(v reflect.Value) {
		if found || !v.IsValid() {
			return
		}
		switch v.Kind() {
		case reflect.Interface:
			if !v.IsNil() {
				walk(v.Elem())
			}
		case reflect.Pointer:
			if v.IsNil() || seen[v.Pointer()] {
				return
			}
			seen[v.Pointer()] = true
			if fa, ok := v.Interface().(*jparse.FunctionApplicationNode); ok {
				if _, isCall := fa.RHS.(*jparse.FunctionCallNode); isCall {
					found = true
					return
				}
			}
			walk(v.Elem())
		case reflect.Struct:
			for i := 0; i < v.NumField(); i++ {
				if v.Type().Field(i).IsExported() {
					walk(v.Field(i))
				}
			}
		case reflect.Slice, reflect.Array:
			if v.Type().Elem().Kind() == reflect.Uint8 {
				return
			}
			for i := 0; i < v.Len(); i++ {
				walk(v.Index(i))
			}
		}
	}
	walk(reflect.ValueOf(node))
	return found
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
		if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
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
