package store

import (
	"context"
	"errors"
	"time"

	"github.com/maasflow/maasflow/shared/domain"
)

// This file is the package's public contract. Implementations live in the
// per-record files; every method takes ctx first and returns the typed
// errors in errors.go.

var errNotImplemented = errors.New("store: not implemented")

// OnboardingFilter selects onboardings for listing. At most one of Status,
// SiteID and Hostname picks the index; the others filter. Limit defaults to
// 50 (max 200). Cursor is the opaque NextCursor of the previous page.
type OnboardingFilter struct {
	Status   string
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
// the update and the error is returned unchanged.
type Mutator[T any] func(*T) error

var _ = time.Now
var _ = context.Background

// DynamoDB is the part of the DynamoDB client the store calls; both
// *dynamodb.Client and minidyn's client satisfy it.
type DynamoDB interface{}

// Store is the DynamoDB-backed read-model repository.
type Store struct{}

// New returns a Store over table, using clock for timestamps.
func New(db DynamoDB, table string, now func() time.Time) *Store { return &Store{} }

// CreateTable creates the table and its indexes (local mode and tests).
// Creating a table that exists is a no-op.
func CreateTable(ctx context.Context, db DynamoDB, table string) error { return errNotImplemented }

// --- sites: names are unique (ConflictError on a duplicate name).

func (s *Store) CreateSite(ctx context.Context, site domain.Site) error { return errNotImplemented }
func (s *Store) GetSite(ctx context.Context, id string) (domain.Site, error) {
	return domain.Site{}, errNotImplemented
}
func (s *Store) ListSites(ctx context.Context) ([]domain.Site, error) { return nil, errNotImplemented }
func (s *Store) UpdateSite(ctx context.Context, id string, mutate Mutator[domain.Site]) (domain.Site, error) {
	return domain.Site{}, errNotImplemented
}

// --- profiles, under a site.

func (s *Store) CreateProfile(ctx context.Context, p domain.Profile) error { return errNotImplemented }
func (s *Store) GetProfile(ctx context.Context, siteID, id string) (domain.Profile, error) {
	return domain.Profile{}, errNotImplemented
}
func (s *Store) ListProfiles(ctx context.Context, siteID string) ([]domain.Profile, error) {
	return nil, errNotImplemented
}
func (s *Store) UpdateProfile(ctx context.Context, siteID, id string, mutate Mutator[domain.Profile]) (domain.Profile, error) {
	return domain.Profile{}, errNotImplemented
}

// --- RoCE assignments: the id is derived from (hostname, interface), so a
// repeated upsert of the same row updates it. Upsert is all-or-nothing.

func (s *Store) UpsertRoCEAssignments(ctx context.Context, siteID string, items []domain.RoCEAssignment) ([]domain.RoCEAssignment, error) {
	return nil, errNotImplemented
}

// ListRoCEAssignments lists a site's rows; hostname "" means every host.
func (s *Store) ListRoCEAssignments(ctx context.Context, siteID, hostname string) ([]domain.RoCEAssignment, error) {
	return nil, errNotImplemented
}
func (s *Store) DeleteRoCEAssignment(ctx context.Context, siteID, id string) error {
	return errNotImplemented
}

// --- SKUs.

func (s *Store) CreateSKU(ctx context.Context, sku domain.SKU) error { return errNotImplemented }
func (s *Store) GetSKU(ctx context.Context, id string) (domain.SKU, error) {
	return domain.SKU{}, errNotImplemented
}
func (s *Store) ListSKUs(ctx context.Context) ([]domain.SKU, error) { return nil, errNotImplemented }
func (s *Store) UpdateSKU(ctx context.Context, id string, mutate Mutator[domain.SKU]) (domain.SKU, error) {
	return domain.SKU{}, errNotImplemented
}

// --- nodes: one node per (site, hostname).

func (s *Store) CreateNode(ctx context.Context, n domain.Node) error { return errNotImplemented }
func (s *Store) GetNode(ctx context.Context, id string) (domain.Node, error) {
	return domain.Node{}, errNotImplemented
}

// FindNodeByHost returns the site's node for hostname; found is false when
// there is none.
func (s *Store) FindNodeByHost(ctx context.Context, siteID, hostname string) (n domain.Node, found bool, err error) {
	return domain.Node{}, false, errNotImplemented
}
func (s *Store) UpdateNode(ctx context.Context, id string, mutate Mutator[domain.Node]) (domain.Node, error) {
	return domain.Node{}, errNotImplemented
}

// --- onboardings.

// CreateOnboarding writes the onboarding and takes its host lock in one
// transaction: OpenOnboardingExistsError when (site, hostname) has an open one.
func (s *Store) CreateOnboarding(ctx context.Context, o domain.Onboarding) error {
	return errNotImplemented
}
func (s *Store) GetOnboarding(ctx context.Context, id string) (domain.Onboarding, error) {
	return domain.Onboarding{}, errNotImplemented
}
func (s *Store) ListOnboardings(ctx context.Context, f OnboardingFilter) (OnboardingPage, error) {
	return OnboardingPage{}, errNotImplemented
}

// UpdateOnboarding applies mutate under the record's version. When the
// status moves from open to closed the host lock is released in the same
// transaction; closed to open takes it again (OpenOnboardingExistsError if
// another onboarding took it meanwhile).
func (s *Store) UpdateOnboarding(ctx context.Context, id string, mutate Mutator[domain.Onboarding]) (domain.Onboarding, error) {
	return domain.Onboarding{}, errNotImplemented
}

// AppendOnboardingEvents adds timeline rows. Rows with a MAASEventID are
// written at most once per onboarding, so copying MAAS events is repeatable.
func (s *Store) AppendOnboardingEvents(ctx context.Context, events ...domain.OnboardingEvent) error {
	return errNotImplemented
}

// ListOnboardingEvents returns the timeline in order.
func (s *Store) ListOnboardingEvents(ctx context.Context, onboardingID string) ([]domain.OnboardingEvent, error) {
	return nil, errNotImplemented
}

// --- enrollment tokens (hash only).

func (s *Store) PutEnrollmentToken(ctx context.Context, t domain.EnrollmentToken) error {
	return errNotImplemented
}

// ConsumeEnrollmentToken marks the token consumed in one conditional write:
// TokenRejectedError with TokenUnknown, TokenConsumed, TokenExpired (at now)
// or TokenWrongNode. A second call with the same hash is TokenConsumed.
func (s *Store) ConsumeEnrollmentToken(ctx context.Context, hash, nodeID string, now time.Time) (domain.EnrollmentToken, error) {
	return domain.EnrollmentToken{}, errNotImplemented
}

// --- audit trail, newest first.

func (s *Store) AppendAudit(ctx context.Context, e domain.AuditEntry) error { return errNotImplemented }
func (s *Store) ListAudit(ctx context.Context, limit int) ([]domain.AuditEntry, error) {
	return nil, errNotImplemented
}
