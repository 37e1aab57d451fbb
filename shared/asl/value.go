package asl

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/ohler55/ojg/oj"
)

// Values flowing through an execution use ojg's generic JSON model: nil,
// bool, int64, float64, string, []any and map[string]any. They are treated
// as immutable once created: every transformation (ResultPath, Parameters)
// builds new containers along the path it changes and shares the rest, so a
// value recorded in the history never changes under it.

// MaxPayloadBytes is AWS's limit on any state, task or execution input or
// output: 256 KiB of UTF-8 JSON text.
const MaxPayloadBytes = 262144

var jsonOptions = &oj.Options{Sort: true}

// jsonWriters keeps ojg writers, and their buffers, between renderings:
// oj.JSON given options builds a new writer with a 1 KiB buffer on every
// call, and the runtime renders a value at nearly every transition.
var jsonWriters = sync.Pool{New: func() any { return &oj.Writer{Options: *jsonOptions} }}

// rawText renders a value as AWS quotes it in a cause: a string as it is,
// anything else as JSON.
func rawText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return toJSON(v)
}

// parseJSON parses JSON text into the generic model.
func parseJSON(b []byte) (any, error) {
	v, err := oj.Parse(b)
	if err != nil {
		return nil, fmt.Errorf("parse JSON: %w", err)
	}
	return v, nil
}

// toJSON renders a value as compact JSON with sorted keys.
func toJSON(v any) string {
	switch t := v.(type) {
	case nil:
		return "null"
	case map[string]any:
		if len(t) == 0 {
			return "{}"
		}
	}
	wr, _ := jsonWriters.Get().(*oj.Writer)
	defer jsonWriters.Put(wr)
	return wr.JSON(v)
}

// jsonSize returns the length in bytes of v's compact JSON text without
// building it, so the 256 KiB limit costs no allocation per transition.
func jsonSize(v any) int {
	switch t := v.(type) {
	case nil:
		return 4
	case bool:
		if t {
			return 4
		}
		return 5
	case int64:
		return intLen(t)
	case int:
		return intLen(int64(t))
	case float64:
		var buf [32]byte
		return len(strconv.AppendFloat(buf[:0], t, 'g', -1, 64))
	case string:
		return stringSize(t)
	case []any:
		n := 2
		for i, e := range t {
			if i > 0 {
				n++
			}
			n += jsonSize(e)
		}
		return n
	case map[string]any:
		n := 2
		first := true
		for k, e := range t {
			if !first {
				n++
			}
			first = false
			n += stringSize(k) + 1 + jsonSize(e)
		}
		return n
	case json.Number:
		return len(t)
	default:
		return len(toJSON(v))
	}
}

func intLen(i int64) int {
	var buf [24]byte
	return len(strconv.AppendInt(buf[:0], i, 10))
}

func stringSize(s string) int {
	n := 2
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t' || c == '\b' || c == '\f':
				n += 2
			case c < 0x20:
				n += 6
			default:
				n++
			}
			i++
			continue
		}
		_, w := utf8.DecodeRuneInString(s[i:])
		n += w
		i += w
	}
	return n
}

// errorOutput is the object a Catch hands to its ResultPath.
func errorOutput(f *failure) map[string]any {
	m := map[string]any{"Error": f.Error}
	if f.HasCause {
		m["Cause"] = f.Cause
	}
	return m
}

// isInteger reports whether v is a JSON number with an integral value, and
// returns it.
func isInteger(v any) (int64, bool) {
	switch t := v.(type) {
	case int64:
		return t, true
	case int:
		return int64(t), true
	case float64:
		if t == math.Trunc(t) && !math.IsInf(t, 0) && math.Abs(t) < 1<<62 {
			return int64(t), true
		}
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return i, true
		}
	}
	return 0, false
}

// toFloat returns a JSON number as float64.
func toFloat(v any) (float64, bool) {
	switch t := v.(type) {
	case int64:
		return float64(t), true
	case int:
		return float64(t), true
	case float64:
		return t, true
	case json.Number:
		f, err := t.Float64()
		return f, err == nil
	}
	return 0, false
}
