package jsonata

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	mrand "math/rand/v2"
	"reflect"

	"github.com/blues/jsonata-go/jtypes"

	"github.com/maasflow/maasflow/shared/asl/intrinsic"
)

// fn is one function Step Functions adds to JSONata. It implements the
// library's Callable, so it can be bound like a variable for one
// evaluation (with that evaluation's entropy).
type fn struct {
	name   string
	params int
	call   func(args []reflect.Value) (any, error)
}

func (f *fn) Name() string    { return f.name }
func (f *fn) ParamCount() int { return f.params }

func (f *fn) Call(args []reflect.Value) (reflect.Value, error) {
	v, err := f.call(args)
	if err != nil {
		return reflect.Value{}, fmt.Errorf("$%s: %w", f.name, err)
	}
	if v == nil {
		// JSON null is the library's nil *interface{}; an invalid Value
		// would be undefined.
		return reflect.ValueOf((*any)(nil)), nil
	}
	return reflect.ValueOf(v), nil
}

// Function names Step Functions adds; $random replaces JSONata's own.
var stepFunctionsNames = []string{"partition", "range", "hash", "random", "uuid", "parse"}

func isStepFunctionsFunction(name string) bool {
	for _, n := range stepFunctionsNames {
		if n == name {
			return true
		}
	}
	return false
}

// pure are the functions that need no entropy, built once.
var pure = map[string]*fn{
	"partition": {name: "partition", params: 2, call: partition},
	"range":     {name: "range", params: 3, call: rangeFn},
	"hash":      {name: "hash", params: 2, call: hashFn},
	"parse":     {name: "parse", params: 1, call: parse},
}

// functions returns the Step Functions functions bound for one evaluation.
func functions(env Env) map[string]any {
	entropy := env.Entropy
	if entropy == nil {
		entropy = rand.Reader
	}
	out := make(map[string]any, len(stepFunctionsNames))
	for k, f := range pure {
		out[k] = f
	}
	out["random"] = &fn{name: "random", params: 1, call: func(args []reflect.Value) (any, error) { return random(entropy, args) }}
	out["uuid"] = &fn{name: "uuid", params: 0, call: func(args []reflect.Value) (any, error) { return uuid(entropy, args) }}
	return out
}

func arg(args []reflect.Value, i int) (any, bool) {
	if i >= len(args) {
		return nil, false
	}
	v := jtypes.Resolve(args[i])
	if !v.IsValid() {
		return nil, false
	}
	return v.Interface(), true
}

func number(args []reflect.Value, i int, what string) (float64, error) {
	if i < len(args) {
		if n, ok := jtypes.AsNumber(args[i]); ok {
			return n, nil
		}
	}
	return 0, fmt.Errorf("the %s must be a number", what)
}

func integer(args []reflect.Value, i int, what string) (int64, error) {
	n, err := number(args, i, what)
	if err != nil || n != math.Trunc(n) {
		return 0, fmt.Errorf("the %s must be an integer", what)
	}
	return int64(n), nil
}

// partition implements $partition(array, size): the array cut into arrays
// of size items, the last one shorter when the items run out.
func partition(args []reflect.Value) (any, error) {
	if len(args) != 2 {
		return nil, errors.New("takes 2 arguments: an array and a chunk size")
	}
	v := jtypes.Resolve(args[0])
	if !jtypes.IsArray(v) {
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
	for i := 0; i < v.Len(); i += int(size) {
		end := min(i+int(size), v.Len())
		chunk := make([]any, 0, end-i)
		for j := i; j < end; j++ {
			chunk = append(chunk, v.Index(j).Interface())
		}
		out = append(out, chunk)
	}
	return out, nil
}

// maxRange is the most items $range returns, as States.ArrayRange allows.
const maxRange = 1000

// rangeFn implements $range(start, end, step): start, start+step, … up to
// and including end.
func rangeFn(args []reflect.Value) (any, error) {
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
		out = append(out, float64(i))
	}
	return out, nil
}

// hashFn implements $hash(data, algorithm): the lower-case hex digest.
func hashFn(args []reflect.Value) (any, error) {
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
func random(entropy io.Reader, args []reflect.Value) (any, error) {
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
func uuid(entropy io.Reader, args []reflect.Value) (any, error) {
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
func parse(args []reflect.Value) (any, error) {
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
