package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/enroll"
	"github.com/maasflow/maasflow/shared/store"
)

const seedEnrollToken = "seeded-enrollment-token-Zq81Lm0pXw"

// enrollable is an onboarding waiting for its node, with a token issued.
type enrollable struct {
	onboardingID, nodeID string
}

func (h *harness) enrollable(host, token string, ttl time.Duration, taskToken string) enrollable {
	h.t.Helper()
	fx := h.fixture()
	o := h.mustAdmin(http.StatusAccepted, "POST", "/api/v1/admin/onboardings", fx.onboarding(host))
	e := enrollable{onboardingID: o["id"].(string), nodeID: o["node_id"].(string)}
	ctx := context.Background()
	require.NoError(h.t, h.store.PutEnrollmentToken(ctx, domain.EnrollmentToken{
		Hash: enroll.HashToken(token), NodeID: e.nodeID, OnboardingID: e.onboardingID, Attempt: 1,
		ExpiresAt: h.clock.Now().Add(ttl),
	}))
	if taskToken != "" {
		_, err := h.store.UpdateOnboarding(ctx, e.onboardingID, func(o *domain.Onboarding) error {
			o.Status, o.Stage, o.EnrollmentTaskToken = domain.OnboardingRunning, domain.StageWaitEnrollment, taskToken
			return nil
		})
		require.NoError(h.t, err)
	}
	return e
}

func (h *harness) enroll(nodeID, token string) response {
	h.t.Helper()
	return h.do(call{method: "POST", path: "/api/v1/nodes/" + nodeID + "/enroll", body: map[string]any{"token": token}})
}

func TestEnrollSuccessCompletesTheWait(t *testing.T) {
	h := newHarness(t)
	e := h.enrollable("gpu-01", seedEnrollToken, time.Hour, "task-token-1")
	h.clock.Advance(10 * time.Minute)

	r := h.enroll(e.nodeID, seedEnrollToken)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	assert.JSONEq(t, `{"node_id":"`+e.nodeID+`","status":"active"}`, string(r.body))

	node, found, err := h.store.FindNodeByHost(context.Background(), h.mustSiteOf(e), "gpu-01")
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, domain.NodeActive, node.Status)
	require.NotNil(t, node.EnrolledAt)
	assert.True(t, node.EnrolledAt.Equal(t0.Add(10*time.Minute)))

	calls := h.completer.completions()
	require.Len(t, calls, 1)
	assert.Equal(t, "task-token-1", calls[0].taskToken)
	var out map[string]any
	require.NoError(t, json.Unmarshal(calls[0].output, &out))
	assert.Equal(t, e.nodeID, out["node_id"])
	assert.InDelta(t, 1, out["attempt"], 0)
	assert.Equal(t, t0.Add(10*time.Minute).Format(time.RFC3339), out["enrolled_at"])

	entries := h.auditFor("node.enroll")
	require.Len(t, entries, 1)
	assert.Equal(t, "node:"+e.nodeID, entries[0].Actor)
	assert.Equal(t, "node:"+e.nodeID, entries[0].Target)
	assert.Equal(t, "success", entries[0].Result)
}

func (h *harness) mustSiteOf(e enrollable) string {
	h.t.Helper()
	o, err := h.store.GetOnboarding(context.Background(), e.onboardingID)
	require.NoError(h.t, err)
	return o.SiteID
}

func TestEnrollBeforeTheWaitOnlyActivates(t *testing.T) {
	h := newHarness(t)
	e := h.enrollable("gpu-01", seedEnrollToken, time.Hour, "")
	r := h.enroll(e.nodeID, seedEnrollToken)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	assert.Empty(t, h.completer.completions(), "no task token yet: nothing to complete")
}

