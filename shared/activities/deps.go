package activities

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/maasflow/maasflow/shared/clock"
	"github.com/maasflow/maasflow/shared/design"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/enroll"
	"github.com/maasflow/maasflow/shared/maas"
	"github.com/maasflow/maasflow/shared/store"
)

// The ports below list only what the activities call. *store.Store,
// *maas.Client, the secrets stores, the event publishers and the workflow
// adapters satisfy them.

// RecordReader reads the records guardrails check.
type RecordReader interface {
	GetSite(ctx context.Context, id string) (domain.Site, error)
	GetProfile(ctx context.Context, siteID, id string) (domain.Profile, error)
	GetSKU(ctx context.Context, id string) (domain.SKU, error)
	ListRoCEAssignments(ctx context.Context, siteID, hostname string) ([]domain.RoCEAssignment, error)
}

// OnboardingStore reads and moves the onboarding and its timeline.
type OnboardingStore interface {
	GetOnboarding(ctx context.Context, id string) (domain.Onboarding, error)
	UpdateOnboarding(ctx context.Context, id string, mutate store.Mutator[domain.Onboarding]) (domain.Onboarding, error)
	// UpdateOnboardingWithTimeline writes the change and the timeline rows
	// recording it in one database call.
	UpdateOnboardingWithTimeline(ctx context.Context, id string, mutate store.Mutator[domain.Onboarding],
		rows func(prev, next domain.Onboarding) []domain.TimelineEntry) (domain.Onboarding, error)
	AppendOnboardingEvents(ctx context.Context, events ...domain.TimelineEntry) error
	ListOnboardingEvents(ctx context.Context, onboardingID string) ([]domain.TimelineEntry, error)
}

// NodeStore reads and updates node records.
type NodeStore interface {
	CreateNode(ctx context.Context, n domain.Node) error
	GetNode(ctx context.Context, id string) (domain.Node, error)
	FindNodeByHost(ctx context.Context, siteID, hostname string) (domain.Node, bool, error)
	UpdateNode(ctx context.Context, id string, mutate store.Mutator[domain.Node]) (domain.Node, error)
}

// TokenStore keeps enrollment token hashes.
type TokenStore interface {
	PutEnrollmentToken(ctx context.Context, t domain.EnrollmentToken) error
	GetEnrollmentToken(ctx context.Context, hash string) (domain.EnrollmentToken, error)
	RevokeEnrollmentToken(ctx context.Context, hash string, now time.Time) error
}

// SiteThrottle hands out the slots of a site's throttle (TakeSiteSlot).
type SiteThrottle interface {
	TakeSiteSlot(ctx context.Context, req store.SlotRequest) (store.SlotResult, error)
}

// Store is every read-model method the activities call.
type Store interface {
	RecordReader
	OnboardingStore
	NodeStore
	TokenStore
	SiteThrottle
}

var (
	_ Store = (*store.Store)(nil)
	_ MAAS  = (*maas.Client)(nil)
)

// MAAS is the part of the MAAS contract the onboarding drives.
type MAAS interface {
	maas.MachineFinder
	maas.MachineLifecycle
	maas.InterfaceManager
	maas.StorageManager
	maas.Diagnostics
	maas.PowerController
}

// SubnetLister lists a region's subnets (GET subnets/). It is optional: a
// MAAS client that has it lets ApplyRoCE find the subnet of an interface
// that has no link yet; without it only subnets already linked on the
// machine are candidates.
type SubnetLister interface {
	Subnets(ctx context.Context) ([]maas.Subnet, error)
}

// Connector hands out the MAAS client of a site.
type Connector interface {
	// ForSite returns a client for the site's region with its API key.
	ForSite(ctx context.Context, siteID string) (MAAS, error)
}

// SecretGetter reads a secret (shared/secrets.Getter).
type SecretGetter interface {
	Get(ctx context.Context, name string) ([]byte, error)
}

// Publisher puts an event on the bus (shared/events).
type Publisher interface {
	Publish(ctx context.Context, detailType string, detail any) error
}

// TaskCompleter completes a .waitForTaskToken task with its output (the
// workflow adapters): the enrollment wait, and the machine waits the
// watcher wakes. A task that already ended is a *run.TaskEndedError.
type TaskCompleter interface {
	CompleteTask(ctx context.Context, taskToken string, output []byte) error
}

