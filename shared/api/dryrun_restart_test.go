package api

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
)

func TestRestartCleanDryRunSaysWhatWouldHappenAndWritesNothing(t *testing.T) {
	h := newHarness(t)
	id := h.stopped(domain.OnboardingFailed, domain.StageWaitDeployed, "")
	before := h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/onboardings/"+id, nil)
	starts := len(h.starter.started())
	audits := len(h.auditFor("onboarding.restart-clean"))

	plan := h.mustAdmin(http.StatusOK, "POST", "/api/v1/admin/onboardings/"+id+"/restart-clean?dry_run=true", map[string]any{"reason": "check first"})
	assert.Equal(t, true, plan["dry_run"])
	assert.Equal(t, "onboarding.restart-clean", plan["action"])
	assert.Equal(t, true, plan["revokes_tokens"])
	m := plan["machine"].(map[string]any)
	assert.Equal(t, "sys-1", m["system_id"])
	assert.Equal(t, true, m["release"])
	assert.Equal(t, false, m["delete"])
	assert.Contains(t, plan["summary"], "start attempt 2 of gpu-rt from the reset: release MAAS machine sys-1")
	assert.NotEmpty(t, plan["erase_mode"])
	require.NotNil(t, plan["node"])
	assert.Equal(t, domain.NodeOnboarding, plan["node"].(map[string]any)["status_after"])

	after := h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/onboardings/"+id, nil)
	assert.Equal(t, before["attempt"], after["attempt"], "nothing reopened")
	assert.Equal(t, before["status"], after["status"])
	assert.Len(t, h.starter.started(), starts, "no execution")
	assert.Len(t, h.auditFor("onboarding.restart-clean"), audits, "a dry run is not audited")

	r := h.admin("POST", "/api/v1/admin/onboardings/"+id+"/restart-clean?dry_run=maybe", nil)
	assert.Equal(t, http.StatusBadRequest, r.status)

	// Refused as the operation would be: a running onboarding.
	running := h.startOnboarding(h.fixture(), "gpu-run")
	r = h.admin("POST", "/api/v1/admin/onboardings/"+running+"/restart-clean?dry_run=true", nil)
	assert.Equal(t, http.StatusConflict, r.status)
	code, msg := r.errorOf(t)
	assert.Equal(t, CodeConflict, code)
	assert.Contains(t, msg, "restart-clean is not allowed")

	// The real operation still runs, audited.
	h.mustAdmin(http.StatusOK, "POST", "/api/v1/admin/onboardings/"+id+"/restart-clean", map[string]any{"reason": "now"})
	successes := 0
	for _, e := range h.auditFor("onboarding.restart-clean") {
		if e.Result == resultSuccess {
			successes++
		}
	}
	assert.Equal(t, 1, successes, "only the real operation is recorded as done")
}