func TestEnrollCompletionFailureStillAnswersOK(t *testing.T) {
	h := newHarness(t)
	e := h.enrollable("gpu-01", seedEnrollToken, time.Hour, "task-token-1")
	// A workflow service's error may quote the task token.
	h.completer.err = errors.New("InvalidToken: task-token-1 already ended")
	r := h.enroll(e.nodeID, seedEnrollToken)
	require.Equal(t, http.StatusOK, r.status, "the token is spent: the node must not retry")
	assert.Contains(t, h.logs.String(), "complete workflow enrollment wait", "the failure is logged")
	assert.NotContains(t, h.logs.String(), "task-token-1", "but not the task token")
}

func TestEnrollRejections(t *testing.T) {
	tests := []struct {
		name   string
		run    func(h *harness, e enrollable) response
		reason string
		// completed is how many enrollments completed a wait: only the
		// first, successful use of a replayed token.
		completed int
	}{
		{
			name: "replayed",
			run: func(h *harness, e enrollable) response {
				require.Equal(t, http.StatusOK, h.enroll(e.nodeID, seedEnrollToken).status)
				return h.enroll(e.nodeID, seedEnrollToken)
			},
			reason:    "consumed",
			completed: 1,
		},
		{
			name: "expired",
			run: func(h *harness, e enrollable) response {
				h.clock.Advance(2 * time.Hour)
				return h.enroll(e.nodeID, seedEnrollToken)
			},
			reason: "expired",
		},
		{
			name: "wrong node",
			run: func(h *harness, e enrollable) response {
				other := h.enrollable("gpu-02", "another-token-for-gpu-02", time.Hour, "")
				return h.enroll(other.nodeID, seedEnrollToken)
			},
			reason: "wrong_node",
		},
		{
			// A redeploy issued a newer token for the node (requirements runbook
			// "Expiry/Reissue Path").
			name: "revoked",
			run: func(h *harness, e enrollable) response {
				require.NoError(h.t, h.store.RevokeEnrollmentToken(context.Background(), enroll.HashToken(seedEnrollToken), h.clock.Now()))
				return h.enroll(e.nodeID, seedEnrollToken)
			},
			reason: "revoked",
		},
		{
			name:   "unknown",
			run:    func(h *harness, e enrollable) response { return h.enroll(e.nodeID, "not-a-token-we-issued") },
			reason: "unknown",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			e := h.enrollable("gpu-01", seedEnrollToken, time.Hour, "task-token-1")
			r := tc.run(h, e)
			require.Equal(t, http.StatusUnauthorized, r.status, "%s", r.body)
			code, msg := r.errorOf(t)
			assert.Equal(t, CodeTokenRejected, code)
			assert.Contains(t, msg, tc.reason)
			assert.NotContains(t, string(r.body), seedEnrollToken)
			assert.NotContains(t, h.logs.String(), seedEnrollToken)
			assert.Len(t, h.completer.completions(), tc.completed, "a rejected token completes nothing")

			// A rejected token proves nothing about the caller: counted,
			// not audited (only the replay's first, accepted, call is).
			assert.Len(t, h.auditFor("node.enroll"), tc.completed)
			assert.Equal(t, int64(1), h.refusals.Counts()[CodeTokenRejected])
			assert.Contains(t, h.logs.String(), `"reason":"`+tc.reason+`"`)
		})
	}
}

func TestEnrollWithoutBearerIsAllowedButAdminRoutesAreNot(t *testing.T) {
	h := newHarness(t)
	e := h.enrollable("gpu-01", seedEnrollToken, time.Hour, "")
	// The node endpoint ignores admin tokens: the enrollment token is the
	// credential, and an admin token does not stand in for it.
	r := h.do(call{method: "POST", path: "/api/v1/nodes/" + e.nodeID + "/enroll", body: map[string]any{"token": "x"}, token: adminToken})
	assert.Equal(t, http.StatusUnauthorized, r.status)
	assert.Equal(t, http.StatusOK, h.enroll(e.nodeID, seedEnrollToken).status)
}

// hangUpStore cancels the request as soon as the token is consumed (the node
// hung up) and, like the AWS SDK, refuses node and onboarding calls on a
// cancelled context; minidyn itself ignores the context.
type hangUpStore struct {
	Store
	hangUp context.CancelFunc
}

