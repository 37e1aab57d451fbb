package maas

import "fmt"

// The error types below are the client's answer classes. Their Go type names
// reach the state machines verbatim (aws-lambda-go reports the bare type
// name), so they are unique across the module and never renamed lightly.
// Messages never hold the API key, BMC passwords or user-data: bodies MAAS
// sends back are scrubbed of every secret the call carried and truncated
// before they land in Message.
//
// Op is the MAAS operation ("deploy", "get machine"); SystemID is the machine
// the call was about, empty for collection calls.

// label renders "op" or "op system_id" for error messages.
func label(op, systemID string) string {
	if systemID == "" {
		return op
	}
	return op + " " + systemID
}

// withMessage appends ": msg" when msg is not empty, so an empty MAAS body
// (403s often have one) does not leave a dangling colon.
func withMessage(prefix, msg string) string {
	if msg == "" {
		return prefix
	}
	return prefix + ": " + msg
}

// MAASBadRequestError is a 400: MAAS refused the parameters or the operation in
// the machine's current state (commission, test and link ops use 400). Fields
// holds MAAS's form errors when the body was JSON ({"network": ["Node must be
// configured to use a network"]}, maas-behaviour §3), keyed by field; "__all__" is
// a non-field error.
type MAASBadRequestError struct {
	Op       string              `json:"op"`
	SystemID string              `json:"system_id,omitempty"`
	Message  string              `json:"message"`
	Fields   map[string][]string `json:"fields,omitempty"`
}

func (e *MAASBadRequestError) Error() string {
	return withMessage(fmt.Sprintf("maas %s: bad request", label(e.Op, e.SystemID)), e.Message)
}

// MAASUnauthorizedError is a 401: the API key is unknown or revoked. It carries
// no message because MAAS's 401 body can echo the token key (maas-behaviour §1).
type MAASUnauthorizedError struct {
	Op       string `json:"op"`
	SystemID string `json:"system_id,omitempty"`
}

func (e *MAASUnauthorizedError) Error() string {
	return fmt.Sprintf("maas %s: unauthorized: check the site's API key", label(e.Op, e.SystemID))
}

// MAASForbiddenError is a 403: not admin, not the owner, or the machine is
// locked. MAAS often sends an empty body (maas-behaviour §3).
type MAASForbiddenError struct {
	Op       string `json:"op"`
	SystemID string `json:"system_id,omitempty"`
	Message  string `json:"message"`
}

func (e *MAASForbiddenError) Error() string {
	return withMessage(fmt.Sprintf("maas %s: forbidden", label(e.Op, e.SystemID)), e.Message)
}

// MAASNotFoundError is a 404 (MAAS has no such machine or interface), or a
// missing current script-result set, which MAAS reports as a 400
// (maas-behaviour §12).
type MAASNotFoundError struct {
	Op       string `json:"op"`
	SystemID string `json:"system_id,omitempty"`
	Message  string `json:"message"`
}

func (e *MAASNotFoundError) Error() string {
	return withMessage(fmt.Sprintf("maas %s: not found", label(e.Op, e.SystemID)), e.Message)
}

// MAASConflictError is a 409 state conflict ("Can't deploy a machine that is
// in the 'Failed deployment' state"). MAAS's database serialisation conflict,
// a 409 with Retry-After, is a MAASUnavailableError instead (maas-behaviour
// §3, §14.13); the client itself never retries.
type MAASConflictError struct {
	Op       string `json:"op"`
	SystemID string `json:"system_id,omitempty"`
	Message  string `json:"message"`
}

func (e *MAASConflictError) Error() string {
	return withMessage(fmt.Sprintf("maas %s: conflict", label(e.Op, e.SystemID)), e.Message)
}

// MAASUnavailableError is a 5xx (or a 429 from a proxy in front of MAAS): no
// rack controller, BMC unreachable, IP exhaustion, RPC timeout; or MAAS's
// database-conflict 409, which carries Retry-After. Retryable by the ASL.
// RetryAfter (seconds) is what MAAS asked for, when it did.
type MAASUnavailableError struct {
	Op         string `json:"op"`
	SystemID   string `json:"system_id,omitempty"`
	StatusCode int    `json:"status_code"`
	Message    string `json:"message"`
	RetryAfter int    `json:"retry_after,omitempty"`
}

func (e *MAASUnavailableError) Error() string {
	msg := withMessage(fmt.Sprintf("maas %s: unavailable (%d)", label(e.Op, e.SystemID), e.StatusCode), e.Message)
	if e.RetryAfter > 0 {
		msg += fmt.Sprintf(" (retry after %ds)", e.RetryAfter)
	}
	return msg
}

// MAASTimeoutError is a call that hit its deadline before MAAS answered. It
// unwraps to context.DeadlineExceeded when the context's deadline fired.
type MAASTimeoutError struct {
	Op       string `json:"op"`
	SystemID string `json:"system_id,omitempty"`
	cause    error
}

func (e *MAASTimeoutError) Error() string {
	return fmt.Sprintf("maas %s: timed out", label(e.Op, e.SystemID))
}

// Unwrap returns the context error or the transport's timeout, if any.
func (e *MAASTimeoutError) Unwrap() error { return e.cause }

// MAASTransportError is a call that never reached MAAS or lost its answer
// (DNS, refused, TLS, connection reset, caller cancelled). It unwraps to
// context.Canceled when the caller cancelled.
type MAASTransportError struct {
	Op       string `json:"op"`
	SystemID string `json:"system_id,omitempty"`
	Message  string `json:"message"`
	cause    error
}

func (e *MAASTransportError) Error() string {
	return withMessage(fmt.Sprintf("maas %s: transport", label(e.Op, e.SystemID)), e.Message)
}

// Unwrap returns the underlying cause, for errors.Is(err, context.Canceled).
func (e *MAASTransportError) Unwrap() error { return e.cause }

// MAASUnexpectedResponseError is an answer that fits no other class: a redirect
// (wrong base URL; MAAS paths end with "/", maas-behaviour §1), 405, 410 (API 1.0),
// another unexpected status, or a 2xx body that is not the JSON the operation
// returns (often a proxy's HTML page). It is terminal: repeating the call
// will not change it.
type MAASUnexpectedResponseError struct {
	Op         string `json:"op"`
	SystemID   string `json:"system_id,omitempty"`
	StatusCode int    `json:"status_code"`
	Message    string `json:"message"`
}

func (e *MAASUnexpectedResponseError) Error() string {
	return withMessage(fmt.Sprintf("maas %s: unexpected response (%d)", label(e.Op, e.SystemID), e.StatusCode), e.Message)
}