// HTTPDoer sends the pre-deploy checks' HTTP requests (*http.Client).
type HTTPDoer interface {
	Do(*http.Request) (*http.Response, error)
}

// Config is what the activities need from the deployment, not from a site.
type Config struct {
	// APIURL is the node-facing base URL put in bootstrap bundles
	// (GPUAAS_API_URL) when the policy names no enrollment_url.
	APIURL string
	// TaskSigningPubKeys go into every bundle (GPUAAS_TASK_SIGNING_PUBKEYS).
	TaskSigningPubKeys []string
	// Package is the node-agent package every bundle names.
	Package enroll.Package
	// CABundle is the PEM bundle the enrollment API's certificate chains
	// to, put in bootstrap bundles (ca_bundle_pem) when the policy's
	// bootstrap sets none: the operator supplies it once at deploy time
	// rather than in every site's policy. Empty gives such nodes none.
	CABundle string
}

// Deps are the activities' dependencies. Nil Clock, NewID, Logger and HTTP
// and a zero InvocationBudget get defaults (wall clock, UUIDs, discarded
// logs, http.DefaultClient, DefaultInvocationBudget).
type Deps struct {
	Store     Store
	MAAS      Connector
	Secrets   SecretGetter
	Events    Publisher
	Completer TaskCompleter
	// Watches keeps the machine watch's records; nil means Store, when it
	// has them (*store.Store does).
	Watches WatchStore
	Clock   clock.Clock
	NewID   func() string
	Logger  *slog.Logger
	HTTP    HTTPDoer
	Config  Config
	// The decommission paths' ports (decommission_deps.go).
	Decommissions DecommissionStore
	Allocations   AllocationService
	Starter       OnboardingStarter
	// InvocationBudget bounds each activity invocation and so each MAAS
	// call in it; zero means DefaultInvocationBudget.
	InvocationBudget time.Duration
	// NetworkDriver configures the network outside the machine for its
	// design (ConfigureMachine); nil means design.NoopNetworkDriver.
	NetworkDriver design.NetworkDriver
}

func (d Deps) WithDefaults() Deps {
	if d.Clock == nil {
		d.Clock = clock.Real()
	}
	if d.NewID == nil {
		d.NewID = uuid.NewString
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.HTTP == nil {
		d.HTTP = http.DefaultClient
	}
	if d.InvocationBudget <= 0 {
		d.InvocationBudget = DefaultInvocationBudget
	}
	if d.NetworkDriver == nil {
		d.NetworkDriver = design.NoopNetworkDriver{}
	}
	if w, ok := d.Store.(WatchStore); ok && d.Watches == nil {
		d.Watches = w
	}
	return d
}

// WatchStore keeps the machine watch's records (*store.Store): one watch
// per waiting machine, one cursor per site, all in one partition.
type WatchStore interface {
	PutMachineWatch(ctx context.Context, w domain.MachineWatch) error
	ListMachineWatches(ctx context.Context) (store.MachineWatches, error)
	DeleteMachineWatch(ctx context.Context, siteID, systemID string, token domain.Secret) error
	PutWatchCursor(ctx context.Context, c domain.WatchCursor) error
}

var _ WatchStore = (*store.Store)(nil)

// DefaultInvocationBudget bounds one activity invocation, and with it
// every MAAS call it makes, when Deps.InvocationBudget is zero. It sits
// below the functions' Lambda timeout (60 s) and far below the Tasks'
// TimeoutSeconds, so a MAAS that is slow to answer surfaces as a retryable
// MAASTimeoutError the state machine backs off from, never as the
// platform killing the function mid-call.
const DefaultInvocationBudget = 45 * time.Second

// Function is one activity as a deployable unit.
type Function struct {
	// Name is the kebab-case function name, = functions/<Name>.
	Name string
	// Activity is the VerbNoun activity name.
	Activity string
	// Substitution is the ASL definition substitution key whose value is
	// the function's ARN, e.g. "DiscoverMachineFunctionArn".
	Substitution string
	// Handler is func(context.Context, <Activity>Input) (<Activity>Output, error).
	Handler any
}

// NewFunction is the deployable unit of one activity: its function is
// functions/<name>, its ARN substitution <activity>FunctionArn.
func NewFunction(name, activity string, handler any) Function {
	return Function{Name: name, Activity: activity, Substitution: activity + "FunctionArn", Handler: handler}
}