func (s hangUpStore) ConsumeEnrollmentToken(ctx context.Context, hash, nodeID string, now time.Time) (domain.EnrollmentToken, error) {
	tok, err := s.Store.ConsumeEnrollmentToken(ctx, hash, nodeID, now)
	s.hangUp()
	return tok, err
}

func (s hangUpStore) UpdateNode(ctx context.Context, id string, mutate store.Mutator[domain.Node]) (domain.Node, error) {
	if err := ctx.Err(); err != nil {
		return domain.Node{}, err
	}
	return s.Store.UpdateNode(ctx, id, mutate)
}

func (s hangUpStore) GetOnboarding(ctx context.Context, id string) (domain.Onboarding, error) {
	if err := ctx.Err(); err != nil {
		return domain.Onboarding{}, err
	}
	return s.Store.GetOnboarding(ctx, id)
}

// A consumed token cannot be used again, so a node that hangs up right after
// the consume must still end active, with the workflow's wait completed.
func TestEnrollFinishesWhenTheNodeHangsUp(t *testing.T) {
	h := newHarness(t)
	e := h.enrollable("gpu-01", seedEnrollToken, time.Hour, "task-token-1")
	ctx, hangUp := context.WithCancel(t.Context())
	defer hangUp()
	handler := New(Config{}, Deps{
		Store: hangUpStore{Store: h.store, hangUp: hangUp}, Secrets: h.secrets, Starter: h.starter,
		Completer: h.completer, Prober: h.prober, Auth: NewStaticTokens(nil), Clock: h.clock,
	})
	req := httptest.NewRequestWithContext(ctx, "POST", "/api/v1/nodes/"+e.nodeID+"/enroll",
		strings.NewReader(`{"token":"`+seedEnrollToken+`"}`))
	handler.ServeHTTP(httptest.NewRecorder(), req)

	node, found, err := h.store.FindNodeByHost(context.Background(), h.mustSiteOf(e), "gpu-01")
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, domain.NodeActive, node.Status, "the token is spent: the node must be active")
	assert.Len(t, h.completer.completions(), 1, "the workflow's wait is completed")
}

// TestEnrollmentAfterCancelIsRefused reproduces a defect a security review found: a cancelled
// onboarding's token used to enroll the node (active), after which every
// new onboarding of the host was refused.
func TestEnrollmentAfterCancelIsRefused(t *testing.T) {
	h := newHarness(t)
	e := h.enrollable("gpu-01", seedEnrollToken, time.Hour, "task-token-1")
	_, err := h.store.UpdateOnboarding(context.Background(), e.onboardingID, func(o *domain.Onboarding) error {
		o.EnrollmentTokenHash = enroll.HashToken(seedEnrollToken)
		return nil
	})
	require.NoError(t, err)
	h.mustAdmin(http.StatusOK, "POST", "/api/v1/admin/onboardings/"+e.onboardingID+"/cancel", map[string]any{"reason": "wrong rack"})

	for range 3 {
		r := h.enroll(e.nodeID, seedEnrollToken)
		require.Equal(t, http.StatusUnauthorized, r.status, "%s", r.body)
		code, msg := r.errorOf(t)
		assert.Equal(t, CodeTokenRejected, code)
		assert.Contains(t, msg, "workflow_closed")
		assert.Contains(t, msg, "closed")
	}
	node, found, err := h.store.FindNodeByHost(context.Background(), h.mustSiteOf(e), "gpu-01")
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, domain.NodeOnboarding, node.Status, "the node never became active")
	assert.Empty(t, h.completer.completions())

	// The refusal is on the timeline once, however often the node tried.
	d := h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/onboardings/"+e.onboardingID, nil)
	refused := 0
	for _, row := range d["timeline"].([]any) {
		if row.(map[string]any)["outcome"] == "refused" {
			refused++
			assert.Contains(t, row.(map[string]any)["detail"], "workflow_closed")
		}
	}
	assert.Equal(t, 1, refused)
	assert.Empty(t, h.auditFor("node.enroll"), "a refused token is counted, not audited, even when its refusal is noted")
}
