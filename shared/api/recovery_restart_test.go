package api

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/enroll"
	"github.com/maasflow/maasflow/shared/maas"
	"github.com/maasflow/maasflow/shared/store"
)

// enteredStages are the start stages of the recoveries started so far.
func (h *harness) enteredStages() []domain.Stage {
	h.starter.mu.Lock()
	defer h.starter.mu.Unlock()
	return append([]domain.Stage(nil), h.starter.stages...)
}

// waitingRun is an onboarding whose attempt 1 waits for its node, with the
// deploy's token stored and recorded on the onboarding.
func waitingRun(h *harness, host, token string) enrollable {
	h.t.Helper()
	e := h.enrollable(host, token, time.Hour, "task-token-"+host)
	_, err := h.store.UpdateOnboarding(context.Background(), e.onboardingID, func(o *domain.Onboarding) error {
		o.EnrollmentTokenHash = enroll.HashToken(token)
		o.MAASSystemID = "sys-" + host
		return nil
	})
	require.NoError(h.t, err)
	h.machines.set("sys-"+host, maas.StatusReady)
	return e
}

// closeAs closes the onboarding's run as the workflow's FinishOnboarding
// does.
func (h *harness) closeAs(id string, status domain.OnboardingStatus, code string) {
	h.t.Helper()
	now := h.clock.Now().UTC()
	_, err := h.store.CloseOnboarding(context.Background(), id, func(o *domain.Onboarding) error {
		o.Status, o.CompletedAt, o.EnrollmentTaskToken = status, &now, ""
		o.Error = &domain.Failure{Code: code, Message: code, Stage: o.Stage}
		return nil
	})
	require.NoError(h.t, err)
}

func permutations(xs []string) [][]string {
	if len(xs) <= 1 {
		return [][]string{append([]string(nil), xs...)}
	}
	var out [][]string
	for i := range xs {
		rest := append(append([]string(nil), xs[:i]...), xs[i+1:]...)
		for _, p := range permutations(rest) {
			out = append(out, append([]string{xs[i]}, p...))
		}
	}
	return out
}

// TestRecordsAgreeInEveryInterleaving plays every order in which the node's
// enrollment (with attempt 1's token), the enrollment wait's timeout,
// an operator's cancel and an operator's rerun can arrive (and the same
// with restart-clean and adopt in place of rerun), and after each
// step checks that the onboarding, its node and its token rows describe one
// story (requirements readiness §8.5): a node is active only for a completed onboarding;
// a token is usable only by the open attempt it was issued for; a refused
// enrollment says why and is on the timeline; attempt and completed_at
// follow the run in progress.
func TestRecordsAgreeInEveryInterleaving(t *testing.T) {
	const token = "interleaved-enrollment-token-9Qw2"
	sets := [][]string{
		{"enroll", "timeout", "cancel", "rerun"},
		{"enroll", "timeout", "cancel", "restart-clean", "adopt"},
	}
	for _, set := range sets {
		for _, order := range permutations(set) {
			t.Run(strings.Join(order, ","), func(t *testing.T) {
				h := newHarness(t)
				e := waitingRun(h, "gpu-il", token)
				attempts, enrolled := 1, false
				for _, step := range order {
					if playStep(t, h, e, token, step) {
						switch step {
						case "enroll":
							enrolled = true
						case "rerun", "restart-clean":
							attempts++
						}
					}
					recordsAgree(t, h, e, token, attempts, enrolled)
				}
			})
		}
	}
}

