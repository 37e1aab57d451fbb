package onboarding_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/internal/maassim"
	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/activities/activitiestest"
	"github.com/maasflow/maasflow/shared/activities/onboarding"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
)

const revokedNote = "superseded enrollment token revoked"

// deployHook wraps the fixture's MAAS so a test can look at the store when
// DeployMachine calls MAAS deploy, and fail that call.
type deployHook struct {
	activities.Connector

	mu     sync.Mutex
	fail   int                                        // deploy calls left to fail
	before func(ctx context.Context, systemID string) // runs first on every deploy call
}

func (h *deployHook) ForSite(ctx context.Context, siteID string) (activities.MAAS, error) {
	m, err := h.Connector.ForSite(ctx, siteID)
	if err != nil {
		return nil, err
	}
	return &hookedMAAS{MAAS: m, h: h}, nil
}

type hookedMAAS struct {
	activities.MAAS
	h *deployHook
}

func (m *hookedMAAS) Deploy(ctx context.Context, systemID string, p maas.MachineDeployParams) (maas.Machine, error) {
	m.h.mu.Lock()
	before := m.h.before
	failing := m.h.fail > 0
	if failing {
		m.h.fail--
	}
	m.h.mu.Unlock()
	if before != nil {
		before(ctx, systemID)
	}
	if failing {
		return maas.Machine{}, &maas.MAASUnavailableError{Op: "deploy", SystemID: systemID, StatusCode: 503, Message: "injected"}
	}
	return m.MAAS.Deploy(ctx, systemID, p)
}

// revokeFailer fails RevokeEnrollmentToken a number of times.
type revokeFailer struct {
	activities.Store

	mu   sync.Mutex
	fail int
}

func (s *revokeFailer) RevokeEnrollmentToken(ctx context.Context, hash string, now time.Time) error {
	s.mu.Lock()
	failing := s.fail > 0
	if failing {
		s.fail--
	}
	s.mu.Unlock()
	if failing {
		return errors.New("injected store failure")
	}
	return s.Store.RevokeEnrollmentToken(ctx, hash, now)
}

// rewire rebuilds the handlers after a change to e.f.Deps.
func (e *env) rewire() {
	for _, fn := range onboarding.Catalog(e.f.Deps) {
		e.handlers[fn.Activity] = lambdaHandler(fn.Handler)
	}
}

func (e *env) token(hash string) domain.EnrollmentToken {
	e.t.Helper()
	tok, err := e.f.Store.GetEnrollmentToken(context.Background(), hash)
	require.NoError(e.t, err)
	return tok
}

func (e *env) revokedNotes(id string) int {
	e.t.Helper()
	n := 0
	for _, r := range e.timeline(id) {
		if r.Kind == domain.TimelineNote && r.Detail == revokedNote {
			n++
		}
	}
	return n
}

func TestRedeployRevokesTheSupersededToken(t *testing.T) {
	e := newEnv(t, activitiestest.Options{})
	e.addHardware("gpu-01", "10.0.0.11", "52:54:00:00:00:11", maassim.Faults{DeployDatasourceFailures: 1})
	o := e.f.AddOnboarding(t, "gpu-01", "10.0.0.11")
	e.toPredeployed(o)

	// At every MAAS deploy call, the token the onboarding points at must be
	// usable and the one it superseded already revoked.
	var (
		checked int
		prev    string
	)
	hook := &deployHook{Connector: e.f.Deps.MAAS}
	hook.before = func(context.Context, string) {
		cur := e.onboarding(o.ID).EnrollmentTokenHash
		tok := e.token(cur)
		assert.Nil(t, tok.RevokedAt, "the token of the deploy in flight is usable")
		assert.Nil(t, tok.ConsumedAt)
		if prev != "" {
			assert.NotNil(t, e.token(prev).RevokedAt, "the superseded token is revoked before MAAS deploys")
		}
		prev = cur
		checked++
	}
	e.f.Deps.MAAS = hook
	e.rewire()

	d1, polled := e.deploy(o)
	require.Equal(t, activities.OutcomeFailed, polled.Outcome)
	first := e.onboarding(o.ID).EnrollmentTokenHash
	require.NotEmpty(t, first)
	assert.Zero(t, e.revokedNotes(o.ID), "the first deploy supersedes nothing")

	var cls onboarding.ClassifyDeployFailureOutput
	e.must("ClassifyDeployFailure", onboarding.ClassifyDeployFailureInput{OnboardingRef: ref(o), DeployEventsAfter: d1.EventsAfter}, &cls)
	require.Equal(t, domain.DeployFailureDatasource, cls.Class)
	e.must("RecoverDeploy", refIn{ref(o)}, nil)
	require.Equal(t, activities.OutcomeDone, e.poll(o, activities.TargetDeployable, activities.Poll{}).Outcome)

	revokedAt := e.clk.Now().UTC()
	d2, polled := e.deploy(o)
	assert.Equal(t, 2, d2.DeployAttempt)
	require.Equal(t, activities.OutcomeDone, polled.Outcome)
	assert.Equal(t, 2, checked, "both deploys were checked")

	second := e.onboarding(o.ID).EnrollmentTokenHash
	require.NotEqual(t, first, second)
	old := e.token(first)
	require.NotNil(t, old.RevokedAt, "the first deploy's token is revoked")
	assert.True(t, revokedAt.Equal(*old.RevokedAt))
	assert.Nil(t, old.ConsumedAt)
	assert.Nil(t, e.token(second).RevokedAt)
	assert.Equal(t, 1, e.revokedNotes(o.ID))

	// The node deployed the second time enrolls with the second token.
	require.Eventually(t, func() bool { return len(e.f.NodeAPI.Enrolled()) == 1 }, 10*time.Second, 5*time.Millisecond)
	assert.Empty(t, e.f.NodeAPI.Rejections())
	assert.NotNil(t, e.token(second).ConsumedAt)

	assertNoSecrets(t, "timeline", timelineText(e.timeline(o.ID)))
	assert.NotContains(t, timelineText(e.timeline(o.ID)), first, "the hash is not on the timeline")
	assert.NotContains(t, e.f.Logs.String(), first, "nor in the logs")
}

