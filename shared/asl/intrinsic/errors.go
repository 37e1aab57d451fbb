package intrinsic

import "fmt"

// SyntaxError reports an invocation Parse cannot accept: malformed syntax, an
// unknown function name, an open backslash in a string literal, or nesting
// deeper than MaxNesting. The interpreter turns it into a definition
// validation error. Expr is definition text, never execution data, so it is
// safe to print.
type SyntaxError struct {
	Expr   string `json:"expr"`
	Offset int    `json:"offset"` // byte offset in Expr where the problem was found
	Reason string `json:"reason"`
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("invalid intrinsic function call %q at offset %d: %s", e.Expr, e.Offset, e.Reason)
}

// FailureError reports an intrinsic function that could not be evaluated:
// wrong argument count or type, a documented limit exceeded, undecodable
// base64 or JSON, and the like. The interpreter reports it as
// States.IntrinsicFailure. Reason names the argument position and type or
// size, never the argument's value, because values come from execution input.
type FailureError struct {
	Function string `json:"function"` // e.g. "States.ArrayGetItem"
	Reason   string `json:"reason"`
}

func (e *FailureError) Error() string {
	return fmt.Sprintf("%s: %s", e.Function, e.Reason)
}

// fail builds a *FailureError for function name with a formatted reason.
func fail(name, format string, args ...any) *FailureError {
	return &FailureError{Function: name, Reason: fmt.Sprintf(format, args...)}
}
