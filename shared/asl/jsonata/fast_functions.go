package jsonata

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// The fast path's function calls.

// call is $f(args…) of a function the fast path implements.
type call struct {
	name string
	fn   func(args []any) (any, error) // one of natives, or
	sf   sfFunction                    // one of Step Functions'
	args []fastNode
	raw  bool // a tail call: the result as the function gives it
}

// natives are the functions implemented here, each for the arguments it
// certainly decides as jsonata does (errNotSure otherwise).
var natives = map[string]func(args []any) (any, error){
	"merge":           nativeMerge,
	"count":           nativeCount,
	"exists":          nativeExists,
	"string":          nativeString,
	"length":          nativeLength,
	"uppercase":       func(a []any) (any, error) { return caseFold(a, strings.ToUpper) },
	"lowercase":       func(a []any) (any, error) { return caseFold(a, strings.ToLower) },
	"sum":             nativeSum,
	"not":             nativeNot,
	"join":            nativeJoin,
	"contains":        nativeContains,
	"split":           nativeSplit,
	"number":          nativeNumber,
	"floor":           func(a []any) (any, error) { return numeric(a, math.Floor) },
	"ceil":            func(a []any) (any, error) { return numeric(a, math.Ceil) },
	"abs":             func(a []any) (any, error) { return numeric(a, math.Abs) },
	"round":           nativeRound,
	"sqrt":            nativeSqrt,
	"power":           nativePower,
	"max":             func(a []any) (any, error) { return aggregate(a, math.Max) },
	"min":             func(a []any) (any, error) { return aggregate(a, math.Min) },
	"average":         nativeAverage,
	"append":          nativeAppend,
	"reverse":         nativeReverse,
	"boolean":         nativeBoolean,
	"type":            nativeType,
	"trim":            nativeTrim,
	"substringBefore": func(a []any) (any, error) { return around(a, true) },
	"substringAfter":  func(a []any) (any, error) { return around(a, false) },
	"substring":       nativeSubstring,
	"sort":            nativeSort,
	"distinct":        nativeDistinct,
	"keys":            nativeKeys,
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
	args, ok := compileArgs(node)
	if !ok {
		return nil
	}
	if hof, isHOF := higherOrder[name]; isHOF {
		return hofCall{name: name, fn: hof, args: args}
	}
	_, native := natives[name]
	_, sf := stepFunctions[name]
	if !native && !sf && !jsonataFunctions()[name] {
		return varCall{name: name, args: args} // a lambda bound to a variable, if it is one
	}
	c := call{name: name, args: args}
	if sf, isSF := stepFunctions[name]; isSF {
		if sf == nil {
			return nil // $eval: the reference says what a call of nothing is
		}
		c.sf = sf
	} else if c.fn = natives[name]; c.fn == nil {
		return nil
	}
	return c
}

func compileArgs(node map[string]any) ([]fastNode, bool) {
	var out []fastNode
	args, _ := node["arguments"].([]any)
	for _, a := range args {
		m, _ := a.(map[string]any)
		if m["type"] == "operator" {
			return nil, false // a `?` placeholder: partial application
		}
		n := compileFast(m)
		if n == nil {
			return nil, false
		}
		out = append(out, n)
	}
	return out, true
}

// jsonataFunctions are the names jsonata binds to its own functions: a
// call of one the fast path does not implement is the reference's, a call
// of any other name calls a variable. Read from jsonata's source at the
// first compile that needs them, not when a program starts.
var jsonataFunctions = sync.OnceValue(func() map[string]bool {
	names := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?:staticFrame|environment)\.bind\('(\w+)'`).FindAllStringSubmatch(reference, -1) {
		names[m[1]] = true
	}
	return names
})

// compileChain reads `lhs ~> $f(args…)`, which jsonata evaluates as
// $f(lhs, args…); a chain of function values (`$f ~> $g`) or a lambda on
// the right is the reference's.
func compileChain(node map[string]any) fastNode {
	if !only(node, "value", "lhs", "rhs", "keepArray") || node["value"] != "~>" {
		return nil
	}
	if keep, _ := node["keepArray"].(bool); keep {
		return nil
	}
	rhs, _ := node["rhs"].(map[string]any)
	if rhs["type"] != "function" {
		return nil
	}
	lhs := sub(node, "lhs")
	if lhs == nil {
		return nil
	}
	switch c := compileCall(rhs).(type) {
	case call:
		c.args = append([]fastNode{lhs}, c.args...)
		return c
	case hofCall:
		c.args = append([]fastNode{lhs}, c.args...)
		return c
	}
	return nil
}

func (c call) eval(env Env, ctx any) (any, error) {
	if c.sf == nil && env.Vars != nil {
		if _, shadowed := env.Vars.Var(c.name); shadowed {
			return nil, errNotSure // a variable of that name is what is called
		}
	}
	// Step Functions' functions come before variables, as the reference
	// binds them.
	args, err := evalArgs(env, ctx, c.args)
	if err != nil {
		return nil, err
	}
	for _, a := range args {
		if _, isFn := a.(*closure); isFn {
			return nil, errNotSure // a function where these take values
		}
	}
	if c.sf != nil {
		return callStepFunction(c.name, c.sf, env.Entropy, args)
	}
	v, err := c.fn(args)
	return collapse(v, c.raw), err
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

// onString is a function of one string: an undefined argument gives
// undefined; any other argument, or a string f does not decide (ok false),
// is the reference's.
func onString(a []any, f func(string) (v any, ok bool)) (any, error) {
	if len(a) != 1 {
		return nil, errNotSure
	}
	switch t := a[0].(type) {
	case undefinedType:
		return undefined, nil
	case string:
		if v, ok := f(t); ok {
			return v, nil
		}
	}
	return nil, errNotSure
}

func nativeLength(a []any) (any, error) {
	return onString(a, func(s string) (any, bool) {
		// jsonata counts code points (Array.from), not UTF-16 units.
		return int64(utf8.RuneCountInString(s)), true
	})
}

func caseFold(a []any, fold func(string) string) (any, error) {
	// Unicode case rules are the reference's.
	return onString(a, func(s string) (any, bool) { return fold(s), ascii(s) })
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

// decimal is the string form $number reads with parseFloat (other forms,
// hexadecimal and the like, are the reference's).
var decimal = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?([Ee][-+]?[0-9]+)?$`)

// nativeNumber converts numbers, decimal strings and booleans.
func nativeNumber(a []any) (any, error) {
	if len(a) != 1 {
		return nil, errNotSure
	}
	switch t := a[0].(type) {
	case undefinedType, int64, float64:
		return t, nil
	case bool:
		if t {
			return int64(1), nil
		}
		return int64(0), nil
	case string:
		if decimal.MatchString(t) {
			f, err := strconv.ParseFloat(t, 64)
			if err == nil && !math.IsInf(f, 0) {
				return numberValue(f), nil
			}
		}
	}
	return nil, errNotSure // D3030 or T0410: the reference words it
}