func TestDeployRetryRevokesTheFailedTrysToken(t *testing.T) {
	t.Run("MAAS deploy failed", func(t *testing.T) {
		e := newEnv(t, activitiestest.Options{})
		e.addHardware("gpu-01", "10.0.0.11", "52:54:00:00:00:11", maassim.Faults{NeverEnrolls: true})
		o := e.f.AddOnboarding(t, "gpu-01", "10.0.0.11")
		e.toPredeployed(o)
		e.f.Deps.MAAS = &deployHook{Connector: e.f.Deps.MAAS, fail: 1}
		e.rewire()

		requireErrorName(t, e.call("DeployMachine", refIn{ref(o)}, nil), "MAASUnavailableError")
		first := e.onboarding(o.ID).EnrollmentTokenHash
		require.NotEmpty(t, first)
		assert.Equal(t, "Allocated", e.machine(e.onboarding(o.ID).MAASSystemID).StatusName)

		var out onboarding.DeployMachineOutput
		e.must("DeployMachine", refIn{ref(o)}, &out)
		assert.Equal(t, 1, out.DeployAttempt, "a retry is not a second deploy")
		got := e.onboarding(o.ID)
		require.NotEqual(t, first, got.EnrollmentTokenHash)
		assert.NotNil(t, e.token(first).RevokedAt, "the failed try's token is revoked")
		assert.Nil(t, e.token(got.EnrollmentTokenHash).RevokedAt)
		assert.Equal(t, 1, e.revokedNotes(o.ID))
		assert.Equal(t, 1, e.callsTo("POST", "deploy"))
	})

	t.Run("the revoke failed", func(t *testing.T) {
		e := newEnv(t, activitiestest.Options{})
		e.addHardware("gpu-01", "10.0.0.11", "52:54:00:00:00:11", maassim.Faults{NeverEnrolls: true})
		o := e.f.AddOnboarding(t, "gpu-01", "10.0.0.11")
		e.toPredeployed(o)
		e.f.Deps.MAAS = &deployHook{Connector: e.f.Deps.MAAS, fail: 1}
		e.rewire()
		requireErrorName(t, e.call("DeployMachine", refIn{ref(o)}, nil), "MAASUnavailableError")
		first := e.onboarding(o.ID).EnrollmentTokenHash
		require.NotEmpty(t, first)

		failer := &revokeFailer{Store: e.f.Deps.Store, fail: 1}
		e.f.Deps.Store = failer
		e.rewire()
		requireErrorName(t, e.call("DeployMachine", refIn{ref(o)}, nil), "StoreUnavailableError")
		assert.Equal(t, first, e.onboarding(o.ID).EnrollmentTokenHash, "the onboarding still points at the token to revoke")
		assert.Nil(t, e.token(first).RevokedAt)
		assert.Zero(t, e.callsTo("POST", "deploy"), "nothing deployed without the revoke")

		e.must("DeployMachine", refIn{ref(o)}, nil)
		got := e.onboarding(o.ID)
		require.NotEqual(t, first, got.EnrollmentTokenHash)
		assert.NotNil(t, e.token(first).RevokedAt, "the retry revoked it")
		assert.Nil(t, e.token(got.EnrollmentTokenHash).RevokedAt)
		assert.Equal(t, 1, e.revokedNotes(o.ID), "noted once")
		assert.Equal(t, 1, e.callsTo("POST", "deploy"))
	})
}
