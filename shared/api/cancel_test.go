package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/secrets"
)

const obsPath = "/api/v1/admin/onboardings"

// startOnboarding creates an onboarding for host and returns its id.
func (h *harness) startOnboarding(fx fixture, host string) string {
	h.t.Helper()
	return h.mustAdmin(http.StatusAccepted, "POST", obsPath, fx.onboarding(host))["id"].(string)
}

// setStatus moves an onboarding to status at stage, as the workflow would.
func (h *harness) setStatus(id string, status domain.OnboardingStatus, stage domain.Stage) {
	h.t.Helper()
	_, err := h.store.UpdateOnboarding(context.Background(), id, func(o *domain.Onboarding) error {
		o.Status, o.Stage = status, stage
		if !domain.IsOpenStatus(status) || status == domain.OnboardingManualIntervention {
			now := h.clock.Now()
			o.CompletedAt = &now
			o.Error = &domain.Failure{Code: "PXEPreflightError", Message: "boot interface not linked", Stage: stage}
		}
		return nil
	})
	require.NoError(h.t, err)
}

func TestCancelOnboarding(t *testing.T) {
	tests := []struct {
		name        string
		status      domain.OnboardingStatus // the onboarding's status before the cancel
		stage       domain.Stage
		body        any
		wantMessage string
	}{
		{name: "pending, no body", status: domain.OnboardingPending, stage: domain.StageValidate, wantMessage: "cancelled by alice"},
		{name: "running with a reason", status: domain.OnboardingRunning, stage: domain.StageWaitEnrollment,
			body: map[string]any{"reason": "  host re-cabled; CHG-77  "}, wantMessage: "host re-cabled; CHG-77"},
		{name: "manual intervention, empty reason", status: domain.OnboardingManualIntervention, stage: domain.StagePXEPreflight,
			body: map[string]any{"reason": ""}, wantMessage: "cancelled by alice"},
		{name: "whitespace body", status: domain.OnboardingRunning, stage: domain.StageDeploy, body: " \n", wantMessage: "cancelled by alice"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			fx := h.fixture()
			id := h.startOnboarding(fx, "gpu-01")
			h.setStatus(id, tc.status, tc.stage)

			// The open onboarding holds the host.
			h.mustAdmin(http.StatusConflict, "POST", obsPath, fx.onboarding("gpu-01"))

			o := h.mustAdmin(http.StatusOK, "POST", obsPath+"/"+id+"/cancel", tc.body)
			assert.Equal(t, "cancelled", o["status"])
			assert.Equal(t, string(tc.stage), o["stage"])
			assert.Equal(t, map[string]any{"code": "Cancelled", "message": tc.wantMessage, "stage": string(tc.stage)}, o["error"])
			assert.NotEmpty(t, o["completed_at"])
			assert.Equal(t, []stopCall{{executionID: "exec-" + id, cause: tc.wantMessage}}, h.stopper.stops())

			stored, err := h.store.GetOnboarding(context.Background(), id)
			require.NoError(t, err)
			assert.Equal(t, domain.OnboardingCancelled, stored.Status)
			require.NotNil(t, stored.CompletedAt)
			assert.True(t, stored.CompletedAt.Equal(h.clock.Now()))

			detail := h.mustAdmin(http.StatusOK, "GET", obsPath+"/"+id, nil)
			tl := detail["timeline"].([]any)
			require.NotEmpty(t, tl)
			note := tl[len(tl)-1].(map[string]any)
			assert.Equal(t, "note", note["kind"])
			assert.Equal(t, "cancel", note["source"])
			assert.Equal(t, "cancelled", note["outcome"])
			assert.Equal(t, fmt.Sprintf("status cancelled (was %s) at stage %s: %s", tc.status, tc.stage, tc.wantMessage), note["detail"])

			audit := h.auditFor("onboarding.cancel")
			require.Len(t, audit, 1)
			assert.Equal(t, "success", audit[0].Result)
			assert.Equal(t, "alice", audit[0].Actor)
			assert.Equal(t, "onboarding:"+id, audit[0].Target)

			// The host is free again.
			second := h.mustAdmin(http.StatusAccepted, "POST", obsPath, fx.onboarding("gpu-01"))
			assert.NotEqual(t, id, second["id"])
		})
	}
}