// playStep plays one event against the onboarding and reports whether it
// took effect.
func playStep(t *testing.T, h *harness, e enrollable, token, step string) bool {
	t.Helper()
	ctx := context.Background()
	before, err := h.store.GetOnboarding(ctx, e.onboardingID)
	require.NoError(t, err)
	waiting := before.Attempt == 1 && before.Run == 0 && (before.Status == domain.OnboardingRunning || before.Status == domain.OnboardingPending)
	switch step {
	case "enroll":
		r := h.enroll(e.nodeID, token)
		if waiting {
			require.Equal(t, http.StatusOK, r.status, "%s", r.body)
			// The wait is completed: the gates pass for this attempt and
			// the workflow records completion.
			_, err := h.store.UpdateOnboarding(ctx, e.onboardingID, func(o *domain.Onboarding) error {
				now := h.clock.Now().UTC()
				o.Status, o.Stage, o.CompletedAt, o.EnrollmentTaskToken = domain.OnboardingCompleted, domain.StageDone, &now, ""
				return nil
			})
			require.NoError(t, err)
			return true
		}
		require.Equal(t, http.StatusUnauthorized, r.status, "%s", r.body)
		_, msg := r.errorOf(t)
		assert.NotContains(t, string(r.body), token)
		switch {
		case before.Attempt != 1:
			assert.Contains(t, msg, store.TokenStaleAttempt)
		case before.Status == domain.OnboardingCompleted:
			assert.Contains(t, msg, store.TokenConsumed)
		default:
			assert.Contains(t, msg, store.TokenWorkflowClosed)
		}
		return false
	case "timeout":
		// Only attempt 1's first wait can time out, and only while it
		// still waits.
		if waiting {
			h.closeAs(e.onboardingID, domain.OnboardingManualIntervention, "EnrollmentTimeout")
			return true
		}
		return false
	case "cancel":
		r := h.admin("POST", obsPath+"/"+e.onboardingID+"/cancel", map[string]any{"reason": "wrong rack"})
		if domain.Allows(before.Status, before.Stage, domain.OpCancel) {
			require.Equal(t, http.StatusOK, r.status, "%s", r.body)
			return true
		}
		require.Equal(t, http.StatusConflict, r.status, "%s", r.body)
		return false
	}
	// rerun, restart-clean, adopt
	r := h.admin("POST", obsPath+"/"+e.onboardingID+"/"+step, nil)
	if domain.Allows(before.Status, before.Stage, domain.RecoveryOperation(step)) {
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		return true
	}
	require.Equal(t, http.StatusConflict, r.status, "%s", r.body)
	assert.Contains(t, string(r.body), "allowed operations")
	return false
}

// recordsAgree checks the onboarding, its node and attempt 1's token
// against each other.
func recordsAgree(t *testing.T, h *harness, e enrollable, token string, attempts int, enrolled bool) {
	t.Helper()
	ctx := context.Background()
	o, err := h.store.GetOnboarding(ctx, e.onboardingID)
	require.NoError(t, err)
	node, err := h.store.GetNode(ctx, e.nodeID)
	require.NoError(t, err)
	tok, err := h.store.GetEnrollmentToken(ctx, enroll.HashToken(token))
	require.NoError(t, err)

	assert.Equal(t, attempts, o.Attempt, "one attempt per rerun or restart-clean")
	if domain.IsOpenStatus(o.Status) && o.Status != domain.OnboardingManualIntervention {
		assert.Nil(t, o.CompletedAt, "a run in progress has no completed_at")
	} else {
		assert.NotNil(t, o.CompletedAt, "a %s run has completed_at", o.Status)
	}
	// A node is active only with a completed onboarding, and then its
	// token is the consumed one of the completed attempt.
	assert.Equal(t, node.Status == domain.NodeActive, o.Status == domain.OnboardingCompleted,
		"node %s, onboarding %s", node.Status, o.Status)
	assert.Equal(t, enrolled, tok.ConsumedAt != nil)
	if o.Status == domain.OnboardingCompleted {
		assert.Equal(t, o.Attempt, tok.Attempt, "the completed attempt consumed its token")
		assert.NotNil(t, node.EnrolledAt)
	}
	// The token is usable only while its attempt is open and waiting.
	usable := tok.ConsumedAt == nil && tok.RevokedAt == nil
	open := o.Attempt == tok.Attempt && (o.Status == domain.OnboardingRunning || o.Status == domain.OnboardingPending)
	assert.False(t, usable && !open, "attempt %d's token is still usable while the onboarding is %s on attempt %d", tok.Attempt, o.Status, o.Attempt)
	// Every refusal is on the timeline once, naming the attempt.
	rows, err := h.store.ListOnboardingEvents(ctx, o.ID)
	require.NoError(t, err)
	refusals := 0
	for _, r := range rows {
		if r.Outcome == "refused" {
			refusals++
			assert.Equal(t, 1, r.Attempt)
			assert.Contains(t, r.Detail, "attempt 1")
		}
	}
	assert.LessOrEqual(t, refusals, 1, "one refusal row per token")
}

