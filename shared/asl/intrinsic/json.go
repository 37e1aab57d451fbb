package intrinsic

import (
	"encoding/json"
	"errors"
	"io"
	"maps"
	"strconv"
	"strings"
)

// stringToJSON implements States.StringToJson(string): the parsed JSON
// value. An empty or blank string gives null (AWS recording). Parsing is
// strict RFC 8259 (no comments, no trailing text). Numbers follow the ojg
// model: int64 when written without fraction or exponent and in range,
// float64 otherwise; a number beyond float64 is an error.
func stringToJSON(_ *env, _ *Call, args []any) (any, error) {
	const name = "States.StringToJson"
	if err := wantArgs(name, args, 1); err != nil {
		return nil, err
	}
	s, err := stringArg(name, args, 0)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(s) == "" {
		return nil, nil //nolint:nilnil // JSON null is the result: AWS returns null for a blank string
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		// The decoder's message quotes the input, which may be secret.
		return nil, fail(name, "argument 1 is not valid JSON text")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fail(name, "argument 1 is not valid JSON text: it continues after the first value")
	}
	v, ok := fromJSONNumbers(v)
	if !ok {
		return nil, fail(name, "argument 1 holds a number out of range")
	}
	return v, nil
}

// fromJSONNumbers replaces the decoder's json.Number values with int64 or
// float64, in place, and reports false for a number float64 cannot hold.
func fromJSONNumbers(v any) (any, bool) {
	switch x := v.(type) {
	case json.Number:
		text := x.String()
		if !strings.ContainsAny(text, ".eE") {
			if i, err := strconv.ParseInt(text, 10, 64); err == nil {
				return i, true
			}
		}
		f, err := strconv.ParseFloat(text, 64)
		return f, err == nil
	case []any:
		for i, item := range x {
			n, ok := fromJSONNumbers(item)
			if !ok {
				return nil, false
			}
			x[i] = n
		}
	case map[string]any:
		for k, item := range x {
			n, ok := fromJSONNumbers(item)
			if !ok {
				return nil, false
			}
			x[k] = n
		}
	}
	return v, true
}

// jsonToString implements States.JsonToString(value): compact JSON text
// ({"Arg1":1,"Arg2":[]}, AWS recording) with object keys sorted.
func jsonToString(_ *env, _ *Call, args []any) (any, error) {
	const name = "States.JsonToString"
	if err := wantArgs(name, args, 1); err != nil {
		return nil, err
	}
	s, err := marshalJSON(args[0])
	if err != nil {
		return nil, fail(name, "argument 1 cannot be written as JSON: %s", typeName(args[0]))
	}
	return s, nil
}

// jsonMerge implements States.JsonMerge(object, object, false): a shallow
// merge where the second object's keys win. AWS supports only the shallow
// mode, so the third argument must be the boolean false.
func jsonMerge(_ *env, _ *Call, args []any) (any, error) {
	const name = "States.JsonMerge"
	if err := wantArgs(name, args, 3); err != nil {
		return nil, err
	}
	first, err := objectArg(name, args, 0)
	if err != nil {
		return nil, err
	}
	second, err := objectArg(name, args, 1)
	if err != nil {
		return nil, err
	}
	deep, ok := args[2].(bool)
	if !ok {
		return nil, fail(name, "argument 3 must be the boolean false, got %s", typeName(args[2]))
	}
	if deep {
		return nil, fail(name, "only the shallow merge is supported: argument 3 must be false")
	}
	out := make(map[string]any, len(first)+len(second))
	maps.Copy(out, first)
	maps.Copy(out, second)
	return out, nil
}