func TestCancelOnboardingRefusesClosedOnes(t *testing.T) {
	for _, status := range []domain.OnboardingStatus{domain.OnboardingCompleted, domain.OnboardingFailed, domain.OnboardingCancelled} {
		t.Run(string(status), func(t *testing.T) {
			h := newHarness(t)
			id := h.startOnboarding(h.fixture(), "gpu-01")
			h.setStatus(id, status, domain.StageDeploy)
			before, err := h.store.GetOnboarding(context.Background(), id)
			require.NoError(t, err)

			r := h.admin("POST", obsPath+"/"+id+"/cancel", map[string]any{"reason": "x"})
			require.Equal(t, http.StatusConflict, r.status, "%s", r.body)
			code, msg := r.errorOf(t)
			assert.Equal(t, CodeConflict, code)
			assert.Contains(t, msg, "is already "+status)
			assert.Empty(t, h.stopper.stops(), "a closed onboarding's execution is left alone")

			after, err := h.store.GetOnboarding(context.Background(), id)
			require.NoError(t, err)
			assert.Equal(t, before, after)
			audit := h.auditFor("onboarding.cancel")
			require.Len(t, audit, 1)
			assert.Equal(t, "failure:conflict", audit[0].Result)
		})
	}
}

func TestCancelOnboardingRejectsBadRequests(t *testing.T) {
	tests := []struct {
		name   string
		body   any
		status int
		field  string
	}{
		{name: "unknown field", body: map[string]any{"reason": "x", "force": true}, status: 400, field: "force"},
		{name: "reason too long", body: map[string]any{"reason": strings.Repeat("r", 501)}, status: 400, field: "reason"},
		{name: "control characters", body: map[string]any{"reason": "a\x1b[31mb"}, status: 400, field: "reason"},
		{name: "reason not a string", body: map[string]any{"reason": 5}, status: 400, field: "reason"},
		{name: "not an object", body: `["x"]`, status: 400, field: "request body"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			id := h.startOnboarding(h.fixture(), "gpu-01")
			r := h.admin("POST", obsPath+"/"+id+"/cancel", tc.body)
			require.Equal(t, tc.status, r.status, "%s", r.body)
			assert.Equal(t, tc.field, r.json(t)["error"].(map[string]any)["field"])
			assert.Empty(t, h.stopper.stops())
			o, err := h.store.GetOnboarding(context.Background(), id)
			require.NoError(t, err)
			assert.Equal(t, domain.OnboardingPending, o.Status)
		})
	}

	t.Run("500 characters are fine", func(t *testing.T) {
		h := newHarness(t)
		id := h.startOnboarding(h.fixture(), "gpu-01")
		o := h.mustAdmin(http.StatusOK, "POST", obsPath+"/"+id+"/cancel", map[string]any{"reason": strings.Repeat("é", 500)})
		assert.Equal(t, "cancelled", o["status"])
	})
	t.Run("unknown onboarding", func(t *testing.T) {
		h := newHarness(t)
		r := h.admin("POST", obsPath+"/nope/cancel", nil)
		require.Equal(t, http.StatusNotFound, r.status, "%s", r.body)
		code, _ := r.errorOf(t)
		assert.Equal(t, CodeNotFound, code)
		assert.Empty(t, h.stopper.stops())
	})
	t.Run("not an admin", func(t *testing.T) {
		h := newHarness(t)
		id := h.startOnboarding(h.fixture(), "gpu-01")
		r := h.do(call{method: "POST", path: obsPath + "/" + id + "/cancel", token: userToken})
		assert.Equal(t, http.StatusForbidden, r.status)
		assert.Empty(t, h.stopper.stops())
	})
}