func TestRestartCleanStartsANewAttemptAtResetAndRevokesEveryToken(t *testing.T) {
	h := newHarness(t)
	const token = "restart-clean-token-5Tg8aa"
	e := waitingRun(h, "gpu-rc", token)
	// A bootstrap reissued earlier for the node is revoked too.
	other := enroll.HashToken("an-older-bundle-token-77")
	ctx := context.Background()
	require.NoError(t, h.store.PutEnrollmentToken(ctx, domain.EnrollmentToken{Hash: other, NodeID: e.nodeID, ExpiresAt: h.clock.Now().Add(time.Hour)}))
	require.NoError(t, h.store.AddNodeTokenRef(ctx, e.nodeID, other))
	h.closeAs(e.onboardingID, domain.OnboardingFailed, "DeployFailed")

	o := h.mustAdmin(http.StatusOK, "POST", obsPath+"/"+e.onboardingID+"/restart-clean", map[string]any{"reason": "new NVMe"})
	assert.Equal(t, "pending", o["status"])
	assert.InDelta(t, 2, o["attempt"], 0)
	assert.Nil(t, o["completed_at"])
	assert.Nil(t, o["error"])
	assert.Equal(t, []domain.Stage{domain.StageReset}, h.enteredStages())
	for _, hash := range []string{enroll.HashToken(token), other} {
		tok, err := h.store.GetEnrollmentToken(ctx, hash)
		require.NoError(t, err)
		assert.True(t, tok.RevokedAt != nil || tok.ConsumedAt != nil, "token %s revoked", hash[:8])
	}
	assert.Equal(t, http.StatusUnauthorized, h.enroll(e.nodeID, "an-older-bundle-token-77").status)

	// A repeat answers the attempt it started; nothing starts twice.
	again := h.mustAdmin(http.StatusOK, "POST", obsPath+"/"+e.onboardingID+"/restart-clean", nil)
	assert.InDelta(t, 2, again["attempt"], 0)
	assert.Len(t, h.enteredStages(), 1)
	require.Len(t, h.auditFor("onboarding.restart-clean"), 2)
	entry := h.auditFor("onboarding.restart-clean")[0]
	assert.Equal(t, "alice", entry.Actor)
	assert.NotEmpty(t, entry.CorrelationID)
	notes := 0
	rows, err := h.store.ListOnboardingEvents(ctx, e.onboardingID)
	require.NoError(t, err)
	for _, r := range rows {
		if r.Source == "restart-clean" {
			notes++
			assert.Contains(t, r.Detail, "new NVMe")
			assert.Equal(t, 2, r.Attempt)
		}
	}
	assert.Equal(t, 1, notes)
}

func TestRestartCleanIsRefusedForAnActiveNode(t *testing.T) {
	h := newHarness(t)
	const token = "active-node-token-1Lp0qq"
	e := waitingRun(h, "gpu-an", token)
	require.Equal(t, http.StatusOK, h.enroll(e.nodeID, token).status)
	h.closeAs(e.onboardingID, domain.OnboardingManualIntervention, "CompletionGateError")

	r := h.admin("POST", obsPath+"/"+e.onboardingID+"/restart-clean", nil)
	require.Equal(t, http.StatusConflict, r.status, "%s", r.body)
	_, msg := r.errorOf(t)
	assert.Contains(t, msg, "is active")
	assert.Contains(t, msg, "decommission")
	assert.Empty(t, h.enteredStages())
	o, err := h.store.GetOnboarding(context.Background(), e.onboardingID)
	require.NoError(t, err)
	assert.Equal(t, domain.OnboardingManualIntervention, o.Status, "nothing changed")
	assert.Equal(t, 1, o.Attempt)

	// adopt is the way on: the same attempt, entering at adopt, the node
	// left active for the completion gates to judge.
	h.machines.set("sys-gpu-an", maas.StatusDeployed)
	a := h.mustAdmin(http.StatusOK, "POST", obsPath+"/"+e.onboardingID+"/adopt", map[string]any{"reason": "gates flaked"})
	assert.Equal(t, "pending", a["status"])
	assert.InDelta(t, 1, a["attempt"], 0)
	assert.InDelta(t, 1, a["run"], 0)
	assert.Equal(t, []domain.Stage{domain.StageAdopt}, h.enteredStages())
	node, err := h.store.GetNode(context.Background(), e.nodeID)
	require.NoError(t, err)
	assert.Equal(t, domain.NodeActive, node.Status)
	tok, err := h.store.GetEnrollmentToken(context.Background(), enroll.HashToken(token))
	require.NoError(t, err)
	assert.NotNil(t, tok.ConsumedAt, "adopt keeps the attempt's consumed token for the gates")

	again := h.mustAdmin(http.StatusOK, "POST", obsPath+"/"+e.onboardingID+"/adopt", nil)
	assert.InDelta(t, 1, again["run"], 0, "a repeat starts nothing")
	assert.Len(t, h.enteredStages(), 1)
}

