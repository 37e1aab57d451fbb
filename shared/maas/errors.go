package maas

import "fmt"

// The error types below are the client's answer classes. Their Go type names
// reach the state machines verbatim (aws-lambda-go reports the bare type
// name), so they are unique across the module and never renamed lightly.
// Messages never hold the API key, BMC passwords or user-data.

// BadRequestError is a 400: MAAS refused the parameters or the operation in
// the machine's current state (commission, test and link ops use 400).
type BadRequestError struct {
	Op      string `json:"op"`
	Message string `json:"message"`
}

func (e *BadRequestError) Error() string {
	return fmt.Sprintf("maas %s: bad request: %s", e.Op, e.Message)
}

// UnauthorizedError is a 401: the API key is unknown or revoked.
type UnauthorizedError struct {
	Op string `json:"op"`
}

func (e *UnauthorizedError) Error() string {
	return fmt.Sprintf("maas %s: unauthorized: check the site's API key", e.Op)
}

// ForbiddenError is a 403: not admin, not the owner, or the machine is
// locked. MAAS often sends an empty body.
type ForbiddenError struct {
	Op      string `json:"op"`
	Message string `json:"message"`
}

func (e *ForbiddenError) Error() string {
	return fmt.Sprintf("maas %s: forbidden: %s", e.Op, e.Message)
}

// NotFoundError is a 404.
type NotFoundError struct {
	Op      string `json:"op"`
	Message string `json:"message"`
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("maas %s: not found: %s", e.Op, e.Message)
}

// ConflictError is a 409 state conflict ("Can't deploy a machine that is in
// the 'Failed deployment' state"). RetryAfter is set only for MAAS's DB
// serialisation conflict, the one 409 worth retrying (maas-api §14.13).
type ConflictError struct {
	Op         string `json:"op"`
	Message    string `json:"message"`
	RetryAfter int    `json:"retry_after,omitempty"`
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("maas %s: conflict: %s", e.Op, e.Message)
}

// UnavailableError is a 5xx: no rack controller, BMC unreachable, IP
// exhaustion, RPC timeout. Retryable by the ASL.
type UnavailableError struct {
	Op         string `json:"op"`
	StatusCode int    `json:"status_code"`
	Message    string `json:"message"`
	RetryAfter int    `json:"retry_after,omitempty"`
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("maas %s: unavailable (%d): %s", e.Op, e.StatusCode, e.Message)
}

// TimeoutError is a call that hit its deadline before MAAS answered.
type TimeoutError struct {
	Op string `json:"op"`
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("maas %s: timed out", e.Op)
}

// TransportError is a call that never reached MAAS (DNS, refused, TLS).
type TransportError struct {
	Op      string `json:"op"`
	Message string `json:"message"`
}

func (e *TransportError) Error() string {
	return fmt.Sprintf("maas %s: transport: %s", e.Op, e.Message)
}
