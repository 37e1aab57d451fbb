package api

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
)

// TestRecoveryRaceLoserAnswers409: a rerun whose start is overtaken by a
// cancel answers 409 naming the cancel's outcome, never 200 with status
// cancelled; a repeat that arrives while the first request's execution is
// not recorded yet answers 409 naming the run, never 200 without an
// execution id. The winner's 2xx carries its execution id.
func TestRecoveryRaceLoserAnswers409(t *testing.T) {
	t.Run("cancel overtakes rerun", func(t *testing.T) {
		h, runner := decomHarness(t, &fakeDecomMachines{status: maas.StatusFailedDiskErasing})
		seedDecommission(t, h, domain.DecommissionManualIntervention, domain.DecomStageRelease, true)
		var cancel response
		runner.onStart = func(domain.Decommission) {
			cancel = h.admin("POST", "/api/v1/admin/decommissions/dec-1/cancel", map[string]any{"reason": "meanwhile"})
		}
		r := h.admin("POST", "/api/v1/admin/decommissions/dec-1/rerun", nil)
		require.Equal(t, http.StatusOK, cancel.status, "%s", cancel.body)
		require.Equal(t, http.StatusConflict, r.status, "%s", r.body)
		_, msg := r.errorOf(t)
		assert.Contains(t, msg, "rerun started attempt 2 run 0, but a concurrent operation won: the decommission is now cancelled")
		d, err := h.store.GetDecommission(context.Background(), "dec-1")
		require.NoError(t, err)
		assert.Equal(t, domain.DecommissionCancelled, d.Status)
	})
	t.Run("repeat while the first starts", func(t *testing.T) {
		h, runner := decomHarness(t, &fakeDecomMachines{status: maas.StatusFailedDiskErasing})
		seedDecommission(t, h, domain.DecommissionManualIntervention, domain.DecomStageRelease, true)
		var repeat response
		runner.onStart = func(domain.Decommission) {
			repeat = h.admin("POST", "/api/v1/admin/decommissions/dec-1/retry", nil)
		}
		first := h.mustAdmin(http.StatusOK, "POST", "/api/v1/admin/decommissions/dec-1/retry", nil)
		assert.NotEmpty(t, first["execution_id"], "the 2xx carries the run it started")
		assert.Equal(t, "pending", first["status"])
		require.Equal(t, http.StatusConflict, repeat.status, "%s", repeat.body)
		_, msg := repeat.errorOf(t)
		assert.Contains(t, msg, "a concurrent retry is starting attempt 1 run 1")
		again := h.mustAdmin(http.StatusOK, "POST", "/api/v1/admin/decommissions/dec-1/retry", nil)
		assert.Equal(t, first["execution_id"], again["execution_id"], "a repeat afterwards answers the run, with its execution")
	})
	t.Run("onboarding rerun overtaken by cancel", func(t *testing.T) {
		h := newHarness(t)
		e := waitingRun(h, "gpu-race", "race-token-0123456789abcdef")
		h.closeAs(e.onboardingID, domain.OnboardingManualIntervention, "EnrollmentTimeout")
		var cancel response
		h.starter.onStart = func() {
			cancel = h.admin("POST", obsPath+"/"+e.onboardingID+"/cancel", map[string]any{"reason": "meanwhile"})
		}
		r := h.admin("POST", obsPath+"/"+e.onboardingID+"/rerun", nil)
		require.Equal(t, http.StatusOK, cancel.status, "%s", cancel.body)
		require.Equal(t, http.StatusConflict, r.status, "%s", r.body)
		_, msg := r.errorOf(t)
		assert.Contains(t, msg, "but a concurrent operation won: the onboarding is now cancelled")
	})
}

