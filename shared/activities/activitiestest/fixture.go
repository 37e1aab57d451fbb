// Package activitiestest wires the onboarding activities to their real
// neighbours for tests: the MAAS simulator reached over HTTP through the
// real MAAS client, the read model on minidyn, file secrets, an event
// recorder that validates every event against its schema, and a stand-in
// for the node-facing API (healthz, the site bootstrap script and the
// enrollment endpoint), all on one injected clock.
//
// It is imported by tests only and must not be imported by production code.
package activitiestest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/truora/minidyn/aws-v2/client"

	"github.com/maasflow/maasflow/internal/maassim"
	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/activities/onboarding"
	"github.com/maasflow/maasflow/shared/clock"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/enroll"
	"github.com/maasflow/maasflow/shared/events/eventstest"
	"github.com/maasflow/maasflow/shared/maas"
	"github.com/maasflow/maasflow/shared/secrets"
	"github.com/maasflow/maasflow/shared/store"
)

// Seeded secrets: tests check that none of them shows up in logs, events,
// the timeline or activity output.
const (
	// APIKey is the simulator's MAAS API key (18:18:32 like MAAS's).
	APIKey      = "fixtureconsumerkey:fixturetokenkey000:fixturetokensecret00000000000000"
	BMCUsername = "maasflow-bmc"
	BMCPassword = "bmc-Pa55word-never-logged"
)

// IDs of the seeded records.
const (
	SiteID    = "site-1"
	ProfileID = "profile-1"
	SKUID     = "h100-8x"
	// SiteBootstrapVersion is the seeded site bootstrap bundle version.
	SiteBootstrapVersion = "site-v1"
)

// Options configure a Fixture.
type Options struct {
	// Clock drives everything (required): a clockwork fake clock for
	// activity tests, the ASL engine's virtual clock for workflow tests.
	Clock clock.Clock
	// SitePolicy and ProfilePolicy are stored on the seeded site and
	// profile. The site gets the seeded site bootstrap reference unless
	// SitePolicy sets one.
	SitePolicy    domain.Policy
	ProfilePolicy domain.Policy
	// SimDurations are the simulator's phase lengths.
	SimDurations maassim.Durations
	// Seed seeds the simulator's system ids.
	Seed int64
	// LocalDB runs the store on local mode's database engine (store.NewLocalDB:
	// bbolt on a throwaway file) instead of
	// plain minidyn, whose expression evaluator tests exercise by default.
	LocalDB bool
	// SimClockSkew and SimSecondSubnet are the simulator's ClockSkew and
	// SecondSubnet (a region clock off the control plane's; a second
	// subnet on the PXE VLAN).
	SimClockSkew    time.Duration
	SimSecondSubnet bool
}

// Fixture is the wired set.
type Fixture struct {
	Clock     clock.Clock
	Sim       *maassim.Simulator
	SimServer *httptest.Server
	Store     *store.Store
	// DB is the store's database, counting the calls that reach it.
	DB        *store.Counting
	Secrets   *secrets.FileStore
	Events    *eventstest.Recorder
	NodeAPI   *NodeAPI
	APIServer *httptest.Server
	Completer *LateCompleter
	Logs      *SyncBuffer
	Deps      activities.Deps
	Site      domain.Site
	Profile   domain.Profile
	SKU       domain.SKU

	mu  sync.Mutex
	ids int
}