func TestAdoptAndRestartCleanAreListedAndRefusedByState(t *testing.T) {
	h := newHarness(t)
	e := waitingRun(h, "gpu-ls", "listed-token-00aa11")
	r := h.admin("POST", obsPath+"/"+e.onboardingID+"/adopt", nil)
	require.Equal(t, http.StatusConflict, r.status)
	assert.Contains(t, string(r.body), "adopt is not allowed; allowed operations: cancel, mark-manual-intervention")

	h.closeAs(e.onboardingID, domain.OnboardingManualIntervention, "DeployFailed")
	detail := h.mustAdmin(http.StatusOK, "GET", obsPath+"/"+e.onboardingID, nil)
	assert.Contains(t, detail["allowed_operations"], "restart-clean")
	assert.Contains(t, detail["allowed_operations"], "adopt")
}

func TestRestartCleanStartFailureClosesTheNewAttempt(t *testing.T) {
	h := newHarness(t)
	e := waitingRun(h, "gpu-sf", "start-failure-token-3Ks1")
	h.closeAs(e.onboardingID, domain.OnboardingManualIntervention, "DeployFailed")
	h.starter.mu.Lock()
	h.starter.err = errors.New("state machine throttled")
	h.starter.mu.Unlock()

	r := h.admin("POST", obsPath+"/"+e.onboardingID+"/restart-clean", nil)
	require.Equal(t, http.StatusServiceUnavailable, r.status, "%s", r.body)
	o, err := h.store.GetOnboarding(context.Background(), e.onboardingID)
	require.NoError(t, err)
	assert.Equal(t, domain.OnboardingFailed, o.Status)
	assert.Equal(t, 2, o.Attempt)
	assert.NotNil(t, o.CompletedAt)
	rows, err := h.store.ListOnboardingEvents(context.Background(), o.ID)
	require.NoError(t, err)
	last := rows[len(rows)-1]
	assert.Equal(t, 2, last.Attempt, "the start failure is noted on the attempt it closed")
	assert.Equal(t, "failed", last.Outcome)
}

func TestAdoptIsRefusedForAMachineNoStageContinuesFrom(t *testing.T) {
	tests := []struct {
		status maas.Status
		fits   string
	}{
		{maas.StatusFailedDeployment, "retry"},
		{maas.StatusCommissioning, "wait until MAAS settles"},
		{maas.StatusNew, "rerun or restart-clean"},
		{maas.StatusBroken, "mark it fixed"},
	}
	for _, tc := range tests {
		t.Run(tc.status.String(), func(t *testing.T) {
			h := newHarness(t)
			e := waitingRun(h, "gpu-nf", "no-fit-token-77Pq")
			h.closeAs(e.onboardingID, domain.OnboardingManualIntervention, "DeployFailed")
			h.machines.set("sys-gpu-nf", tc.status)

			r := h.admin("POST", obsPath+"/"+e.onboardingID+"/adopt", nil)
			require.Equal(t, http.StatusConflict, r.status, "%s", r.body)
			_, msg := r.errorOf(t)
			assert.Contains(t, msg, "MAAS shows machine sys-gpu-nf "+tc.status.String())
			assert.Contains(t, msg, tc.fits)
			assert.Empty(t, h.enteredStages(), "nothing started")
			o, err := h.store.GetOnboarding(context.Background(), e.onboardingID)
			require.NoError(t, err)
			assert.Equal(t, domain.OnboardingManualIntervention, o.Status)
			assert.Zero(t, o.Run)
		})
	}
}

// TestRestartCleanRefusedForAHeldHostRevokesNothing: another onboarding of
// the host runs, so restart-clean of the earlier one is a 409, and the
// running one's token stays usable.
func TestRestartCleanRefusedForAHeldHostRevokesNothing(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	fx := h.fixture()
	first := h.mustAdmin(http.StatusAccepted, "POST", obsPath, fx.onboarding("gpu-hx"))["id"].(string)
	h.closeAs(first, domain.OnboardingFailed, "DeployFailed")
	second := h.mustAdmin(http.StatusAccepted, "POST", obsPath, fx.onboarding("gpu-hx"))
	hash := enroll.HashToken("the-running-onboardings-token-1")
	nodeID := second["node_id"].(string)
	require.NoError(t, h.store.PutEnrollmentToken(ctx, domain.EnrollmentToken{Hash: hash, NodeID: nodeID,
		OnboardingID: second["id"].(string), Attempt: 1, ExpiresAt: h.clock.Now().Add(time.Hour)}))
	require.NoError(t, h.store.AddNodeTokenRef(ctx, nodeID, hash))

	r := h.admin("POST", obsPath+"/"+first+"/restart-clean", nil)
	require.Equal(t, http.StatusConflict, r.status, "%s", r.body)
	tok, err := h.store.GetEnrollmentToken(ctx, hash)
	require.NoError(t, err)
	assert.Nil(t, tok.RevokedAt, "the running onboarding's token is untouched")
	assert.Empty(t, h.enteredStages())
}
