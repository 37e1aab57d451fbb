package api

import (
	"context"
	"errors"
	"time"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/enroll"
	"github.com/maasflow/maasflow/shared/store"
)

// LifecycleStore is what the node lifecycle and decommission endpoints
// read and write.
type LifecycleStore interface {
	GetNode(ctx context.Context, id string) (domain.Node, error)
	ListNodes(ctx context.Context, f store.NodeFilter) (store.NodePage, error)
	CreateDecommission(ctx context.Context, d domain.Decommission) error
	GetDecommission(ctx context.Context, id string) (domain.Decommission, error)
	UpdateDecommission(ctx context.Context, id string, mutate store.Mutator[domain.Decommission]) (domain.Decommission, error)
	ListDecommissions(ctx context.Context, f store.DecommissionFilter) (store.DecommissionPage, error)
	ListDecommissionEvents(ctx context.Context, decommissionID string) ([]domain.DecommissionEvent, error)
	AppendDecommissionEvents(ctx context.Context, events ...domain.DecommissionEvent) error
	FindOpenDecommission(ctx context.Context, nodeID string) (string, bool, error)
	FindOpenOnboarding(ctx context.Context, siteID, hostname string) (string, bool, error)
	PutEnrollmentToken(ctx context.Context, t domain.EnrollmentToken) error
	RevokeEnrollmentToken(ctx context.Context, hash string, now time.Time) error
	AddNodeTokenRef(ctx context.Context, nodeID, hash string) error
	NodeTokenHashes(ctx context.Context, node domain.Node) ([]string, error)
}

// DecommissionStarter starts the decommission workflow of a new
// decommission and returns the execution id (shared/workflow).
type DecommissionStarter interface {
	StartDecommission(ctx context.Context, d domain.Decommission) (executionID string, err error)
}

// AllocationReader lists a node's allocations (shared/allocation).
type AllocationReader interface {
	List(ctx context.Context, nodeID string) ([]domain.Allocation, error)
}

// BundleConfig is what a reissued bootstrap bundle holds besides the
// node, its token and the site's policy (activities.Config's counterpart).
type BundleConfig struct {
	// APIURL is the node-facing base URL when the policy names no
	// enrollment_url.
	APIURL             string
	TaskSigningPubKeys []string
	Package            enroll.Package
	// CABundle is the PEM bundle the enrollment API's certificate chains
	// to when the policy's bootstrap sets none.
	CABundle string
}

type lifecycleDeps struct {
	decoms      DecommissionStarter
	allocations AllocationReader
	bundles     BundleConfig
}

// errNoDecommissionStarter: the handler was built without a decommission
// starter.
var errNoDecommissionStarter = errors.New("no decommission workflow starter configured")
