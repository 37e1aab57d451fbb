package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stageOutcomes returns the timeline's stage_exited outcomes by stage.
func stageOutcomes(o map[string]any) map[string]string {
	out := map[string]string{}
	tl, _ := o["timeline"].([]any)
	for _, r := range tl {
		row := r.(map[string]any)
		if row["kind"] == "stage_exited" {
			out[row["stage"].(string)], _ = row["outcome"].(string)
		}
	}
	return out
}

func errorCode(o map[string]any) string {
	e, _ := o["error"].(map[string]any)
	code, _ := e["code"].(string)
	return code
}

// emitted returns the detail types emitted for one onboarding, in order,
// once n of them are on the bus (the status can be read a moment before the
// final event is written), or what is there when the wait runs out.
func (e *env) emitted(onboardingID string, n int) []string {
	e.t.Helper()
	deadline := time.Now().Add(terminalWait)
	for {
		types := e.busTypes(onboardingID)
		if len(types) >= n || time.Now().After(deadline) {
			return types
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// busTypes reads the local bus file.
func (e *env) busTypes(onboardingID string) []string {
	e.t.Helper()
	envs, err := e.stack.Bus.ReadAll()
	require.NoError(e.t, err)
	var types []string
	for _, ev := range envs {
		if strings.Contains(string(ev.Detail), `"onboarding_id":"`+onboardingID+`"`) {
			types = append(types, ev.DetailType)
		}
	}
	return types
}

func TestCleanOnboardingCompletes(t *testing.T) {
	t.Parallel()
	e := startStack(t)
	f := e.setup(nil, nil)
	e.hardware("gpu-a1", "10.10.0.11", "52:54:00:00:01:01", nil)

	id := e.onboard(f, "gpu-a1", "10.10.0.11")
	o := e.waitTerminal(id)

	require.Equal(t, "completed", o["status"], o)
	assert.EqualValues(t, 1, o["attempt"])
	assert.NotEmpty(t, o["maas_system_id"])
	outcomes := stageOutcomes(o)
	for _, st := range []string{"validate", "discover", "commission", "pxe_preflight", "deploy", "wait_enrollment", "completion_gates"} {
		assert.Equal(t, "ok", outcomes[st], "stage %s", st)
	}
	assert.Equal(t, []string{"node.onboarding.started", "node.onboarding.completed"}, e.emitted(id, 2))

	calls := e.simCalls()
	assert.Equal(t, 1, callsWithOp(calls, "deploy"), "one deploy")
	assert.Equal(t, 1, callsWithOp(calls, "commission"), "one commissioning")
}

func TestExistingMachineIsAdopted(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		hostname string // MAAS record's hostname
	}{
		{name: "by hostname", hostname: "gpu-b1"},
		{name: "by power address", hostname: "maas-named-it-differently"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := startStack(t)
			f := e.setup(nil, nil)
			e.hardware("gpu-b1", "10.10.0.21", "52:54:00:00:02:01", nil)
			e.sim("POST", "/_sim/machines", map[string]any{
				"hostname": tc.hostname, "bmc_ip": "10.10.0.21", "pxe_mac": "52:54:00:00:02:01", "status": "ready",
			}, http.StatusCreated)

			o := e.waitTerminal(e.onboard(f, "gpu-b1", "10.10.0.21"))

			require.Equal(t, "completed", o["status"], o)
			calls := e.simCalls()
			assert.Zero(t, calls["POST /MAAS/api/2.0/machines/"], "no machine created")
			assert.Equal(t, 1, callsWithOp(calls, "deploy"))
		})
	}
}

func TestAmbiguousMatchStopsWithoutTouchingMAAS(t *testing.T) {
	t.Parallel()
	e := startStack(t)
	f := e.setup(nil, nil)
	// Two MAAS records named gpu-c1 (two servers someone gave one name).
	for i, mac := range []string{"52:54:00:00:03:01", "52:54:00:00:03:02"} {
		e.sim("POST", "/_sim/machines", map[string]any{
			"hostname": "gpu-c1", "bmc_ip": fmt.Sprintf("10.10.0.3%d", i+1), "pxe_mac": mac, "status": "ready",
		}, http.StatusCreated)
	}

	o := e.waitTerminal(e.onboard(f, "gpu-c1", "10.10.0.31"))

	assert.Equal(t, "manual_intervention", o["status"])
	assert.Equal(t, "AmbiguousMachineMatchError", errorCode(o))
	assert.Zero(t, mutatingCalls(e.simCalls()), "nothing changed in MAAS")
}

func TestAutoClaimFollowsPolicy(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		policy map[string]any
		want   string
	}{
		{name: "not allowed", policy: map[string]any{"auto_claim_new": false}, want: "manual_intervention"},
		{name: "allowed", policy: map[string]any{"auto_claim_new": true}, want: "completed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := startStack(t)
			f := e.setup(nil, tc.policy)
			e.hardware("gpu-d1", "10.10.0.41", "52:54:00:00:04:01", nil)
			e.sim("POST", "/_sim/machines", map[string]any{
				"hostname": "enlisted-d1", "bmc_ip": "10.10.0.41", "pxe_mac": "52:54:00:00:04:01", "status": "new",
			}, http.StatusCreated)

			o := e.waitTerminal(e.onboard(f, "gpu-d1", "10.10.0.41"))

			assert.Equal(t, tc.want, o["status"], o)
			if tc.want == "manual_intervention" {
				assert.Equal(t, "MachineClaimNotAllowedError", errorCode(o))
				assert.Zero(t, mutatingCalls(e.simCalls()))
			}
		})
	}
}

func TestDeployFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		faults      map[string]any
		wantStatus  string
		wantDeploys int
		wantCode    string
	}{
		{name: "datasource once is retried", faults: map[string]any{"deploy_datasource_failures": 1}, wantStatus: "completed", wantDeploys: 2},
		{name: "datasource twice needs an operator", faults: map[string]any{"deploy_datasource_failures": 2}, wantStatus: "manual_intervention", wantDeploys: 2, wantCode: "DeployFailed"},
		{name: "other failure is not retried", faults: map[string]any{"deploy_other_failures": 1}, wantStatus: "manual_intervention", wantDeploys: 1, wantCode: "DeployFailed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := startStack(t)
			f := e.setup(nil, nil)
			e.hardware("gpu-e1", "10.10.0.51", "52:54:00:00:05:01", tc.faults)

			o := e.waitTerminal(e.onboard(f, "gpu-e1", "10.10.0.51"))

			assert.Equal(t, tc.wantStatus, o["status"], o)
			assert.Equal(t, tc.wantDeploys, callsWithOp(e.simCalls(), "deploy"))
			if tc.wantCode != "" {
				assert.Equal(t, tc.wantCode, errorCode(o))
				diag, _ := o["diagnostics"].(map[string]any)
				assert.NotEmpty(t, diag["maas_events"], "MAAS events reach the diagnostics")
			}
		})
	}
}

func TestPXEPreflightFailureStopsBeforeDeploy(t *testing.T) {
	t.Parallel()
	e := startStack(t)
	f := e.setup(nil, nil)
	e.hardware("gpu-f1", "10.10.0.61", "52:54:00:00:06:01", map[string]any{"pxe_unlinked": true})

	o := e.waitTerminal(e.onboard(f, "gpu-f1", "10.10.0.61"))

	assert.Equal(t, "manual_intervention", o["status"])
	assert.Equal(t, "PXEPreflightError", errorCode(o))
	assert.Zero(t, callsWithOp(e.simCalls(), "deploy"), "never deployed")
}

func TestEnrollmentTimeoutNeedsAnOperator(t *testing.T) {
	t.Parallel()
	e := startStack(t)
	f := e.setup(nil, map[string]any{"enrollment_timeout_seconds": 600})
	e.hardware("gpu-g1", "10.10.0.71", "52:54:00:00:07:01", map[string]any{"never_enrolls": true})

	id := e.onboard(f, "gpu-g1", "10.10.0.71")
	o := e.waitTerminal(id)

	assert.Equal(t, "manual_intervention", o["status"])
	assert.Equal(t, "wait_enrollment", o["stage"])
	assert.Equal(t, []string{"node.onboarding.started", "node.onboarding.manual_intervention_required"}, e.emitted(id, 2))
}

func TestSecondOnboardingForTheSameHostConflicts(t *testing.T) {
	t.Parallel()
	e := startStack(t)
	f := e.setup(nil, map[string]any{"enrollment_timeout_seconds": 3600})
	e.hardware("gpu-h1", "10.10.0.81", "52:54:00:00:08:01", map[string]any{"never_enrolls": true})
	e.onboard(f, "gpu-h1", "10.10.0.81")

	out := e.admin("POST", "/api/v1/admin/onboardings", map[string]any{
		"site_id": f.SiteID, "profile_id": f.ProfileID, "sku_id": f.SKUID, "hostname": "gpu-h1", "ipmi_ip": "10.10.0.81",
	}, http.StatusConflict)
	assert.Contains(t, out["error"].(map[string]any)["message"], "gpu-h1")
}

func TestSeededSecretsNeverLeak(t *testing.T) {
	t.Parallel()
	e := startStack(t)
	f := e.setup(nil, nil)
	e.hardware("gpu-i1", "10.10.0.91", "52:54:00:00:09:01", nil)
	id := e.onboard(f, "gpu-i1", "10.10.0.91")
	require.Equal(t, "completed", e.waitTerminal(id)["status"])
	e.admin("GET", "/api/v1/admin/maas-sites/"+f.SiteID, nil, http.StatusOK)
	e.audit(0)

	keyParts := strings.Split(e.stack.SimAPIKey, ":")
	secrets := []string{e.stack.SimAPIKey, keyParts[2], f.BMCPassword, e.stack.AdminToken}
	envs, err := e.stack.Bus.ReadAll()
	require.NoError(t, err)
	bus, err := json.Marshal(envs)
	require.NoError(t, err)

	e.mu.Lock()
	bodies := strings.Join(e.bodies, "\n")
	e.mu.Unlock()
	for _, s := range secrets {
		assert.NotContains(t, e.logs.String(), s, "logs")
		assert.NotContains(t, bodies, s, "responses")
		assert.NotContains(t, string(bus), s, "events")
	}
}