// TestConcurrentRecoveryAnswersAgreeWithTheRecord fires the same retry and a
// cancel at once, many times over: every 2xx retry carries an execution id
// and a live status, every loser answers 409, and the record ends as the
// answers say.
func TestConcurrentRecoveryAnswersAgreeWithTheRecord(t *testing.T) {
	for range 20 {
		h, _ := decomHarness(t, &fakeDecomMachines{status: maas.StatusFailedDiskErasing})
		seedDecommission(t, h, domain.DecommissionManualIntervention, domain.DecomStageRelease, true)
		var wg sync.WaitGroup
		answers := make([]response, 4)
		ops := []string{"retry", "retry", "cancel", "retry"}
		for i, op := range ops {
			wg.Add(1)
			go func() {
				defer wg.Done()
				answers[i] = h.admin("POST", "/api/v1/admin/decommissions/dec-1/"+op, nil)
			}()
		}
		wg.Wait()
		d, err := h.store.GetDecommission(context.Background(), "dec-1")
		require.NoError(t, err)
		for i, r := range answers {
			require.Contains(t, []int{http.StatusOK, http.StatusConflict}, r.status, "%s: %s", ops[i], r.body)
			if r.status != http.StatusOK || ops[i] != "retry" {
				continue
			}
			out := r.json(t)
			assert.NotEmpty(t, out["execution_id"], "a 2xx retry carries its execution: %s", r.body)
			assert.Contains(t, []any{"pending", "running"}, out["status"], "a 2xx retry answers the run it started: %s", r.body)
		}
		if d.Status == domain.DecommissionCancelled {
			assert.Equal(t, http.StatusOK, answers[2].status, "the cancel won and said so")
		}
	}
}

// TestAllowedOperationsAndRefusalsThatDependOnMAAS: allowed_operations
// never lists what the record itself rules out (adopt of a decommission
// stopped before its drain finished, resume of an unknown checkpoint), and
// a listed operation that MAAS refuses says the refusal is MAAS's (a frozen
// onboarding whose machine is mid-deploy).
func TestAllowedOperationsAndRefusalsThatDependOnMAAS(t *testing.T) {
	t.Run("decommission stopped in the drain", func(t *testing.T) {
		h, _ := decomHarness(t, &fakeDecomMachines{status: maas.StatusDeployed})
		seedDecommission(t, h, domain.DecommissionManualIntervention, domain.DecomStageDrain, false)
		got := h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/decommissions/dec-1", nil)
		assert.NotContains(t, got["allowed_operations"], "adopt")
		r := h.admin("POST", "/api/v1/admin/decommissions/dec-1/adopt", nil)
		require.Equal(t, http.StatusConflict, r.status)
		_, msg := r.errorOf(t)
		assert.Contains(t, msg, "adopt is not allowed (it stopped before its drain finished")
	})
	t.Run("decommission refusal by MAAS", func(t *testing.T) {
		h, _ := decomHarness(t, &fakeDecomMachines{status: maas.StatusFailedDiskErasing})
		seedDecommission(t, h, domain.DecommissionManualIntervention, domain.DecomStageRelease, true)
		got := h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/decommissions/dec-1", nil)
		require.Contains(t, got["allowed_operations"], "resume")
		r := h.admin("POST", "/api/v1/admin/decommissions/dec-1/resume", nil)
		require.Equal(t, http.StatusConflict, r.status)
		_, msg := r.errorOf(t)
		assert.Contains(t, msg, "the record allows resume; this refusal depends on what MAAS shows now")
	})
	t.Run("frozen onboarding while MAAS deploys", func(t *testing.T) {
		h := newHarness(t)
		h.machines.set("sys-1", maas.StatusDeploying)
		id := h.stopped(domain.OnboardingManualIntervention, domain.StageWaitDeployed, domain.CheckpointCommissioned)
		got := h.mustAdmin(http.StatusOK, "GET", obsPath+"/"+id, nil)
		require.Contains(t, got["allowed_operations"], "resume")
		r := h.admin("POST", obsPath+"/"+id+"/resume", nil)
		require.Equal(t, http.StatusConflict, r.status)
		_, msg := r.errorOf(t)
		assert.Contains(t, msg, "MAAS shows machine sys-1 Deploying")
		assert.Contains(t, msg, "the record allows resume; this refusal depends on what MAAS shows now")
	})
	t.Run("onboarding with a checkpoint no rule knows", func(t *testing.T) {
		h := newHarness(t)
		id := h.stopped(domain.OnboardingManualIntervention, domain.StageStorage, domain.Checkpoint("half-done"))
		got := h.mustAdmin(http.StatusOK, "GET", obsPath+"/"+id, nil)
		assert.NotContains(t, got["allowed_operations"], "resume")
	})
}
