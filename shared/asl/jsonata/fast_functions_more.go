package jsonata

import (
	"math"
	"slices"
	"strings"
)

// More of the fast path's functions: numeric, array and string ones Step
// Functions states use, each for the arguments it certainly decides as
// jsonata does (errNotSure otherwise, so the reference words any error).

// numeric applies f to one number; undefined stays undefined.
func numeric(a []any, f func(float64) float64) (any, error) {
	if len(a) != 1 {
		return nil, errNotSure
	}
	if isUndefined(a[0]) {
		return undefined, nil
	}
	n, ok := num(a[0])
	if !ok {
		return nil, errNotSure
	}
	return numberValue(f(n) + 0), nil // + 0: JSON has no -0
}

// nativeRound rounds half to even, as jsonata does, without a precision
// (a precision is shifted through JavaScript's number strings: the
// reference's).
func nativeRound(a []any) (any, error) {
	if len(a) == 2 {
		if p, ok := num(a[1]); !ok || p != 0 {
			return nil, errNotSure
		}
		a = a[:1]
	}
	return numeric(a, math.RoundToEven)
}

func nativeSqrt(a []any) (any, error) {
	if len(a) == 1 {
		if n, ok := num(a[0]); ok && n < 0 {
			return nil, errNotSure // D3060: the reference words it
		}
	}
	return numeric(a, math.Sqrt)
}

func nativePower(a []any) (any, error) {
	if len(a) != 2 {
		return nil, errNotSure
	}
	if isUndefined(a[0]) {
		return undefined, nil
	}
	b, bok := num(a[0])
	e, eok := num(a[1])
	if !bok || !eok {
		return nil, errNotSure
	}
	r := math.Pow(b, e)
	if math.IsNaN(r) || math.IsInf(r, 0) {
		return nil, errNotSure // D3061: the reference words it
	}
	return numberValue(r + 0), nil
}

// numbers reads jsonata's array-of-numbers argument: a number alone is an
// array of one; undefined (and the empty array) give ok with no items.
func numbers(v any) (ns []float64, ok bool) {
	if isUndefined(v) {
		return nil, true
	}
	items, isArr := v.([]any)
	if !isArr {
		items = []any{v}
	}
	ns = make([]float64, len(items))
	for i, e := range items {
		n, isNum := num(e)
		if !isNum {
			return nil, false
		}
		ns[i] = n
	}
	return ns, true
}

func aggregate(a []any, pick func(x, y float64) float64) (any, error) {
	if len(a) != 1 {
		return nil, errNotSure
	}
	ns, ok := numbers(a[0])
	if !ok {
		return nil, errNotSure
	}
	if len(ns) == 0 {
		return undefined, nil
	}
	r := ns[0]
	for _, n := range ns[1:] {
		r = pick(r, n)
	}
	return numberValue(r), nil
}

func nativeAverage(a []any) (any, error) {
	if len(a) != 1 {
		return nil, errNotSure
	}
	ns, ok := numbers(a[0])
	if !ok {
		return nil, errNotSure
	}
	if len(ns) == 0 {
		return undefined, nil
	}
	total := 0.0
	for _, n := range ns {
		total += n
	}
	return numberValue(total / float64(len(ns))), nil
}

func nativeAppend(a []any) (any, error) {
	if len(a) != 2 {
		return nil, errNotSure
	}
	switch {
	case isUndefined(a[0]):
		return a[1], nil
	case isUndefined(a[1]):
		return a[0], nil
	}
	var out []any
	out = spreadOne(out, a[0])
	out = spreadOne(out, a[1])
	return out, nil
}

// spreadOne appends an array's items, or a value that is not an array.
func spreadOne(out []any, v any) []any {
	if items, isArr := v.([]any); isArr {
		return append(out, items...)
	}
	return append(out, v)
}

func nativeReverse(a []any) (any, error) {
	if len(a) != 1 {
		return nil, errNotSure
	}
	switch t := a[0].(type) {
	case undefinedType:
		return undefined, nil
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[len(t)-1-i] = e
		}
		return out, nil
	}
	return nil, errNotSure
}

func nativeBoolean(a []any) (any, error) {
	if len(a) != 1 {
		return nil, errNotSure
	}
	if isUndefined(a[0]) {
		return undefined, nil
	}
	b, ok := effectiveBoolean(a[0])
	if !ok {
		return nil, errNotSure
	}
	return b, nil
}

// effectiveBoolean is jsonata's $boolean of a JSON value.
func effectiveBoolean(v any) (bool, bool) {
	switch t := v.(type) {
	case nil:
		return false, true
	case bool:
		return t, true
	case string:
		return t != "", true
	case int64:
		return t != 0, true
	case float64:
		return t != 0, true
	case map[string]any:
		return len(t) > 0, true
	case []any:
		for _, e := range t {
			b, ok := effectiveBoolean(e)
			if !ok {
				return false, false
			}
			if b {
				return true, true
			}
		}
		return false, true
	}
	return false, false
}

func nativeType(a []any) (any, error) {
	if len(a) != 1 {
		return nil, errNotSure
	}
	switch a[0].(type) {
	case undefinedType:
		return undefined, nil
	case nil:
		return "null", nil
	case bool:
		return "boolean", nil
	case string:
		return "string", nil
	case int64, float64:
		return "number", nil
	case map[string]any:
		return "object", nil
	case []any:
		return "array", nil
	}
	return nil, errNotSure
}

