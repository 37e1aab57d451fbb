package reconcile

import (
	"context"
	"time"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
	"github.com/maasflow/maasflow/shared/store"
)

// MachineReader is the part of a site's MAAS client a run reads with:
// batched listings and the live power query.
type MachineReader interface {
	ListByIDs(ctx context.Context, systemIDs []string) ([]maas.Machine, error)
	ListByHostnames(ctx context.Context, hostnames []string) ([]maas.Machine, error)
	PowerState(ctx context.Context, systemID string) (string, error)
}

var _ MachineReader = (*maas.Client)(nil)

// Connector returns the MAAS client of a site.
type Connector interface {
	ForSite(ctx context.Context, siteID string) (MachineReader, error)
}

// Executions reads the status of a workflow execution: ExecutionRunning,
// another Step Functions status, or ExecutionUnknown when the runtime has
// no such execution.
type Executions interface {
	ExecutionStatus(ctx context.Context, executionID string) (string, error)
}

// Publisher puts an event on the bus (shared/events validates it).
type Publisher interface {
	Publish(ctx context.Context, detailType string, detail any) error
}

// Metrics receives what a site step saw, for dashboards and alarms.
type Metrics interface {
	RecordSite(info domain.SiteRunInfo)
}

// Store is the repository a run and a resolve use; *store.Store satisfies
// it.
type Store interface {
	ListSites(ctx context.Context) ([]domain.Site, error)
	ListNodesBySite(ctx context.Context, siteID string) ([]domain.Node, error)
	GetNode(ctx context.Context, id string) (domain.Node, error)
	// FindOpenDecommission: a node a decommission holds is its workflow's.
	FindOpenDecommission(ctx context.Context, nodeID string) (id string, found bool, err error)
	UpdateNode(ctx context.Context, id string, mutate store.Mutator[domain.Node]) (domain.Node, error)
	ListOnboardings(ctx context.Context, f store.OnboardingFilter) (store.OnboardingPage, error)
	GetOnboarding(ctx context.Context, id string) (domain.Onboarding, error)
	UpdateOnboarding(ctx context.Context, id string, mutate store.Mutator[domain.Onboarding]) (domain.Onboarding, error)
	AppendOnboardingEvents(ctx context.Context, events ...domain.TimelineEntry) error
	GetEnrollmentToken(ctx context.Context, hash string) (domain.EnrollmentToken, error)
	// The site throttle's rows no workflow holds (orphan_slot drift).
	FindDeadSlots(ctx context.Context, siteID string) (store.DeadSlots, error)
	FreeDeadSlots(ctx context.Context, siteID string) (store.DeadSlots, error)

	ListNodeMAASStates(ctx context.Context, siteID string) ([]domain.NodeMAASState, error)
	PutNodeMAASState(ctx context.Context, st domain.NodeMAASState) error
	ListOpenDrift(ctx context.Context, siteID string) ([]domain.DriftItem, error)
	ListDrift(ctx context.Context, f store.DriftFilter) (store.DriftPage, error)
	CreateDriftItem(ctx context.Context, d domain.DriftItem) error
	UpdateDriftItem(ctx context.Context, id string, mutate store.Mutator[domain.DriftItem]) (domain.DriftItem, error)

	BeginReconcileRun(ctx context.Context, run domain.ReconcileRun, lease time.Duration) (domain.ReconcileRun, bool, error)
	CurrentReconcileRun(ctx context.Context) (domain.ReconcileRun, bool, error)
	GetReconcileRun(ctx context.Context, id string) (domain.ReconcileRun, error)
	UpdateReconcileRun(ctx context.Context, id string, release bool, mutate store.Mutator[domain.ReconcileRun]) (domain.ReconcileRun, error)
	ListReconcileRuns(ctx context.Context, limit int) ([]domain.ReconcileRun, error)
}

var _ Store = (*store.Store)(nil)
