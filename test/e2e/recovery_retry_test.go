package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/events"
)

// terminalEvent is one terminal onboarding event on the local bus.
type terminalEvent struct {
	Type    string
	Attempt int
}

// terminalEvents waits until the onboarding has n terminal events on the
// bus (completed, failed, manual_intervention_required) and returns them
// in order, or what is there when the wait runs out.
func (e *env) terminalEvents(id string, n int) []terminalEvent {
	e.t.Helper()
	deadline := time.Now().Add(terminalWait)
	for {
		envs, err := e.stack.Bus.ReadAll()
		require.NoError(e.t, err)
		var out []terminalEvent
		for _, ev := range envs {
			switch ev.DetailType {
			case events.OnboardingCompleted, events.OnboardingFailed, events.OnboardingManualInterventionRequired:
			default:
				continue
			}
			var d struct {
				OnboardingID string `json:"onboarding_id"`
				Attempt      int    `json:"attempt"`
			}
			require.NoError(e.t, json.Unmarshal(ev.Detail, &d))
			if d.OnboardingID == id {
				out = append(out, terminalEvent{Type: ev.DetailType, Attempt: d.Attempt})
			}
		}
		if len(out) >= n || time.Now().After(deadline) {
			return out
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// auditActors returns the actor of each successful audit entry of action
// on the onboarding, each with a correlation id.
func (e *env) auditActors(action, id string) []string {
	e.t.Helper()
	audit := e.audit(100)
	var actors []string
	for _, a := range audit["items"].([]any) {
		row := a.(map[string]any)
		if row["action"] == action && row["target"] == "onboarding:"+id && row["result"] == "success" {
			assert.NotEmpty(e.t, row["correlation_id"], "%s is audited with its correlation id", action)
			actors = append(actors, row["actor"].(string))
		}
	}
	return actors
}

// A deploy that fails for a reason other than the datasource stops in
// manual_intervention; retry runs the deploy again in the same attempt
// (release first: MAAS shows Failed deployment), twice here, and each run
// ends with its own terminal event carrying the attempt.
func TestRetryAfterDeployFailure(t *testing.T) {
	t.Parallel()
	e := startStack(t)
	f := e.setup(nil, nil)
	e.hardware("gpu-rt1", "10.10.9.111", "52:54:00:00:a1:01", map[string]any{"deploy_other_failures": 2})
	id := e.onboard(f, "gpu-rt1", "10.10.9.111")

	first := e.waitTerminal(id)
	require.Equal(t, "manual_intervention", first["status"], "error: %v", first["error"])
	require.Contains(t, first["allowed_operations"], "retry")
	stopped := first["stage"]
	assert.Equal(t, "commissioned", first["checkpoint"])

	for run := 1; run <= 2; run++ {
		o := e.recoverOnboarding(id, domain.OpRetry, map[string]any{"reason": "swapped the boot disk"})
		assert.EqualValues(t, 1, o["attempt"], "retry keeps the attempt")
		assert.EqualValues(t, run, o["run"])
		assert.Contains(t, []any{"pending", "running", "completed", "manual_intervention"}, o["status"])
		if run == 1 {
			again := e.waitTerminal(id)
			require.Equal(t, "manual_intervention", again["status"], "the second deploy fails too: %v", again["error"])
			assert.Equal(t, stopped, again["stage"])
		}
	}
	done := e.waitTerminal(id)
	require.Equal(t, "completed", done["status"], "error: %v", done["error"])
	assert.EqualValues(t, 1, done["attempt"])
	assert.EqualValues(t, 2, done["run"])
	assert.Equal(t, first["maas_system_id"], done["maas_system_id"])

	notes := e.timelineNotes(id, "retry")
	require.Len(t, notes, 2)
	assert.Contains(t, notes[0], "retry of stage "+stopped.(string)+" (entering at recover_deploy)")
	released := e.timelineNotes(id, "recover_deploy")
	require.NotEmpty(t, released)
	assert.Contains(t, released[0], "Failed deployment: released", "the retried deploy released the machine first")
	assert.Equal(t, []string{"local-admin", "local-admin"}, e.auditActors("onboarding.retry", id), "each retry is audited with its actor")

	// A run's event may reach the bus through the outbox relay, after its
	// grace, so the bus order need not be the runs' order: events carry
	// occurred_at for that.
	assert.ElementsMatch(t, []terminalEvent{
		{events.OnboardingManualInterventionRequired, 1},
		{events.OnboardingManualInterventionRequired, 1},
		{events.OnboardingCompleted, 1},
	}, e.terminalEvents(id, 3), "each run ends with its own event, attempt 1")

	// retry on a completed onboarding names what is allowed: nothing.
	status, body := e.raw("POST", e.stack.APIURL+"/api/v1/admin/onboardings/"+id+"/retry", e.stack.AdminToken, nil)
	assert.Equal(t, http.StatusConflict, status)
	assert.Contains(t, string(body), "is completed at stage done: retry is not allowed; allowed operations: none")
}

// A running onboarding frozen during commissioning resumes from its
// checkpoint (discovered: MAAS still shows the machine commissioning or
// Ready) and completes in the same attempt.
func TestFreezeThenResumeCompletes(t *testing.T) {
	t.Parallel()
	e := startStack(t)
	f := e.setup(nil, nil)
	e.hardware("gpu-rt2", "10.10.9.121", "52:54:00:00:a2:01", nil)
	id := e.onboard(f, "gpu-rt2", "10.10.9.121")
	e.waitStage(id, "wait_ready")

	frozen := e.recoverOnboarding(id, domain.OpMarkManualIntervention, map[string]any{"reason": "PDU swap"})
	require.Equal(t, "manual_intervention", frozen["status"])
	// Frozen while commissioning: discovered (commissioned if the wait saw
	// Ready just before the freeze).
	cp, _ := frozen["checkpoint"].(string)
	require.Contains(t, []string{"discovered", "commissioned"}, cp)
	detail := e.onboarding(id)
	assert.Contains(t, detail["allowed_operations"], "resume")

	o := e.recoverOnboarding(id, domain.OpResume, map[string]any{"reason": "PDU back"})
	assert.EqualValues(t, 1, o["run"])
	assert.EqualValues(t, 1, o["attempt"])
	assert.NotEqual(t, frozen["execution_id"], o["execution_id"], "a new execution")

	done := e.waitTerminal(id)
	require.Equal(t, "completed", done["status"], "error: %v", done["error"])
	assert.EqualValues(t, 1, done["attempt"])
	assert.Equal(t, "deployed", done["checkpoint"])
	notes := e.timelineNotes(id, "resume")
	require.Len(t, notes, 1)
	assert.Contains(t, notes[0], "resume from checkpoint "+cp+" at stage ")
	assert.Contains(t, notes[0], "PDU back")
	assert.Equal(t, []string{"local-admin"}, e.auditActors("onboarding.resume", id), "the resume is audited with its actor")
	assert.Equal(t, []string{"local-admin"}, e.auditActors("onboarding.mark-manual-intervention", id), "the freeze too")

	// The freeze's event comes from the outbox relay, after its grace, so
	// it may follow the resumed run's: events carry occurred_at for order.
	assert.ElementsMatch(t, []terminalEvent{
		{events.OnboardingManualInterventionRequired, 1},
		{events.OnboardingCompleted, 1},
	}, e.terminalEvents(id, 2), "the freeze and the resumed run each have their event, attempt 1")
}

// A run frozen while MAAS deploys has passed commissioning; MAAS no longer
// shows the machine Ready, so resume is refused with what MAAS shows and
// the operations that fit.
func TestResumeRefusedWhenMAASMovedOn(t *testing.T) {
	t.Parallel()
	e := startStack(t)
	f := e.setup(nil, nil)
	e.hardware("gpu-rt3", "10.10.9.131", "52:54:00:00:a3:01", nil)
	id := e.onboard(f, "gpu-rt3", "10.10.9.131")
	e.waitStage(id, "wait_deployed")

	frozen := e.recoverOnboarding(id, domain.OpMarkManualIntervention, nil)
	require.Equal(t, "commissioned", frozen["checkpoint"])

	status, body := e.raw("POST", e.stack.APIURL+"/api/v1/admin/onboardings/"+id+"/resume", e.stack.AdminToken, nil)
	require.Equal(t, http.StatusConflict, status, "%s", body)
	msg := string(body)
	assert.Contains(t, msg, "MAAS shows machine "+frozen["maas_system_id"].(string))
	assert.Contains(t, msg, "the checkpoint commissioned expects Ready: use ")
	assert.True(t, strings.Contains(msg, "Deploying") || strings.Contains(msg, "Deployed"), "names what MAAS shows: %s", msg)

	after := e.onboarding(id)
	assert.Equal(t, "manual_intervention", after["status"], "nothing changed")
	assert.Nil(t, after["run"], "no new run (run 0 is omitted)")
	assert.Empty(t, e.timelineNotes(id, "resume"))
}
