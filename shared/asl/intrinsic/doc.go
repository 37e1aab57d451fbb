// Package intrinsic parses and evaluates the Amazon States Language intrinsic
// functions of JSONPath states: States.Format, StringToJson, JsonToString,
// Array, ArrayPartition, ArrayContains, ArrayRange, ArrayGetItem, ArrayLength,
// ArrayUnique, Base64Encode, Base64Decode, Hash, JsonMerge, MathRandom,
// MathAdd, StringSplit and UUID.
//
// It owns the invocation grammar (string literals with their backslash
// escapes, numbers, booleans, null, JSONPath arguments, nested calls up to
// MaxNesting levels), the functions and their documented limits. Parse runs
// when a definition is validated and reports a *SyntaxError; Eval runs when a
// state executes and reports a *FailureError, which the interpreter surfaces
// as States.IntrinsicFailure. Resolving a JSONPath ("$.a", "$$.Execution.Id")
// belongs to the caller, through the resolve function given to Eval.
//
// Values follow the generic JSON model of github.com/ohler55/ojg: nil, bool,
// int64, float64, string, []any and map[string]any. Results may share
// structure with the values resolve returned, so callers treat them as
// immutable or copy them before writing.
//
// Error text never echoes argument values, because they come from execution
// input that can hold secrets; it names the function, the argument position
// and the offending type or size instead.
//
// It must not import the asl package, any AWS package, or do I/O beyond
// reading the entropy source it is given.
package intrinsic
