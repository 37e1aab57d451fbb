package onboarding_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/internal/maassim"
	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/activities/activitiestest"
	"github.com/maasflow/maasflow/shared/activities/onboarding"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/events"
	"github.com/maasflow/maasflow/shared/maas"
)

// TestActivitiesInOrder runs every activity of a clean onboarding in the
// state machine's order against the simulator, as the ASL would call them.
func TestActivitiesInOrder(t *testing.T) {
	e := newEnv(t, activitiestest.Options{})
	e.addHardware("gpu-01", "10.0.0.11", "52:54:00:00:00:11", maassim.Faults{})
	o := e.f.AddOnboarding(t, "gpu-01", "10.0.0.11")

	var v onboarding.ValidateOnboardingOutput
	e.must("ValidateOnboarding", refIn{ref(o)}, &v)
	require.NotNil(t, v.Context)
	v.Context = nil
	assert.Equal(t, onboarding.ValidateOnboardingOutput{NodeID: o.NodeID, EnrollmentTimeoutSeconds: 1800, DeployRetries: 1, StrictPXEPreflight: true}, v)

	var d onboarding.DiscoverMachineOutput
	e.must("DiscoverMachine", refIn{ref(o)}, &d)
	assert.Equal(t, domain.DiscoveryCreate, d.Action)
	require.NotEmpty(t, d.SystemID)
	assert.Equal(t, d.SystemID, e.onboarding(o.ID).MAASSystemID)

	var c onboarding.CommissionMachineOutput
	e.must("CommissionMachine", refIn{ref(o)}, &c)
	assert.True(t, c.Commissioned)
	assert.Equal(t, "Commissioning", c.StatusName)

	ready := e.poll(o, activities.TargetReady, activities.Poll{})
	require.Equal(t, activities.OutcomeDone, ready.Outcome)
	assert.Equal(t, "Ready", ready.StatusName)

	var s onboarding.ConfigureStorageOutput
	e.must("ConfigureStorage", refIn{ref(o)}, &s)
	assert.True(t, s.Applied)
	var p onboarding.PreflightPXEOutput
	e.must("PreflightPXE", refIn{ref(o)}, &p)
	assert.Equal(t, "10.20.0.0/24", p.SubnetCIDR)
	assert.Equal(t, "52:54:00:00:00:11", p.MACAddress)
	assert.Equal(t, "52:54:00:00:00:11", e.onboarding(o.ID).PXEMAC)
	var pre onboarding.CheckPredeployOutput
	e.must("CheckPredeploy", refIn{ref(o)}, &pre)
	assert.Equal(t, []string{"bootstrap_inputs", "ca_material", "enrollment_api", "bootstrap_fetch", "payload_render"}, pre.Checks)

	dep, deployed := e.deploy(o)
	assert.Equal(t, 1, dep.DeployAttempt)
	assert.Equal(t, activitiestest.SiteBootstrapVersion, dep.SiteBootstrapVersion)
	require.Equal(t, activities.OutcomeDone, deployed.Outcome, deployed.Reason)

	// The simulator plays the node: it enrolls with the token from user_data.
	require.Eventually(t, func() bool { return len(e.f.NodeAPI.Enrolled()) == 1 }, 10*time.Second, time.Millisecond)
	var aw onboarding.AwaitEnrollmentOutput
	e.must("AwaitEnrollment", onboarding.AwaitEnrollmentInput{OnboardingRef: ref(o), TaskToken: "task-token-1"}, &aw)
	assert.True(t, aw.Stored)
	assert.True(t, aw.Completed, "the node enrolled first: the activity completes the wait itself")
	assert.Equal(t, 1, e.f.Completer.Calls())

	var gates onboarding.CheckCompletionGatesOutput
	e.must("CheckCompletionGates", onboarding.CheckCompletionGatesInput{OnboardingRef: ref(o),
		Enrollment: onboarding.EnrollmentReport{NodeID: o.NodeID, Attempt: 1}}, &gates)
	assert.Equal(t, []string{"attempt", "maas_deployed", "node_active", "token_consumed"}, gates.Gates)

	var fin onboarding.FinishOnboardingOutput
	e.must("FinishOnboarding", onboarding.FinishOnboardingInput{OnboardingRef: ref(o), Status: "completed"}, &fin)
	assert.True(t, fin.Published)
	got := e.onboarding(o.ID)
	assert.Equal(t, domain.OnboardingCompleted, got.Status)
	assert.Equal(t, domain.StageDone, got.Stage)
	assert.NotNil(t, got.CompletedAt)
	assert.Nil(t, got.Error)

	var types []string
	for _, ev := range e.f.Events.Events() {
		types = append(types, ev.DetailType)
	}
	assert.Equal(t, []string{events.OnboardingStarted, events.OnboardingCompleted}, types)
	var detail events.OnboardingDetail
	require.NoError(t, json.Unmarshal(e.f.Events.Events()[1].Detail, &detail))
	assert.Equal(t, events.OnboardingDetail{SiteID: activitiestest.SiteID, OnboardingID: o.ID, NodeID: o.NodeID,
		MAASSystemID: d.SystemID, Hostname: "gpu-01", CorrelationID: "corr-gpu-01", Attempt: 1, Status: "completed",
		Stage: "done", OccurredAt: detail.OccurredAt}, detail)

	// Every stage recorded its entry and exit; MAAS events sit beside them.
	rows := e.timeline(o.ID)
	entered, exited, maasRows := map[domain.Stage]bool{}, map[domain.Stage]bool{}, 0
	for _, r := range rows {
		switch r.Kind {
		case domain.TimelineStageEntered:
			entered[r.Stage] = true
		case domain.TimelineStageExited:
			exited[r.Stage] = r.Outcome == "ok"
		case domain.TimelineMAASEvent:
			maasRows++
			assert.NotZero(t, r.MAASEventID)
		}
	}
	for _, st := range []domain.Stage{"validate", "discover", "commission", "wait_ready", "storage", "pxe_preflight",
		"hardening", "render_payload", "deploy", "wait_deployed", "wait_enrollment", "completion_gates"} {
		assert.True(t, entered[st], "stage %s entered", st)
		assert.True(t, exited[st], "stage %s exited ok", st)
	}
	assert.True(t, entered["done"])
	assert.Greater(t, maasRows, 5)

	// No secret anywhere: timeline, logs, events.
	assertNoSecrets(t, "timeline", timelineText(rows))
	assertNoSecrets(t, "logs", e.f.Logs.String())
	for _, ev := range e.f.Events.Events() {
		assertNoSecrets(t, "event", string(ev.Detail))
	}
	// The token is stored as a hash only, bound to node, onboarding, attempt.
	tok, err := e.f.Store.GetEnrollmentToken(context.Background(), got.EnrollmentTokenHash)
	require.NoError(t, err)
	assert.Equal(t, o.NodeID, tok.NodeID)
	assert.Equal(t, o.ID, tok.OnboardingID)
	assert.Equal(t, 1, tok.Attempt)
	assert.NotNil(t, tok.ConsumedAt)
	assert.Equal(t, maas.StatusDeployed, e.machine(d.SystemID).Status)
}