// nativeTrim folds runs of space, tab, CR and LF into one space and drops
// a leading and a trailing one, as jsonata's $trim does.
func nativeTrim(a []any) (any, error) {
	return onString(a, func(t string) (any, bool) {
		var b strings.Builder
		inRun := false
		for _, r := range t {
			if r == ' ' || r == '\t' || r == '\n' || r == '\r' {
				if !inRun {
					b.WriteByte(' ')
				}
				inRun = true
				continue
			}
			inRun = false
			b.WriteRune(r)
		}
		s := b.String()
		s = strings.TrimPrefix(s, " ")
		return strings.TrimSuffix(s, " "), true
	})
}

// around is $substringBefore (before) or $substringAfter of the first
// occurrence of a string; without one, the string itself.
func around(a []any, before bool) (any, error) {
	if len(a) != 2 {
		return nil, errNotSure
	}
	chars, ok := a[1].(string)
	if !ok {
		return nil, errNotSure
	}
	switch t := a[0].(type) {
	case undefinedType:
		return undefined, nil
	case string:
		i := strings.Index(t, chars)
		switch {
		case i < 0:
			return t, nil
		case before:
			return t[:i], nil
		}
		return t[i+len(chars):], nil
	}
	return nil, errNotSure
}

// nativeSubstring is $substring(str, start[, length]) over code points, as
// jsonata slices them (whole-number positions only).
func nativeSubstring(a []any) (any, error) {
	if len(a) != 2 && len(a) != 3 {
		return nil, errNotSure
	}
	whole := func(v any) (int, bool) {
		f, ok := num(v)
		if !ok || f != math.Trunc(f) || math.Abs(f) > 1e9 {
			return 0, false
		}
		return int(f), true
	}
	start, ok := whole(a[1])
	if !ok {
		return nil, errNotSure
	}
	length, hasLength := 0, len(a) == 3
	if hasLength {
		if length, ok = whole(a[2]); !ok {
			return nil, errNotSure
		}
	}
	var str string
	switch t := a[0].(type) {
	case undefinedType:
		return undefined, nil
	case string:
		str = t
	default:
		return nil, errNotSure
	}
	runes := []rune(str)
	n := len(runes)
	if n+start < 0 {
		start = 0
	}
	end := n
	if hasLength {
		if length <= 0 {
			return "", nil
		}
		if start >= 0 {
			end = start + length
		} else {
			end = n + start + length
		}
	}
	// JavaScript's Array.prototype.slice(start, end).
	clamp := func(i int) int {
		if i < 0 {
			i += n
		}
		return min(max(i, 0), n)
	}
	s, e := clamp(start), clamp(end)
	if e <= s {
		return "", nil
	}
	return string(runes[s:e]), nil
}

// nativeSort is $sort without a comparator: a stable ascending sort of an
// array of numbers or of ASCII strings (whose UTF-16 order is their byte
// order). A comparator, other text, or mixed items are the reference's.
func nativeSort(a []any) (any, error) {
	if len(a) != 1 {
		return nil, errNotSure
	}
	items, isArr := a[0].([]any)
	switch {
	case isUndefined(a[0]):
		return undefined, nil
	case !isArr:
		return nil, errNotSure
	case len(items) <= 1:
		return items, nil
	}
	_, strs := items[0].(string)
	for _, e := range items {
		if s, isStr := e.(string); strs && (!isStr || !ascii(s)) {
			return nil, errNotSure
		}
		if _, isNum := num(e); !strs && !isNum {
			return nil, errNotSure // D3070: the reference words it
		}
	}
	out := slices.Clone(items)
	slices.SortStableFunc(out, func(x, y any) int {
		if strs {
			return strings.Compare(x.(string), y.(string))
		}
		xn, _ := num(x)
		yn, _ := num(y)
		switch {
		case xn < yn:
			return -1
		case xn > yn:
			return 1
		}
		return 0
	})
	return out, nil
}

// nativeDistinct is $distinct (Step Functions' States.ArrayUnique in
// JSONata) for an array of the data whose items are all strings, numbers,
// booleans or null: jsonata keeps the first of each, comparing as `=` does
// (numbers by value, whatever their Go type). A value that is not an array
// comes back as it is, as in jsonata. Arrays holding objects or arrays (deep
// equality) and result sequences are left to the interpreter.
func nativeDistinct(a []any) (any, error) {
	if len(a) != 1 {
		return nil, errNotSure
	}
	switch t := a[0].(type) {
	case undefinedType:
		return undefined, nil
	case nil, bool, string, int64, float64:
		return t, nil
	case []any:
		if len(t) <= 1 {
			return t, nil
		}
		out := make([]any, 0, len(t))
		seen := make(map[any]bool, len(t))
		for _, e := range t {
			var key any
			switch v := e.(type) {
			case nil, bool, string:
				key = v
			case int64:
				key = float64(v)
			case float64:
				key = v
			default:
				return nil, errNotSure
			}
			if !seen[key] {
				seen[key] = true
				out = append(out, e)
			}
		}
		return out, nil
	}
	return nil, errNotSure
}