func TestCancelOnboardingStopFailureChangesNothing(t *testing.T) {
	h := newHarness(t)
	fx := h.fixture()
	id := h.startOnboarding(fx, "gpu-01")
	h.setStatus(id, domain.OnboardingRunning, domain.StageDeploy)
	before, err := h.store.GetOnboarding(context.Background(), id)
	require.NoError(t, err)
	h.stopper.err = errors.New("sfn: throttled")

	r := h.admin("POST", obsPath+"/"+id+"/cancel", map[string]any{"reason": "x"})
	require.Equal(t, http.StatusServiceUnavailable, r.status, "%s", r.body)
	code, msg := r.errorOf(t)
	assert.Equal(t, CodeUnavailable, code)
	assert.Contains(t, msg, "was not changed")
	assert.NotContains(t, msg, "throttled", "the cause is logged, not sent")
	assert.Contains(t, h.logs.String(), "sfn: throttled")

	after, err := h.store.GetOnboarding(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, before, after)
	h.mustAdmin(http.StatusConflict, "POST", obsPath, fx.onboarding("gpu-01"))
	assert.Equal(t, "failure:service_unavailable", h.auditFor("onboarding.cancel")[0].Result)

	h.stopper.err = nil
	assert.Equal(t, "cancelled", h.mustAdmin(http.StatusOK, "POST", obsPath+"/"+id+"/cancel", nil)["status"], "a retry succeeds")
}

// TestCancelOnboardingLosesToTheWorkflow: the run ends while the stop is in
// flight; its status stands.
func TestCancelOnboardingLosesToTheWorkflow(t *testing.T) {
	h := newHarness(t)
	id := h.startOnboarding(h.fixture(), "gpu-01")
	h.setStatus(id, domain.OnboardingRunning, domain.StageCompletionGates)
	h.stopper.before = func() { h.setStatus(id, domain.OnboardingCompleted, domain.StageDone) }

	r := h.admin("POST", obsPath+"/"+id+"/cancel", nil)
	require.Equal(t, http.StatusConflict, r.status, "%s", r.body)
	_, msg := r.errorOf(t)
	assert.Contains(t, msg, "is already completed")
	o, err := h.store.GetOnboarding(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, domain.OnboardingCompleted, o.Status)
}

func TestCancelOnboardingWithoutExecution(t *testing.T) {
	h := newHarness(t)
	id := h.startOnboarding(h.fixture(), "gpu-01")
	_, err := h.store.UpdateOnboarding(context.Background(), id, func(o *domain.Onboarding) error {
		o.ExecutionID = ""
		return nil
	})
	require.NoError(t, err)

	assert.Equal(t, "cancelled", h.mustAdmin(http.StatusOK, "POST", obsPath+"/"+id+"/cancel", nil)["status"])
	assert.Empty(t, h.stopper.stops(), "nothing to stop")
}

func TestCancelOnboardingWithoutStopperIsUnavailable(t *testing.T) {
	h := newHarness(t)
	id := h.startOnboarding(h.fixture(), "gpu-01")
	handler := New(Config{}, Deps{
		Store: h.store, Secrets: secrets.NewFileStore(filepath.Join(t.TempDir(), "s.json")), Starter: h.starter,
		Completer: h.completer, Prober: h.prober, Auth: NewStaticTokens(map[string]Principal{adminToken: {Subject: "alice", Admin: true}}),
		Clock: h.clock, Logger: slog.New(slog.DiscardHandler),
	})
	h.handler = handler
	r := h.admin("POST", obsPath+"/"+id+"/cancel", nil)
	assert.Equal(t, http.StatusServiceUnavailable, r.status, "%s", r.body)
	o, err := h.store.GetOnboarding(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, domain.OnboardingPending, o.Status)
}
