package api

import (
	"context"
	"net/http"
	"time"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
	"github.com/maasflow/maasflow/shared/store"
)

// The store ports: each lists only the repository methods the handlers call.
// *store.Store satisfies all of them.

// SiteReader reads sites.
type SiteReader interface {
	GetSite(ctx context.Context, id string) (domain.Site, error)
	ListSites(ctx context.Context) ([]domain.Site, error)
}

// SiteWriter creates and updates sites.
type SiteWriter interface {
	CreateSite(ctx context.Context, site domain.Site) error
	UpdateSite(ctx context.Context, id string, mutate store.Mutator[domain.Site]) (domain.Site, error)
}

// ProfileReader reads a site's profiles.
type ProfileReader interface {
	GetProfile(ctx context.Context, siteID, id string) (domain.Profile, error)
	ListProfiles(ctx context.Context, siteID string) ([]domain.Profile, error)
}

// ProfileWriter creates and updates profiles.
type ProfileWriter interface {
	CreateProfile(ctx context.Context, p domain.Profile) error
	UpdateProfile(ctx context.Context, siteID, id string, mutate store.Mutator[domain.Profile]) (domain.Profile, error)
}

// RoCERepository keeps a site's RoCE assignment rows.
type RoCERepository interface {
	UpsertRoCEAssignments(ctx context.Context, siteID string, items []domain.RoCEAssignment) ([]domain.RoCEAssignment, error)
	ListRoCEAssignments(ctx context.Context, siteID, hostname string) ([]domain.RoCEAssignment, error)
	DeleteRoCEAssignment(ctx context.Context, siteID, id string) error
}

// SKUReader reads the SKU catalog.
type SKUReader interface {
	GetSKU(ctx context.Context, id string) (domain.SKU, error)
	ListSKUs(ctx context.Context) ([]domain.SKU, error)
}

// SKUWriter creates and updates catalog entries.
type SKUWriter interface {
	CreateSKU(ctx context.Context, sku domain.SKU) error
	UpdateSKU(ctx context.Context, id string, mutate store.Mutator[domain.SKU]) (domain.SKU, error)
}

// NodeRepository updates nodes (an onboarding creates its node with
// itself: OnboardingWriter).
type NodeRepository interface {
	UpdateNode(ctx context.Context, id string, mutate store.Mutator[domain.Node]) (domain.Node, error)
}

// OnboardingReader reads onboardings and their timelines.
type OnboardingReader interface {
	GetOnboarding(ctx context.Context, id string) (domain.Onboarding, error)
	ListOnboardings(ctx context.Context, f store.OnboardingFilter) (store.OnboardingPage, error)
	ListOnboardingEvents(ctx context.Context, onboardingID string) ([]domain.TimelineEntry, error)
	// QueuePosition is the onboarding's place in its site's throttle queue
	// (1 is next), 0 when it is not queued.
	QueuePosition(ctx context.Context, o domain.Onboarding) (int, error)
}

// OnboardingWriter creates onboardings and closes those whose workflow could
// not start.
type OnboardingWriter interface {
	// CreateOnboardingOnNode also creates or updates the onboarding's
	// node, in the same write.
	CreateOnboardingOnNode(ctx context.Context, o domain.Onboarding, choose store.NodeChoice) (domain.Onboarding, domain.Node, error)
	UpdateOnboarding(ctx context.Context, id string, mutate store.Mutator[domain.Onboarding]) (domain.Onboarding, error)
	// CloseOnboarding also revokes the run's enrollment token.
	CloseOnboarding(ctx context.Context, id string, mutate store.Mutator[domain.Onboarding]) (domain.Onboarding, error)
	AppendOnboardingEvents(ctx context.Context, events ...domain.TimelineEntry) error
}

// ServerLockFinder says which open onboarding holds one identity of a
// server (store.LockBMC, …).
type ServerLockFinder interface {
	FindServerLock(ctx context.Context, siteID, identity, value string) (id string, found bool, err error)
}

// TokenConsumer consumes enrollment tokens.
type TokenConsumer interface {
	ConsumeEnrollmentToken(ctx context.Context, hash, nodeID string, now time.Time) (domain.EnrollmentToken, error)
}

// AuditLog appends and lists audit entries.
type AuditLog interface {
	AppendAudit(ctx context.Context, e domain.AuditEntry) error
	ListAuditPage(ctx context.Context, limit int, cursor string) (store.AuditPage, error)
}

// Store is every store port at once, so one repository can be handed over in
// one field.
type Store interface {
	SiteReader
	SiteWriter
	ProfileReader
	ProfileWriter
	RoCERepository
	SKUReader
	SKUWriter
	NodeRepository
	OnboardingReader
	OnboardingWriter
	ServerLockFinder
	TokenConsumer
	AuditLog
	BatchRepository
	LifecycleStore
	DesignRepository
}

var _ Store = (*store.Store)(nil)

// SecretStore is the secrets port: site credentials are written on
// POST …/credentials and read for a probe.
type SecretStore interface {
	Put(ctx context.Context, name string, value []byte) error
	Get(ctx context.Context, name string) ([]byte, error)
}

// OnboardingStarter starts the onboarding workflow for a new onboarding and
// returns the execution id.
type OnboardingStarter interface {
	StartOnboarding(ctx context.Context, o domain.Onboarding) (executionID string, err error)
	// OnboardingExecutionID is the id StartOnboarding gives o's execution.
	OnboardingExecutionID(o domain.Onboarding) string
}

// OnboardingStopper stops an onboarding's workflow execution; stopping one
// that already ended is not an error.
type OnboardingStopper interface {
	StopOnboarding(ctx context.Context, executionID, cause string) error
}

// EnrollmentCompleter completes the workflow's enrollment wait.
type EnrollmentCompleter interface {
	CompleteEnrollment(ctx context.Context, taskToken string, output []byte) error
}

// SiteProber checks a MAAS region with the site's API key and that the
// region has every script the site's profiles name (scripts may be empty).
type SiteProber interface {
	ProbeScripts(ctx context.Context, maasURL string, apiKey domain.Secret, scripts []string) (maas.ProbeResult, error)
}

// Authenticator identifies the caller of an admin request. Any error means
// 401; the error text is not shown to the caller.
type Authenticator interface {
	Authenticate(r *http.Request) (Principal, error)
}

// Principal is an authenticated caller. Only admins may use the admin API.
type Principal struct {
	Subject string
	Admin   bool
}
