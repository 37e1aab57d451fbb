package store

import (
	"sync/atomic"
	"time"

	"github.com/maasflow/maasflow/shared/domain"
)

// The package's public contract is spread over one file per record kind
// (sites.go, profiles.go, roce.go, skus.go, nodes.go, onboardings.go,
// timeline.go, tokens.go, audit.go) plus schema.go for the table (what infra
// imports), codec.go for keys and items, reads.go and writes.go for the
// calls every kind shares. Every method takes ctx first and returns the
// typed errors in errors.go.

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

// updateAttempts bounds the read-mutate-write loop of every UpdateX: past
// it the caller gets an ItemConflictError instead of spinning under contention.
const updateAttempts = 5

// Store is the DynamoDB-backed read-model repository.
type Store struct {
	db    DynamoDB
	table string
	now   func() time.Time
	// seq numbers the timeline rows this Store writes, so rows written with
	// the same timestamp keep their order.
	seq atomic.Uint64
	// recent lets an update skip the read a get just made (recent.go).
	recent recentItems
}

// New returns a Store over table, using now for timestamps (the clock's
// Now). An empty table means DefaultTable; a nil now means time.Now.
func New(db DynamoDB, table string, now func() time.Time) *Store {
	if table == "" {
		table = DefaultTable
	}
	if now == nil {
		now = time.Now
	}
	// Every write goes through auditingDB, so a request's pending audit
	// entry rides its first write (audit_pending.go).
	return &Store{db: auditingDB{DynamoDB: db, table: table}, table: table, now: now}
}
