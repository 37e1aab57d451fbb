package jsonata

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	mrand "math/rand/v2"
	"unicode/utf8"

	"github.com/dop251/goja"

	"github.com/maasflow/maasflow/shared/asl/intrinsic"
)

// sfFunction is one function Step Functions adds to JSONata, on the JSON
// model's values; entropy feeds $random and $uuid.
type sfFunction func(entropy io.Reader, args []any) (any, error)

// Function names Step Functions adds; $random replaces JSONata's own.
// "eval" is bound to nothing, so that a call fails as on AWS ("T1006:
// Attempted to invoke a non-function").
var stepFunctions = map[string]sfFunction{
	"partition": func(_ io.Reader, a []any) (any, error) { return partition(a) },
	"range":     func(_ io.Reader, a []any) (any, error) { return rangeFn(a) },
	"hash":      func(_ io.Reader, a []any) (any, error) { return hashFn(a) },
	"parse":     func(_ io.Reader, a []any) (any, error) { return parse(a) },
	"random":    random,
	"uuid":      uuid,
	"eval":      nil,
	// jsonata's own $base64encode and $base64decode call a browser's
	// btoa/atob or Node's Buffer, neither of which the embedded
	// interpreter has ("Cannot read property 'from' of undefined"), so
	// they are given here, on the text's UTF-8 bytes.
	"base64encode": func(_ io.Reader, a []any) (any, error) { return base64Encode(a) },
	"base64decode": func(_ io.Reader, a []any) (any, error) { return base64Decode(a) },
}

// base64Encode is $base64encode: the standard, padded encoding of the
// string's UTF-8 bytes; no argument is undefined.
func base64Encode(a []any) (any, error) {
	if len(a) == 0 {
		return undefined, nil
	}
	s, ok := a[0].(string)
	if len(a) > 1 || !ok {
		return nil, errors.New("takes one string")
	}
	return base64.StdEncoding.EncodeToString([]byte(s)), nil
}

// base64Decode is $base64decode: the text whose UTF-8 bytes the string
// encodes.
func base64Decode(a []any) (any, error) {
	if len(a) == 0 {
		return undefined, nil
	}
	s, ok := a[0].(string)
	if len(a) > 1 || !ok {
		return nil, errors.New("takes one string")
	}
	// The failure names the argument, never its value: an encoded value
	// may be a credential, and the cause lands in the execution's history.
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, errors.New("the argument is not base64")
	}
	if !utf8.Valid(b) {
		return nil, errors.New("the argument does not encode UTF-8 text")
	}
	return string(b), nil
}

// entropyOrCrypto is an evaluation's entropy: crypto/rand unless the
// caller gives its own.
func entropyOrCrypto(r io.Reader) io.Reader {
	if r == nil {
		return rand.Reader
	}
	return r
}

// callStepFunction calls a Step Functions function with arguments as
// jsonata passes them (an undefined argument ends the list); a failure is
// worded the same whichever path calls it.
func callStepFunction(name string, f sfFunction, entropy io.Reader, args []any) (any, error) {
	for i, a := range args {
		if isUndefined(a) {
			args = args[:i]
			break
		}
	}
	v, err := f(entropyOrCrypto(entropy), args)
	if err != nil {
		return nil, &Error{Message: fmt.Sprintf("$%s: %v", name, err)}
	}
	return v, nil
}

// stepFunctionsFunctions makes the interpreter's functions, once per
// interpreter. A failure is thrown as jsonata throws its own errors, an
// object with a message, naming the function.
func stepFunctionsFunctions(m *vm) map[string]goja.Value {
	out := make(map[string]goja.Value, len(stepFunctions))
	for name, f := range stepFunctions {
		if f == nil {
			out[name] = goja.Undefined()
			continue
		}
		out[name] = m.rt.ToValue(func(call goja.FunctionCall) goja.Value {
			args := make([]any, len(call.Arguments))
			for i, a := range call.Arguments {
				if goja.IsUndefined(a) {
					args[i] = undefined
					continue
				}
				v, err := fromJSValue(a)
				if err != nil {
					panic(m.rt.ToValue(map[string]any{"message": fmt.Sprintf("$%s: argument %d is not JSON", name, i+1)}))
				}
				args[i] = v
			}
			v, err := callStepFunction(name, f, m.entropy, args)
			if err != nil {
				panic(m.rt.ToValue(map[string]any{"message": err.Error()}))
			}
			return toJS(m.rt, v)
		})
	}
	return out
}

