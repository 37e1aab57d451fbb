package store

import "github.com/maasflow/maasflow/shared/domain"

// The package's public contract is spread over one file per record kind
// (sites.go, profiles.go, roce.go, skus.go, nodes.go, onboardings.go,
// timeline.go, tokens.go, audit.go) plus table.go for the schema. Every
// method takes ctx first and returns the typed errors in errors.go.

// OnboardingFilter selects onboardings for listing. At most one of Status,
// SiteID and Hostname picks the index; the others filter. Limit defaults to
// 50 (max 200). Cursor is the opaque NextCursor of the previous page.
type OnboardingFilter struct {
	Status   domain.OnboardingStatus
	SiteID   string
	Hostname string
	Limit    int
	Cursor   string
}

// OnboardingPage is one page of onboardings, newest first.
type OnboardingPage struct {
	Items      []domain.Onboarding `json:"items"`
	NextCursor string              `json:"next_cursor,omitempty"`
}

// Mutator changes a record in place inside UpdateX; returning an error aborts
// the update and the error is returned unchanged. UpdateX may call it more
// than once (once per optimistic-concurrency attempt, each time on a fresh
// copy), so it must not have side effects beyond the record.
type Mutator[T any] func(*T) error
