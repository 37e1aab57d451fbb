package intrinsic

import (
	"bytes"
	"encoding/json"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
)

// typeName names a value's JSON type for error messages, which must not
// show the value itself.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case int64, int, float64, json.Number:
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "unsupported value"
}

func wantArgs(name string, args []any, n int) error {
	if len(args) != n {
		return fail(name, "takes %d argument%s, got %d", n, plural(n), len(args))
	}
	return nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func stringArg(name string, args []any, i int) (string, error) {
	s, ok := args[i].(string)
	if !ok {
		return "", fail(name, "argument %d must be a string, got %s", i+1, typeName(args[i]))
	}
	return s, nil
}

func arrayArg(name string, args []any, i int) ([]any, error) {
	a, ok := args[i].([]any)
	if !ok {
		return nil, fail(name, "argument %d must be an array, got %s", i+1, typeName(args[i]))
	}
	return a, nil
}

func objectArg(name string, args []any, i int) (map[string]any, error) {
	m, ok := args[i].(map[string]any)
	if !ok {
		return nil, fail(name, "argument %d must be an object, got %s", i+1, typeName(args[i]))
	}
	return m, nil
}

// intArg reads an integer argument. AWS rounds a non-integer to the nearest
// integer the way Java's Math.round does (half up, so -1.5 becomes -1).
func intArg(name string, args []any, i int) (int64, error) {
	n, ok := toInt(args[i])
	if !ok {
		if typeName(args[i]) == "number" {
			return 0, fail(name, "argument %d is out of the integer range", i+1)
		}
		return 0, fail(name, "argument %d must be an integer, got %s", i+1, typeName(args[i]))
	}
	return n, nil
}

// int32Arg is intArg limited to Java's int range, which AWS documents for
// States.MathAdd and which keeps range arithmetic free of overflow.
func int32Arg(name string, args []any, i int) (int64, error) {
	n, err := intArg(name, args, i)
	if err != nil {
		return 0, err
	}
	if n < math.MinInt32 || n > math.MaxInt32 {
		return 0, fail(name, "argument %d must be between %d and %d", i+1, math.MinInt32, math.MaxInt32)
	}
	return n, nil
}

func toInt(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case int:
		return int64(n), true
	case float64:
		return javaRound(n)
	case json.Number:
		if i, err := n.Int64(); err == nil {
			return i, true
		}
		f, err := n.Float64()
		if err != nil {
			return 0, false
		}
		return javaRound(f)
	}
	return 0, false
}

// javaRound rounds half up (toward positive infinity), as java.lang.Math.round
// does: 2.5 → 3, -2.5 → -2. It reports false for NaN, infinities and values
// outside int64.
func javaRound(f float64) (int64, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	r := math.Floor(f)
	if f-r >= 0.5 {
		r++
	}
	// float64(math.MaxInt64) rounds up to 2^63, which does not fit.
	if r < math.MinInt64 || r >= math.MaxInt64 {
		return 0, false
	}
	return int64(r), true
}

// utf16Len counts characters the way Java's String.length does, which is how
// AWS measures the 10,000-character limits.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// marshalJSON renders v as compact JSON text, as AWS does for
// States.JsonToString ({"Arg1":1,"Arg2":[]}). Object keys are sorted because
// the generic model keeps no key order; HTML characters are not escaped.
func marshalJSON(v any) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(buf.String(), "\n"), nil
}

// appendText renders a value the way AWS's States.Format does (Java's
// toString): strings as they are, null as "null", numbers and booleans as
// JSON, arrays as "[a, b]" and objects as "{k=v, k2=v2}" (AWS recording:
// {"Arg1": 1, "Arg2": []} formats as {Arg1=1, Arg2=[]}). AWS keeps the
// input's key order; the generic model has none, so keys are sorted.
func appendText(sb *strings.Builder, v any) {
	switch x := v.(type) {
	case string:
		sb.WriteString(x)
	case nil:
		sb.WriteString("null")
	case bool:
		sb.WriteString(strconv.FormatBool(x))
	case int64:
		sb.WriteString(strconv.FormatInt(x, 10))
	case int:
		sb.WriteString(strconv.Itoa(x))
	case json.Number:
		sb.WriteString(x.String())
	case []any:
		sb.WriteByte('[')
		for i, item := range x {
			if i > 0 {
				sb.WriteString(", ")
			}
			appendText(sb, item)
		}
		sb.WriteByte(']')
	case map[string]any:
		sb.WriteByte('{')
		for i, k := range sortedKeys(x) {
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString(k)
			sb.WriteByte('=')
			appendText(sb, x[k])
		}
		sb.WriteByte('}')
	default:
		// float64 and anything else: JSON text keeps float formatting
		// identical to what JsonToString and the state output show.
		s, err := marshalJSON(x)
		if err != nil {
			s = "null"
		}
		sb.WriteString(s)
	}
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// equal is JSON equality: same type and value, arrays element by element,
// objects key by key, and numbers by numeric value whatever their Go type,
// so 1 equals 1.0.
func equal(a, b any) bool {
	if an, ok := asFloat(a); ok {
		bn, ok := asFloat(b)
		if !ok {
			return false
		}
		ai, aInt := a.(int64)
		bi, bInt := b.(int64)
		if aInt && bInt {
			return ai == bi
		}
		return an == bn
	}
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case string:
		y, ok := b.(string)
		return ok && x == y
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !equal(xv, yv) {
				return false
			}
		}
		return true
	}
	return false
}

func asFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case float64:
		return n, true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}