func arg(args []any, i int) (any, bool) {
	if i >= len(args) {
		return nil, false
	}
	return args[i], true
}

func number(args []any, i int, what string) (float64, error) {
	if i < len(args) {
		switch n := args[i].(type) {
		case int64:
			return float64(n), nil
		case float64:
			return n, nil
		}
	}
	return 0, fmt.Errorf("the %s must be a number", what)
}

func integer(args []any, i int, what string) (int64, error) {
	n, err := number(args, i, what)
	if err != nil || n != math.Trunc(n) {
		return 0, fmt.Errorf("the %s must be an integer", what)
	}
	return int64(n), nil
}

// partition implements $partition(array, size): the array cut into arrays
// of size items, the last one shorter when the items run out.
func partition(args []any) (any, error) {
	if len(args) != 2 {
		return nil, errors.New("takes 2 arguments: an array and a chunk size")
	}
	v, isArray := args[0].([]any)
	if !isArray {
		return nil, errors.New("the first argument must be an array")
	}
	size, err := integer(args, 1, "chunk size")
	if err != nil {
		return nil, err
	}
	if size <= 0 {
		return nil, errors.New("the chunk size must be a positive integer")
	}
	out := []any{}
	for i := 0; i < len(v); i += int(size) {
		end := min(i+int(size), len(v))
		out = append(out, append([]any(nil), v[i:end]...))
	}
	return out, nil
}

// maxRange is the most items $range returns, as States.ArrayRange allows.
const maxRange = 1000

// rangeFn implements $range(start, end, step): start, start+step, … up to
// and including end.
func rangeFn(args []any) (any, error) {
	if len(args) != 3 {
		return nil, errors.New("takes 3 arguments: start, end and step")
	}
	start, err := integer(args, 0, "start")
	if err != nil {
		return nil, err
	}
	end, err := integer(args, 1, "end")
	if err != nil {
		return nil, err
	}
	step, err := integer(args, 2, "step")
	if err != nil {
		return nil, err
	}
	if step == 0 {
		return nil, errors.New("the step must not be 0")
	}
	out := []any{}
	for i := start; (step > 0 && i <= end) || (step < 0 && i >= end); i += step {
		if len(out) == maxRange {
			return nil, fmt.Errorf("the range has more than %d items", maxRange)
		}
		out = append(out, i)
	}
	return out, nil
}

// hashFn implements $hash(data, algorithm): the lower-case hex digest.
func hashFn(args []any) (any, error) {
	if len(args) != 2 {
		return nil, errors.New("takes 2 arguments: the data and the algorithm")
	}
	data, ok := arg(args, 0)
	s, isStr := data.(string)
	if !ok || !isStr {
		return nil, errors.New("the data must be a string")
	}
	alg, _ := arg(args, 1)
	name, _ := alg.(string)
	digest, ok := intrinsic.Digest(s, name)
	if !ok {
		return nil, fmt.Errorf("the algorithm must be one of MD5, SHA-1, SHA-256, SHA-384, SHA-512, not %v", alg)
	}
	return digest, nil
}

// random implements $random([seed]): a uniform number in [0,1); with a
// seed, the same seed gives the same number.
func random(entropy io.Reader, args []any) (any, error) {
	if len(args) > 1 {
		return nil, errors.New("takes at most 1 argument: the seed")
	}
	if len(args) == 1 {
		seed, err := integer(args, 0, "seed")
		if err != nil {
			return nil, err
		}
		return mrand.New(mrand.NewPCG(uint64(seed), 0)).Float64(), nil //nolint:gosec // a seeded draw must be reproducible
	}
	var b [8]byte
	if _, err := io.ReadFull(entropy, b[:]); err != nil {
		return nil, err
	}
	return float64(binary.BigEndian.Uint64(b[:])>>11) / (1 << 53), nil
}

// uuid implements $uuid(): a random version 4 UUID.
func uuid(entropy io.Reader, args []any) (any, error) {
	if len(args) != 0 {
		return nil, errors.New("takes no arguments")
	}
	var b [16]byte
	if _, err := io.ReadFull(entropy, b[:]); err != nil {
		return nil, err
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:], nil
}

// parse implements $parse(text): the JSON value a string holds.
func parse(args []any) (any, error) {
	if len(args) != 1 {
		return nil, errors.New("takes 1 argument: a JSON string")
	}
	data, _ := arg(args, 0)
	s, ok := data.(string)
	if !ok {
		return nil, errors.New("the argument must be a string")
	}
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return nil, fmt.Errorf("the argument is not JSON: %w", err)
	}
	return v, nil
}