// New builds the fixture and seeds an active, probed site with
// credentials, an active profile and an active SKU.
func New(t testing.TB, o Options) *Fixture {
	t.Helper()
	require.NotNil(t, o.Clock, "activitiestest: Options.Clock is required")
	ctx := context.Background()
	f := &Fixture{Clock: o.Clock, Completer: &LateCompleter{}, Logs: &SyncBuffer{}}

	var db store.DynamoDB
	if o.LocalDB {
		local, err := store.NewLocalDB(ctx, "")
		require.NoError(t, err)
		db = local
	} else {
		plain := client.NewClient()
		require.NoError(t, store.CreateTable(ctx, plain, ""))
		db = plain
	}
	f.DB = store.NewCounting(db)
	f.Store = store.New(f.DB, "", o.Clock.Now)

	f.Secrets = secrets.NewFileStore(filepath.Join(t.TempDir(), "secrets.json"))
	require.NoError(t, secrets.PutSiteCredentials(ctx, f.Secrets, SiteID, domain.SiteCredentials{
		MAASAPIKey: APIKey, BMCUsername: BMCUsername, BMCPassword: BMCPassword,
	}))

	f.Events = eventstest.NewRecorder(t)
	f.Events.Clock = o.Clock

	f.NodeAPI = &NodeAPI{Store: f.Store, Completer: f.Completer, Clock: o.Clock, Script: []byte("#!/bin/sh\necho site bootstrap v1\n")}
	f.APIServer = httptest.NewServer(f.NodeAPI)
	t.Cleanup(f.APIServer.Close)

	f.Sim = maassim.New(maassim.Options{APIKey: APIKey, Clock: o.Clock, Seed: o.Seed, Durations: o.SimDurations,
		HTTPClient: f.APIServer.Client(), ClockSkew: o.SimClockSkew, SecondSubnet: o.SimSecondSubnet})
	f.SimServer = httptest.NewServer(f.Sim)
	t.Cleanup(func() {
		f.SimServer.Close()
		f.Sim.Close()
	})

	ca, err := enroll.DevCA()
	require.NoError(t, err)
	sum := sha256.Sum256(f.NodeAPI.Script)
	sitePolicy := o.SitePolicy
	if sitePolicy.Bootstrap == nil {
		sitePolicy.Bootstrap = &domain.BootstrapRef{
			URL: f.APIServer.URL + "/bootstrap/" + SiteBootstrapVersion + ".sh", Version: SiteBootstrapVersion,
			SHA256: hex.EncodeToString(sum[:]), CABundle: ca,
		}
	}
	f.Site = domain.Site{ID: SiteID, Name: "fixture-site", MAASURL: f.SimServer.URL + "/MAAS", Status: domain.StatusActive,
		Policy: sitePolicy, CredentialsSet: true,
		Probe: &domain.ProbeResult{Healthy: true, Version: "3.5.4", IsAdmin: true, CheckedAt: o.Clock.Now().UTC()}}
	require.NoError(t, f.Store.CreateSite(ctx, f.Site))
	f.Profile = domain.Profile{ID: ProfileID, SiteID: SiteID, Name: "gpu-jammy", Architecture: "amd64/generic",
		DistroSeries: "jammy", Status: domain.StatusActive, Policy: o.ProfilePolicy}
	require.NoError(t, f.Store.CreateProfile(ctx, f.Profile))
	f.SKU = domain.SKU{ID: SKUID, GPUModel: "H100", GPUsTotal: 8, Active: true}
	require.NoError(t, f.Store.CreateSKU(ctx, f.SKU))

	logger := slog.New(slog.NewJSONHandler(f.Logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	f.Deps = activities.Deps{
		Store: f.Store,
		MAAS: activities.NewSiteConnector(f.Store, f.Secrets, func(url string, key domain.Secret) (activities.MAAS, error) {
			return maas.NewClient(url, key, maas.WithNow(o.Clock.Now), maas.WithHTTPClient(f.SimServer.Client()), maas.WithLogger(logger))
		}),
		Secrets:   f.Secrets,
		Events:    f.Events,
		Completer: f.Completer,
		Clock:     o.Clock,
		NewID:     f.newID,
		Logger:    logger,
		HTTP:      f.APIServer.Client(),
		Config: activities.Config{
			APIURL:             f.APIServer.URL,
			TaskSigningPubKeys: []string{"ed25519:Zml4dHVyZS10YXNrLXNpZ25pbmcta2V5"},
			Package:            enroll.DevPackage(),
		},
	}
	return f
}

func (f *Fixture) newID() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ids++
	return fmt.Sprintf("id-%04d", f.ids)
}

// AddOnboarding creates the node record and a pending onboarding (attempt
// 1) for the host, as the admin API does.
func (f *Fixture) AddOnboarding(t testing.TB, hostname, ipmiIP string) domain.Onboarding {
	t.Helper()
	ctx := context.Background()
	now := f.Clock.Now().UTC()
	node := domain.Node{ID: "node-" + hostname, SiteID: SiteID, Hostname: hostname, SKUID: SKUID,
		Status: domain.NodeOnboarding, CreatedAt: now, UpdatedAt: now}
	ob := domain.Onboarding{ID: "onb-" + hostname, SiteID: SiteID, ProfileID: ProfileID, SKUID: SKUID,
		Hostname: hostname, IPMIIP: ipmiIP, NodeID: node.ID, Status: domain.OnboardingPending, Attempt: 1,
		CorrelationID: "corr-" + hostname, CreatedBy: "admin", CreatedAt: now, UpdatedAt: now}
	node.OnboardingID = ob.ID
	require.NoError(t, f.Store.CreateNode(ctx, node))
	require.NoError(t, f.Store.CreateOnboarding(ctx, ob))
	return ob
}

// Ref is the execution input of an onboarding.
func Ref(o domain.Onboarding) onboarding.OnboardingRef {
	return onboarding.OnboardingRef{OnboardingID: o.ID, SiteID: o.SiteID, Hostname: o.Hostname, Attempt: o.Attempt, Run: o.Run, CorrelationID: o.CorrelationID}
}

// Secrets are the seeded secret values.
func Secrets() []string {
	return []string{APIKey, "fixturetokensecret00000000000000", BMCPassword}
}

// LateCompleter forwards to C, set once the workflow engine exists (the
// engine's task handlers need the completer first).
type LateCompleter struct {
	mu    sync.Mutex
	C     activities.TaskCompleter
	calls int
}

// Set installs the completer.
func (l *LateCompleter) Set(c activities.TaskCompleter) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.C = c
}

// Calls counts CompleteTask calls.
func (l *LateCompleter) Calls() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls
}

// CompleteTask implements activities.TaskCompleter; without a completer it
// only counts.
func (l *LateCompleter) CompleteTask(ctx context.Context, taskToken string, output []byte) error {
	l.mu.Lock()
	l.calls++
	c := l.C
	l.mu.Unlock()
	if c == nil {
		return nil
	}
	return c.CompleteTask(ctx, taskToken, output)
}

// SyncBuffer is a bytes.Buffer safe for concurrent writers (log capture).
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write implements io.Writer.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var _ http.Handler = (*NodeAPI)(nil)
