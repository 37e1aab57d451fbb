package activities

import (
	"context"
	"time"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/store"
)

// DecommissionStore reads and moves decommissions and their timelines, and
// the onboardings a reimage starts.
type DecommissionStore interface {
	GetDecommission(ctx context.Context, id string) (domain.Decommission, error)
	UpdateDecommission(ctx context.Context, id string, mutate store.Mutator[domain.Decommission]) (domain.Decommission, error)
	UpdateDecommissionWithTimeline(ctx context.Context, id string, mutate store.Mutator[domain.Decommission],
		rows func(prev, next domain.Decommission) []domain.DecommissionEvent) (domain.Decommission, error)
	AppendDecommissionEvents(ctx context.Context, events ...domain.DecommissionEvent) error
	ListDecommissionEvents(ctx context.Context, decommissionID string) ([]domain.DecommissionEvent, error)
	CreateOnboarding(ctx context.Context, o domain.Onboarding) error
	NodeTokenHashes(ctx context.Context, node domain.Node) ([]string, error)
	RevokeEnrollmentToken(ctx context.Context, hash string, now time.Time) error
}

var _ DecommissionStore = (*store.Store)(nil)

// AllocationService is Provisioning.Allocation as the drain uses it
// (shared/allocation).
type AllocationService interface {
	List(ctx context.Context, nodeID string) ([]domain.Allocation, error)
	ForceRelease(ctx context.Context, allocationID, reason string) (domain.Allocation, error)
}

// OnboardingStarter starts the onboarding workflow of an onboarding a
// reimage created (shared/workflow).
type OnboardingStarter interface {
	StartOnboarding(ctx context.Context, o domain.Onboarding) (executionID string, err error)
}
