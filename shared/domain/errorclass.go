package domain

// ErrorClass says how a workflow treats an error an activity returns. The
// class belongs to the error type (its Class method), so the state
// machine's Retry and Catch lists are checked against the type rather than
// kept by hand.
type ErrorClass string

// Error classes.
const (
	// ErrorRetryable: the world may change by itself (a MAAS or store
	// outage, a lost race). The state machine retries it with backoff;
	// once the retries are spent it needs an operator, because the machine
	// may be mid-flight.
	ErrorRetryable ErrorClass = "retryable"
	// ErrorNeedsOperator: repeating the call cannot help and MAAS may hold
	// a half-done machine; the run ends in manual_intervention and keeps
	// the host locked.
	ErrorNeedsOperator ErrorClass = "needs_operator"
	// ErrorTerminal: repeating cannot help and nothing in MAAS needs an
	// operator (a guardrail refused, a stale execution); the run ends as
	// failed, which frees the host.
	ErrorTerminal ErrorClass = "terminal"
)

// ClassifiedError is an error that carries its class. Every error type an
// activity returns implements it, with a pointer receiver.
type ClassifiedError interface {
	error
	Class() ErrorClass
}
