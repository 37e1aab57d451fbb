package store

import "fmt"

// ItemNotFoundError: no record of that kind and id.
type ItemNotFoundError struct {
	Kind string `json:"kind"`
	ID   string `json:"id"`
}

func (e *ItemNotFoundError) Error() string { return fmt.Sprintf("%s %s not found", e.Kind, e.ID) }

// ItemConflictError: a create hit an existing record, or an update lost an
// optimistic-concurrency race more times than the store retries.
type ItemConflictError struct {
	Kind   string `json:"kind"`
	ID     string `json:"id"`
	Reason string `json:"reason"`
}

func (e *ItemConflictError) Error() string {
	return fmt.Sprintf("%s %s: conflict: %s", e.Kind, e.ID, e.Reason)
}

// OpenOnboardingExistsError: the server already has an open onboarding.
// Identity and Value say which of its identities is taken when it is not
// the host name (LockBMC, LockPXEMAC, LockMachine); Hostname is then the
// holder's.
type OpenOnboardingExistsError struct {
	SiteID       string `json:"site_id"`
	Hostname     string `json:"hostname"`
	OnboardingID string `json:"onboarding_id"`
	Identity     string `json:"identity,omitempty"`
	Value        string `json:"value,omitempty"`
}

func (e *OpenOnboardingExistsError) Error() string {
	if e.Identity != "" {
		return fmt.Sprintf("the server with %s %s on site %s already has open onboarding %s (host %s)", e.Identity, e.Value, e.SiteID, e.OnboardingID, e.Hostname)
	}
	return fmt.Sprintf("host %s on site %s already has open onboarding %s", e.Hostname, e.SiteID, e.OnboardingID)
}

// Token rejection reasons.
const (
	TokenUnknown   = "unknown"
	TokenConsumed  = "consumed"
	TokenExpired   = "expired"
	TokenWrongNode = "wrong_node"
	// TokenRevoked: a newer token for the node superseded this one.
	TokenRevoked = "revoked"
	// TokenWorkflowClosed: the onboarding the token was issued for is
	// closed (cancelled, failed) or waits for an operator.
	TokenWorkflowClosed = "workflow_closed"
	// TokenStaleAttempt: the onboarding started another attempt since the
	// token was issued.
	TokenStaleAttempt = "stale_attempt"
)

// TokenRejectedError: an enrollment token was not accepted. Reason is one of
// the Token* constants; the token itself never appears.
type TokenRejectedError struct {
	Reason string `json:"reason"`
	// OnboardingID and Attempt name the run the token was issued for, when
	// known; FirstRefusal is set on the first refusal of a known token for
	// a closed or superseded run, so a caller notes it once on the
	// onboarding's timeline however often the node tries.
	OnboardingID string `json:"onboarding_id,omitempty"`
	Attempt      int    `json:"attempt,omitempty"`
	FirstRefusal bool   `json:"first_refusal,omitempty"`
}

func (e *TokenRejectedError) Error() string { return "enrollment token rejected: " + e.Reason }

// InvalidRecordError: a record cannot be stored as given (a key field is
// empty or holds a character keys reserve). Field is the JSON name, with
// the index for bulk writes (items[3].interface).
type InvalidRecordError struct {
	Kind   string `json:"kind"`
	Field  string `json:"field"`
	Reason string `json:"reason"`
}

func (e *InvalidRecordError) Error() string {
	return fmt.Sprintf("invalid %s: %s %s", e.Kind, e.Field, e.Reason)
}

// InvalidCursorError: a pagination cursor is malformed or belongs to another
// listing (another filter).
type InvalidCursorError struct {
	Reason string `json:"reason"`
}

func (e *InvalidCursorError) Error() string { return "invalid cursor: " + e.Reason }
