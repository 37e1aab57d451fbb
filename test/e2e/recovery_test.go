package e2e

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/asl"
	"github.com/maasflow/maasflow/shared/domain"
)

// audited reports whether the audit trail holds a successful action on the
// onboarding, with the correlation id every entry carries.
func (e *env) audited(action, id string) bool {
	e.t.Helper()
	audit := e.audit(100)
	for _, a := range audit["items"].([]any) {
		row := a.(map[string]any)
		if row["action"] == action && row["target"] == "onboarding:"+id && row["result"] == "success" && row["correlation_id"] != "" {
			return true
		}
	}
	return false
}

// timelineNotes returns the details of the onboarding's timeline rows from
// source.
func (e *env) timelineNotes(id, source string) []string {
	e.t.Helper()
	detail := e.onboarding(id)
	var notes []string
	for _, r := range detail["timeline"].([]any) {
		if row := r.(map[string]any); row["source"] == source {
			notes = append(notes, row["detail"].(string))
		}
	}
	return notes
}

func TestFreezeRunningOnboarding(t *testing.T) {
	t.Parallel()
	e := startStack(t)
	f := e.setup(nil, map[string]any{"enrollment_timeout_seconds": 86400})
	e.hardware("gpu-r1", "10.10.9.11", "52:54:00:00:91:01", map[string]any{"never_enrolls": true})
	id := e.onboard(f, "gpu-r1", "10.10.9.11")
	running := e.waitStage(id, "wait_enrollment")
	assert.ElementsMatch(t, []any{"cancel", "mark-manual-intervention"}, running["allowed_operations"])

	const reason = "rack power work at 14:00"
	o := e.recoverOnboarding(id, domain.OpMarkManualIntervention, map[string]any{"reason": reason})
	assert.Equal(t, "manual_intervention", o["status"])
	assert.Equal(t, "wait_enrollment", o["stage"])
	assert.Equal(t, map[string]any{"code": "FrozenByOperator", "message": reason, "stage": "wait_enrollment"}, o["error"])
	assert.Nil(t, o["completed_at"], "a frozen run is not over")

	ex, err := e.stack.Engine.DescribeExecution(o["execution_id"].(string))
	require.NoError(t, err)
	assert.Equal(t, asl.StatusAborted, ex.Status, "the execution is stopped")

	// The host stays locked until an operator acts.
	e.admin("POST", "/api/v1/admin/onboardings", map[string]any{
		"site_id": f.SiteID, "profile_id": f.ProfileID, "sku_id": f.SKUID, "hostname": "gpu-r1", "ipmi_ip": "10.10.9.11",
	}, http.StatusConflict)

	// A repeated freeze answers the same record and records nothing new.
	again := e.recoverOnboarding(id, domain.OpMarkManualIntervention, map[string]any{"reason": "twice"})
	assert.Equal(t, o["updated_at"], again["updated_at"])
	assert.Equal(t, o["error"], again["error"])
	notes := e.timelineNotes(id, "mark-manual-intervention")
	require.Len(t, notes, 1, "one freeze on the timeline")
	assert.Contains(t, notes[0], reason)
	assert.True(t, e.audited("onboarding.mark-manual-intervention", id), "audit entry for the freeze")

	detail := e.onboarding(id)
	assert.Contains(t, detail["allowed_operations"], "cancel")
	assert.NotContains(t, detail["allowed_operations"], "mark-manual-intervention")

	// cancel still frees it.
	e.cancel(id, "rack work cancelled", "wait_enrollment")
}

func TestRecoveryOperationRefusedNamesStateAndAllowed(t *testing.T) {
	t.Parallel()
	e := startStack(t)
	f := e.setup(nil, nil)
	e.hardware("gpu-r2", "10.10.9.21", "52:54:00:00:92:01", nil)
	id := e.onboard(f, "gpu-r2", "10.10.9.21")
	o := e.waitTerminal(id)
	require.Equal(t, "completed", o["status"])
	assert.Equal(t, []any{}, o["allowed_operations"], "a completed onboarding has no way back: that is a decommission")

	status, body := e.raw("POST", e.stack.APIURL+"/api/v1/admin/onboardings/"+id+"/mark-manual-intervention", e.stack.AdminToken, nil)
	assert.Equal(t, http.StatusConflict, status)
	assert.Contains(t, string(body), "is completed at stage done")
	assert.Contains(t, string(body), "mark-manual-intervention is not allowed; allowed operations: none")
	assert.Equal(t, "completed", e.onboarding(id)["status"], "nothing changed")

	e.admin("POST", "/api/v1/admin/onboardings/"+id+"/no-such-op", nil, http.StatusNotFound)
}

func TestRerunAfterCommissioningFailure(t *testing.T) {
	t.Parallel()
	e := startStack(t)
	f := e.setup(nil, nil)
	e.hardware("gpu-r3", "10.10.9.31", "52:54:00:00:93:01", map[string]any{"commission_failures": 1})
	id := e.onboard(f, "gpu-r3", "10.10.9.31")
	first := e.waitTerminal(id)
	require.Contains(t, []any{"failed", "manual_intervention"}, first["status"], "commissioning failed: %v", first["error"])
	require.Contains(t, first["allowed_operations"], "rerun")
	systemID := first["maas_system_id"]

	o := e.recoverOnboarding(id, domain.OpRerun, map[string]any{"reason": "reseated the DIMM"})
	assert.EqualValues(t, 2, o["attempt"])
	assert.Contains(t, []any{"pending", "running", "completed"}, o["status"])
	assert.NotEqual(t, first["execution_id"], o["execution_id"], "a new execution")

	// A repeated request answers the attempt it started.
	if again := e.onboarding(id); again["status"] == "pending" || again["status"] == "running" {
		repeat := e.recoverOnboarding(id, domain.OpRerun, nil)
		assert.EqualValues(t, 2, repeat["attempt"], "no third attempt")
	}

	done := e.waitTerminal(id)
	require.Equal(t, "completed", done["status"], "error: %v", done["error"])
	assert.EqualValues(t, 2, done["attempt"])
	assert.Equal(t, systemID, done["maas_system_id"], "attempt 2 adopted the same MAAS machine")
	assert.Len(t, e.timelineNotes(id, "rerun"), 1)
	assert.True(t, e.audited("onboarding.rerun", id), "audit entry for the rerun")

	e.admin("POST", "/api/v1/admin/onboardings/"+id+"/rerun", nil, http.StatusConflict)
}
