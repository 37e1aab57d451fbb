package main

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const adminRecoveryID = "0b000000-0000-4000-8000-000000000002"

// adminRecoveryJSON is the onboarding record with status, stage and run.
func adminRecoveryJSON(status, stage string, run int, timeline string) string {
	r := strings.NewReplacer("STATUS", status, "STAGE", stage, "RUN", strconv.Itoa(run), "TIMELINE", timeline)
	return r.Replace(`{"id":"` + adminRecoveryID + `","site_id":"s1","profile_id":"p1","sku_id":"h100x8","hostname":"gpu-02","ipmi_ip":"10.0.0.6",` +
		`"node_id":"n2","status":"STATUS","stage":"STAGE","attempt":1,"run":RUN,"maas_system_id":"4y3h7n","correlation_id":"c2",` +
		`"created_by":"admin","created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:10:00Z",` +
		`"allowed_operations":["rerun","cancel"],"timeline":[TIMELINE],"diagnostics":{"maas_events":[],"installation_output":"","script_results":[]}}`)
}

const adminOldRow = `{"time":"2026-01-01T00:05:00Z","attempt":1,"kind":"stage_exited","stage":"wait_deployed","outcome":"manual_intervention","detail":"deploy failed"}`

// Every recovery command posts its operation on the onboarding, with the
// reason when given, and prints the attempt, run, status and stage.
func TestAdminRecoveryCommandsPostTheirOperation(t *testing.T) {
	ops := map[string]string{
		"retry": "retry", "resume": "resume", "rerun": "rerun", "restart-clean": "restart-clean",
		"adopt": "adopt", "freeze": "mark-manual-intervention",
	}
	for cmd, op := range ops {
		t.Run(cmd, func(t *testing.T) {
			path := "/api/v1/admin/onboardings/" + adminRecoveryID + "/" + op
			api := newAdminFakeAPI(t)
			api.on("POST "+path, adminReply{http.StatusOK, adminRecoveryJSON("pending", "wait_deployed", 1, "")})
			args := []string{"onboardings", cmd, adminRecoveryID, "--reason", "ticket OPS-1"}
			if cmd == "restart-clean" {
				args = append(args, "--yes") // destructive: asks first
			}
			res := api.run(t, adminInvocation{}, args...)
			require.Equal(t, 0, res.code, res.stderr)
			assert.Contains(t, res.stdout, op+": onboarding "+adminRecoveryID+" attempt 1 run 1 is pending at stage wait_deployed\n")
			reqs := api.requests()
			require.Len(t, reqs, 1)
			assert.Equal(t, path, reqs[0].Path)
			assert.JSONEq(t, `{"reason":"ticket OPS-1"}`, reqs[0].Body)
		})
	}
}

func TestAdminRecoveryRefusedPrintsAllowedOperations(t *testing.T) {
	api := newAdminFakeAPI(t)
	api.on("POST /api/v1/admin/onboardings/"+adminRecoveryID+"/retry", adminReply{http.StatusConflict,
		`{"error":{"code":"conflict","message":"onboarding ` + adminRecoveryID + ` is failed at stage start: retry is not allowed; allowed operations: rerun, cancel","correlation_id":"c-1"}}`})
	api.on("GET /api/v1/admin/onboardings/"+adminRecoveryID, adminReply{http.StatusOK, adminRecoveryJSON("failed", "", 0, "")})
	res := api.run(t, adminInvocation{}, "onboardings", "retry", adminRecoveryID)
	assert.Equal(t, 1, res.code)
	assert.Contains(t, res.stderr, "error: conflict: onboarding "+adminRecoveryID+" is failed at stage start: retry is not allowed")
	assert.Contains(t, res.stderr, "onboarding "+adminRecoveryID+" is failed at stage start (attempt 1, run 0); allowed operations: rerun, cancel")
	reqs := api.requests()
	require.Len(t, reqs, 2)
	assert.Empty(t, reqs[0].Body, "no reason, no body")
}

// --wait follows the run the operation started, printing only what it
// added to the timeline, and exits as onboard --wait does.
func TestAdminRecoveryWaitFollowsTheNewRun(t *testing.T) {
	newRow := `{"time":"2026-01-01T00:20:00Z","attempt":1,"kind":"stage_entered","stage":"recover_deploy","detail":"from validate"}`
	tests := []struct {
		name     string
		final    string
		wantCode int
		wantOut  string
	}{
		{"completed", adminRecoveryJSON("completed", "done", 1, adminOldRow+","+newRow), 0, "completed"},
		{"stops again", adminRecoveryJSON("manual_intervention", "wait_deployed", 1, adminOldRow+","+newRow), 3, "needs manual intervention"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := newAdminFakeAPI(t)
			api.on("GET /api/v1/admin/onboardings/"+adminRecoveryID,
				adminReply{http.StatusOK, adminRecoveryJSON("manual_intervention", "wait_deployed", 0, adminOldRow)},
				adminReply{http.StatusOK, tt.final})
			api.on("POST /api/v1/admin/onboardings/"+adminRecoveryID+"/retry", adminReply{http.StatusOK, adminRecoveryJSON("pending", "wait_deployed", 1, "")})
			res := api.run(t, adminInvocation{}, "onboardings", "retry", adminRecoveryID, "--wait", "--interval", "1ms")
			require.Equal(t, tt.wantCode, res.code, "stdout: %s\nstderr: %s", res.stdout, res.stderr)
			assert.Contains(t, res.stdout, "retry: onboarding "+adminRecoveryID+" attempt 1 run 1 is pending")
			assert.Contains(t, res.stdout, "recover_deploy", "the new run's rows are printed")
			assert.NotContains(t, res.stdout, "deploy failed", "the earlier run's rows are not printed again")
			assert.Contains(t, res.stdout, tt.wantOut)
		})
	}
}

func TestAdminOnboardingsGetShowsRunCheckpointAndAllowedOperations(t *testing.T) {
	api := newAdminFakeAPI(t)
	body := strings.Replace(adminRecoveryJSON("manual_intervention", "hardening", 2, adminOldRow), `"run":2,`, `"run":2,"checkpoint":"commissioned",`, 1)
	api.on("GET /api/v1/admin/onboardings/"+adminRecoveryID, adminReply{http.StatusOK, body})
	res := api.run(t, adminInvocation{}, "onboardings", "get", adminRecoveryID)
	require.Equal(t, 0, res.code, res.stderr)
	assert.Regexp(t, `Run:\s+2 \(retried or resumed\)`, res.stdout)
	assert.Regexp(t, `Checkpoint:\s+commissioned`, res.stdout)
	assert.Regexp(t, `Allowed operations:\s+rerun, cancel`, res.stdout)
}
