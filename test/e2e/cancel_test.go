package e2e

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/asl"
	"github.com/maasflow/maasflow/shared/domain"
)

// waitStage polls the onboarding until it is running in stage, and returns
// it.
func (e *env) waitStage(id, stage string) map[string]any {
	e.t.Helper()
	deadline := time.Now().Add(terminalWait)
	for {
		o := e.onboarding(id)
		if o["status"] == "running" && o["stage"] == stage {
			return o
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("onboarding %s is %v at stage %v, never running at %s", id, o["status"], o["stage"], stage)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// cancel cancels an onboarding and checks what every cancel leaves: status
// cancelled, the Cancelled failure at the stage it stopped in, completed_at,
// the note on the timeline, no execution running, an audit entry.
func (e *env) cancel(id, reason, stage string) map[string]any {
	e.t.Helper()
	o := e.recoverOnboarding(id, domain.OpCancel, map[string]any{"reason": reason})
	assert.Equal(e.t, "cancelled", o["status"])
	assert.Equal(e.t, stage, o["stage"])
	assert.Equal(e.t, map[string]any{"code": "Cancelled", "message": reason, "stage": stage}, o["error"])
	assert.NotEmpty(e.t, o["completed_at"])

	ex, err := e.stack.Engine.DescribeExecution(o["execution_id"].(string))
	require.NoError(e.t, err)
	assert.NotEqual(e.t, asl.StatusRunning, ex.Status, "nothing runs after the cancel")

	detail := e.onboarding(id)
	var notes []string
	for _, r := range detail["timeline"].([]any) {
		if row := r.(map[string]any); row["source"] == "cancel" {
			notes = append(notes, row["detail"].(string))
		}
	}
	assert.Len(e.t, notes, 1, "one cancel note on the timeline")

	audit := e.audit(50)
	found := false
	for _, a := range audit["items"].([]any) {
		row := a.(map[string]any)
		found = found || row["action"] == "onboarding.cancel" && row["target"] == "onboarding:"+id && row["result"] == "success"
	}
	assert.True(e.t, found, "audit entry for the cancel")
	return o
}

func TestCancelWhileWaitingForEnrollment(t *testing.T) {
	t.Parallel()
	e := startStack(t)
	f := e.setup(nil, map[string]any{"enrollment_timeout_seconds": 86400})
	e.hardware("gpu-c1", "10.10.4.11", "52:54:00:00:41:01", map[string]any{"never_enrolls": true})
	id := e.onboard(f, "gpu-c1", "10.10.4.11")
	o := e.waitStage(id, "wait_enrollment")

	ex, err := e.stack.Engine.DescribeExecution(o["execution_id"].(string))
	require.NoError(t, err)
	require.Equal(t, asl.StatusRunning, ex.Status, "the run waits for the node")

	const reason = "node shipped back to the vendor"
	e.cancel(id, reason, "wait_enrollment")
	ex, err = e.stack.Engine.DescribeExecution(o["execution_id"].(string))
	require.NoError(t, err)
	assert.Equal(t, asl.StatusAborted, ex.Status)
	assert.Equal(t, "OnboardingCancelled", ex.Error)
	assert.Equal(t, reason, ex.Cause)

	second := e.onboard(f, "gpu-c1", "10.10.4.11")
	assert.NotEqual(t, id, second, "the host is free again")
	assert.Equal(t, "cancelled", e.onboarding(id)["status"], "nothing reopened it")
	assert.Equal(t, []string{"node.onboarding.started"}, e.busTypes(id), "a cancel emits no event")
	e.admin("POST", "/api/v1/admin/onboardings/"+id+"/cancel", nil, http.StatusConflict)
}

func TestCancelManualInterventionFreesTheHost(t *testing.T) {
	t.Parallel()
	e := startStack(t)
	f := e.setup(nil, nil)
	e.hardware("gpu-c2", "10.10.4.21", "52:54:00:00:42:01", map[string]any{"pxe_unlinked": true})
	id := e.onboard(f, "gpu-c2", "10.10.4.21")
	o := e.waitTerminal(id)
	require.Equal(t, "manual_intervention", o["status"])
	require.Equal(t, "PXEPreflightError", errorCode(o))

	// manual_intervention keeps the host until an operator acts.
	e.admin("POST", "/api/v1/admin/onboardings", map[string]any{
		"site_id": f.SiteID, "profile_id": f.ProfileID, "sku_id": f.SKUID, "hostname": "gpu-c2", "ipmi_ip": "10.10.4.21",
	}, http.StatusConflict)

	// The status is written a moment before the run's last state ends;
	// wait for the end, as an operator arriving later would find it.
	ctx, cancel := context.WithTimeout(context.Background(), terminalWait)
	defer cancel()
	ended, err := e.stack.Engine.Wait(ctx, o["execution_id"].(string))
	require.NoError(t, err)
	require.NotEqual(t, asl.StatusRunning, ended.Status)
	e.cancel(id, "PXE cable re-seated", o["stage"].(string))
	after, err := e.stack.Engine.DescribeExecution(o["execution_id"].(string))
	require.NoError(t, err)
	assert.Equal(t, ended.Status, after.Status, "an ended execution is left as it was")
	second := e.onboard(f, "gpu-c2", "10.10.4.21")
	assert.NotEqual(t, id, second)
	assert.Equal(t, []string{"node.onboarding.started", "node.onboarding.manual_intervention_required"}, e.emitted(id, 2),
		"the cancel adds no event")
}
