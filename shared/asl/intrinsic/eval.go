package intrinsic

import (
	"crypto/rand"
	"io"
)

// function evaluates one intrinsic with its arguments already evaluated. c is
// the call being evaluated, for the functions that look at how an argument was
// written (States.Format's literal template).
type function func(e *env, c *Call, args []any) (any, error)

// env is what one evaluation needs beyond the arguments.
type env struct {
	resolve func(path string) (any, error)
	entropy io.Reader
}

// Eval evaluates a parsed call. resolve returns the value a JSONPath argument
// ("$.a.b", "$$.Execution.Id", "$" ...) selects; an error from resolve is
// returned unchanged. Arguments are evaluated left to right, nested calls
// first. A function that cannot be evaluated returns a *FailureError.
// States.UUID and an unseeded States.MathRandom draw from crypto/rand.
func (c *Call) Eval(resolve func(path string) (any, error)) (any, error) {
	return c.EvalWith(resolve, rand.Reader)
}

// EvalWith is Eval with an explicit entropy source for States.UUID and an
// unseeded States.MathRandom, so a local run or a test can be made
// reproducible. An error reading entropy is a *FailureError.
func (c *Call) EvalWith(resolve func(path string) (any, error), entropy io.Reader) (any, error) {
	return c.eval(&env{resolve: resolve, entropy: entropy})
}

func (c *Call) eval(e *env) (any, error) {
	args := make([]any, len(c.args))
	for i, a := range c.args {
		switch a.kind {
		case argLiteral:
			args[i] = a.value
		case argPath:
			if e.resolve == nil {
				return nil, fail(c.name, "argument %d is a JSONPath but no resolver was given", i+1)
			}
			v, err := e.resolve(a.path)
			if err != nil {
				return nil, err
			}
			args[i] = v
		case argCall:
			v, err := a.call.eval(e)
			if err != nil {
				return nil, err
			}
			args[i] = v
		}
	}
	return c.fn(e, c, args)
}

// lookup maps a function name to its implementation. A switch rather than a
// package-level map keeps the table immutable.
func lookup(name string) (function, bool) {
	switch name {
	case "States.Format":
		return statesFormat, true
	case "States.StringToJson":
		return stringToJSON, true
	case "States.JsonToString":
		return jsonToString, true
	case "States.Array":
		return array, true
	case "States.ArrayPartition":
		return arrayPartition, true
	case "States.ArrayContains":
		return arrayContains, true
	case "States.ArrayRange":
		return arrayRange, true
	case "States.ArrayGetItem":
		return arrayGetItem, true
	case "States.ArrayLength":
		return arrayLength, true
	case "States.ArrayUnique":
		return arrayUnique, true
	case "States.Base64Encode":
		return base64Encode, true
	case "States.Base64Decode":
		return base64Decode, true
	case "States.Hash":
		return statesHash, true
	case "States.JsonMerge":
		return jsonMerge, true
	case "States.MathRandom":
		return mathRandom, true
	case "States.MathAdd":
		return mathAdd, true
	case "States.StringSplit":
		return stringSplit, true
	case "States.UUID":
		return uuidV4, true
	}
	return nil, false
}
