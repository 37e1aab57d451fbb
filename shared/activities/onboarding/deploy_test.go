package onboarding_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
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
)

func TestCheckPredeployNamesTheFailedCheck(t *testing.T) {
	ctx := context.Background()
	setBootstrap := func(change func(b *domain.BootstrapRef)) func(e *env) {
		return func(e *env) {
			_, err := e.f.Store.UpdateSite(ctx, activitiestest.SiteID, func(s *domain.Site) error {
				b := *s.Policy.Bootstrap
				change(&b)
				s.Policy.Bootstrap = &b
				return nil
			})
			require.NoError(t, err)
		}
	}
	tests := []struct {
		name  string
		check string
		setup func(e *env)
	}{
		{"no site bootstrap", onboarding.CheckBootstrapInputs, setBootstrap(func(b *domain.BootstrapRef) { b.URL = "" })},
		{"unversioned site bootstrap", onboarding.CheckBootstrapInputs, setBootstrap(func(b *domain.BootstrapRef) { b.Version = "" })},
		{"CA is a template placeholder", onboarding.CheckCAMaterial, setBootstrap(func(b *domain.BootstrapRef) { b.CABundle = "<BOOTSTRAP_BUNDLE_CA_PEM>" })},
		{"enrollment API unreachable", onboarding.CheckEnrollmentAPI, func(e *env) { e.f.NodeAPI.SetDown(true) }},
		{"bootstrap URL missing", onboarding.CheckBootstrapFetch, setBootstrap(func(b *domain.BootstrapRef) { b.URL = strings.Replace(b.URL, "/bootstrap/", "/missing/", 1) })},
		{"bootstrap checksum differs", onboarding.CheckBootstrapFetch, setBootstrap(func(b *domain.BootstrapRef) { b.SHA256 = "00" + b.SHA256[2:] })},
		{"package digest malformed", onboarding.CheckPayloadRender, func(e *env) {
			e.f.Deps.Config.Package.Digest = "sha256:nope"
			for _, fn := range onboarding.Catalog(e.f.Deps) {
				e.handlers[fn.Activity] = lambdaHandler(fn.Handler)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, activitiestest.Options{})
			o := e.f.AddOnboarding(t, "gpu-01", "10.0.0.11")
			e.placeAt(o, domain.StagePXEPreflight, "")
			tc.setup(e)
			err := e.call("CheckPredeploy", refIn{ref(o)}, nil)
			requireErrorName(t, err, "PredeployCheckError")
			var pe *onboarding.PredeployCheckError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, tc.check, pe.Check, pe.Reason)
			assert.Zero(t, e.f.Sim.Calls().Total, "pre-deploy checks never touch MAAS")
		})
	}
}

func TestDeployMachine(t *testing.T) {
	t.Run("retry while deploying does not deploy twice", func(t *testing.T) {
		e := newEnv(t, activitiestest.Options{})
		e.addHardware("gpu-01", "10.0.0.11", "52:54:00:00:00:11", maassim.Faults{NeverEnrolls: true})
		o := e.f.AddOnboarding(t, "gpu-01", "10.0.0.11")
		e.toPredeployed(o)
		var first, again onboarding.DeployMachineOutput
		e.must("DeployMachine", refIn{ref(o)}, &first)
		hash := e.onboarding(o.ID).EnrollmentTokenHash
		e.clk.Advance(90 * time.Second) // the retry comes later
		e.must("DeployMachine", refIn{ref(o)}, &again)
		assert.True(t, again.AlreadyDeploying)
		assert.Equal(t, first.StartedAt, again.StartedAt, "the retry reports when the deploy really began")
		assert.Equal(t, 1, again.DeployAttempt)
		assert.Equal(t, 1, e.callsTo("POST", "deploy"))
		assert.Equal(t, 1, e.callsTo("POST", "allocate"))
		got := e.onboarding(o.ID)
		assert.Equal(t, 1, got.DeployAttempts)
		assert.Equal(t, hash, got.EnrollmentTokenHash, "the node keeps the token it was deployed with")
		assertNoSecrets(t, "logs", e.f.Logs.String())
		assertNoSecrets(t, "timeline", timelineText(e.timeline(o.ID)))
	})
	t.Run("only from Ready or Allocated", func(t *testing.T) {
		e := newEnv(t, activitiestest.Options{})
		sid, err := e.f.Sim.AddMachine(maassim.MachineSeed{Hostname: "gpu-01", BMCIP: "10.0.0.11", PXEMAC: "52:54:00:00:00:11", Status: "failed_deployment"})
		require.NoError(t, err)
		o := e.f.AddOnboarding(t, "gpu-01", "10.0.0.11")
		e.placeAt(o, domain.StageHardening, sid)
		requireErrorName(t, e.call("DeployMachine", refIn{ref(o)}, nil), "MachineNotDeployableError")
		assert.Zero(t, e.mutatingCalls())
		assert.Empty(t, e.onboarding(o.ID).EnrollmentTokenHash)
	})
	t.Run("a payload that does not render names its part", func(t *testing.T) {
		e := newEnv(t, activitiestest.Options{})
		sid, err := e.f.Sim.AddMachine(maassim.MachineSeed{Hostname: "gpu-01", BMCIP: "10.0.0.11", PXEMAC: "52:54:00:00:00:11", Status: "ready"})
		require.NoError(t, err)
		o := e.f.AddOnboarding(t, "gpu-01", "10.0.0.11")
		e.placeAt(o, domain.StageHardening, sid)
		_, err = e.f.Store.UpdateSite(context.Background(), activitiestest.SiteID, func(s *domain.Site) error {
			s.Policy.Bootstrap.CABundle = "<BOOTSTRAP_BUNDLE_CA_PEM>"
			return nil
		})
		require.NoError(t, err)
		err = e.call("DeployMachine", refIn{ref(o)}, nil)
		requireErrorName(t, err, "PayloadRenderError")
		var pe *onboarding.PayloadRenderError
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, "node-bootstrap", pe.Part)
		assert.Equal(t, "node-bootstrap/v1", pe.Version)
		assert.Zero(t, e.mutatingCalls(), "nothing is deployed")
	})
}

func TestDatasourceFailureClassifiedAndRecoveredByAbort(t *testing.T) {
	e := newEnv(t, activitiestest.Options{})
	e.addHardware("gpu-01", "10.0.0.11", "52:54:00:00:00:11", maassim.Faults{DeployDatasourceFailures: 1})
	o := e.f.AddOnboarding(t, "gpu-01", "10.0.0.11")
	e.toPredeployed(o)

	d, polled := e.deploy(o)
	require.Equal(t, activities.OutcomeFailed, polled.Outcome)
	assert.Equal(t, "Deploying", polled.StatusName, "stuck deploying is failed at once, not after MAAS's timeout")

	var cls onboarding.ClassifyDeployFailureOutput
	e.must("ClassifyDeployFailure", onboarding.ClassifyDeployFailureInput{OnboardingRef: ref(o), DeployEventsAfter: d.EventsAfter}, &cls)
	assert.Equal(t, domain.DeployFailureDatasource, cls.Class)
	assert.Equal(t, 1, cls.DeployAttempts)
	assert.Equal(t, 1, cls.DeployRetries, "the state machine retries: deploy 1 <= deploy_retries 1")
	assertDiagnostics(t, e, o.ID)

	var rec onboarding.RecoverDeployOutput
	e.must("RecoverDeploy", refIn{ref(o)}, &rec)
	assert.Equal(t, onboarding.RecoveryAborted, rec.Action)
	e.must("RecoverDeploy", refIn{ref(o)}, &rec)
	assert.Equal(t, 1, e.callsTo("POST", "abort"), "a repeat does not abort twice")
	back := e.poll(o, activities.TargetDeployable, activities.Poll{})
	require.Equal(t, activities.OutcomeDone, back.Outcome)
	assert.Equal(t, "Allocated", back.StatusName)

	d2, polled := e.deploy(o)
	assert.Equal(t, 2, d2.DeployAttempt)
	assert.Equal(t, activities.OutcomeDone, polled.Outcome)
	assert.Equal(t, 2, e.onboarding(o.ID).DeployAttempts)
}

func TestTimedOutDeployIsReleasedThenRetriesAreSpent(t *testing.T) {
	e := newEnv(t, activitiestest.Options{})
	e.addHardware("gpu-01", "10.0.0.11", "52:54:00:00:00:11", maassim.Faults{DeployDatasourceFailures: 2})
	o := e.f.AddOnboarding(t, "gpu-01", "10.0.0.11")
	e.toPredeployed(o)

	var d onboarding.DeployMachineOutput
	e.must("DeployMachine", refIn{ref(o)}, &d)
	// Nobody polled while MAAS timed the deploy out: Failed deployment.
	e.clk.Advance(45 * time.Minute)
	polled := e.poll(o, activities.TargetDeployed, activities.Poll{StartedAt: d.StartedAt})
	require.Equal(t, activities.OutcomeFailed, polled.Outcome)
	assert.Equal(t, "Failed deployment", polled.StatusName)

	var cls onboarding.ClassifyDeployFailureOutput
	e.must("ClassifyDeployFailure", onboarding.ClassifyDeployFailureInput{OnboardingRef: ref(o), DeployEventsAfter: d.EventsAfter}, &cls)
	require.Equal(t, domain.DeployFailureDatasource, cls.Class)
	require.Equal(t, 1, cls.DeployAttempts)
	require.Equal(t, 1, cls.DeployRetries)
	var rec onboarding.RecoverDeployOutput
	e.must("RecoverDeploy", refIn{ref(o)}, &rec)
	assert.Equal(t, onboarding.RecoveryReleased, rec.Action, "abort is refused from Failed deployment: release")
	back := e.poll(o, activities.TargetDeployable, activities.Poll{})
	require.Equal(t, activities.OutcomeDone, back.Outcome)
	assert.Equal(t, "Ready", back.StatusName)

	d2, polled := e.deploy(o)
	require.Equal(t, activities.OutcomeFailed, polled.Outcome)
	e.must("ClassifyDeployFailure", onboarding.ClassifyDeployFailureInput{OnboardingRef: ref(o), DeployEventsAfter: d2.EventsAfter}, &cls)
	assert.Equal(t, domain.DeployFailureDatasource, cls.Class)
	assert.Equal(t, 2, cls.DeployAttempts, "deploy 2 > deploy_retries 1: the state machine does not retry")
	assert.Equal(t, 1, cls.DeployRetries)
	assert.Contains(t, cls.Summary, "deploy 2 of machine")
	assert.Contains(t, cls.Summary, "class datasource, retry while deploys <= deploy_retries (deploy 2, deploy_retries 1)")
}

func TestRecoverDeployRepeatFindsTheReleaseUnderWay(t *testing.T) {
	// A region with enable_disk_erasing_on_release erases on every release
	// (maas-behaviour §5): the repeat of a RecoverDeploy whose release MAAS
	// accepted finds the machine erasing its disks.
	for _, status := range []string{"releasing", "disk_erasing"} {
		t.Run(status, func(t *testing.T) {
			e := newEnv(t, activitiestest.Options{})
			sid, err := e.f.Sim.AddMachine(maassim.MachineSeed{Hostname: "gpu-01", BMCIP: "10.0.0.11", PXEMAC: "52:54:00:00:00:11", Status: status})
			require.NoError(t, err)
			o := e.f.AddOnboarding(t, "gpu-01", "10.0.0.11")
			e.placeAt(o, domain.StageRecoverDeploy, sid)
			var rec onboarding.RecoverDeployOutput
			e.must("RecoverDeploy", refIn{ref(o)}, &rec)
			assert.Equal(t, onboarding.RecoveryNone, rec.Action)
			assert.Zero(t, e.mutatingCalls())
		})
	}
}

func TestOtherDeployFailureIsClassifiedOther(t *testing.T) {
	e := newEnv(t, activitiestest.Options{})
	e.addHardware("gpu-01", "10.0.0.11", "52:54:00:00:00:11", maassim.Faults{DeployOtherFailures: 1})
	o := e.f.AddOnboarding(t, "gpu-01", "10.0.0.11")
	e.toPredeployed(o)
	d, polled := e.deploy(o)
	require.Equal(t, activities.OutcomeFailed, polled.Outcome)
	var cls onboarding.ClassifyDeployFailureOutput
	e.must("ClassifyDeployFailure", onboarding.ClassifyDeployFailureInput{OnboardingRef: ref(o), DeployEventsAfter: d.EventsAfter}, &cls)
	assert.Equal(t, domain.DeployFailureOther, cls.Class)
	assert.Contains(t, cls.Reason, "curtin")
	assertDiagnostics(t, e, o.ID)
}

func assertDiagnostics(t *testing.T, e *env, id string) {
	t.Helper()
	sources := map[string]bool{}
	for _, r := range e.timeline(id) {
		if r.Kind == domain.TimelineDiagnostic {
			sources[r.Source] = true
			assert.NotEmpty(t, r.Detail)
		}
	}
	assert.True(t, sources["installation_output"], "installation output copied")
	assert.True(t, sources["maas_events"], "failing events copied")
}

func TestAwaitEnrollmentStoresTheTaskToken(t *testing.T) {
	e := newEnv(t, activitiestest.Options{})
	e.addHardware("gpu-01", "10.0.0.11", "52:54:00:00:00:11", maassim.Faults{NeverEnrolls: true})
	o := e.f.AddOnboarding(t, "gpu-01", "10.0.0.11")
	e.toPredeployed(o)
	_, polled := e.deploy(o)
	require.Equal(t, activities.OutcomeDone, polled.Outcome)

	requireErrorName(t, e.call("AwaitEnrollment", onboarding.AwaitEnrollmentInput{OnboardingRef: ref(o)}, nil), "InvalidInputError")
	var out onboarding.AwaitEnrollmentOutput
	e.must("AwaitEnrollment", onboarding.AwaitEnrollmentInput{OnboardingRef: ref(o), TaskToken: "tok-1"}, &out)
	assert.Equal(t, onboarding.AwaitEnrollmentOutput{Stored: true}, out)
	assert.Equal(t, "tok-1", e.onboarding(o.ID).EnrollmentTaskToken)
	assert.Zero(t, e.f.Completer.Calls(), "nobody enrolled: the enrollment API will complete the wait")
	assert.NotContains(t, e.f.Logs.String(), "tok-1", "the task token is not logged")

	// The gates refuse completion without an enrollment.
	err := e.call("CheckCompletionGates", onboarding.CheckCompletionGatesInput{OnboardingRef: ref(o),
		Enrollment: onboarding.EnrollmentReport{NodeID: o.NodeID, Attempt: 1}}, nil)
	requireErrorName(t, err, "CompletionGateError")
	var ge *onboarding.CompletionGateError
	require.ErrorAs(t, err, &ge)
	assert.Equal(t, onboarding.GateNodeActive, ge.Gate)
}

func TestCheckCompletionGatesChecksTheAttempt(t *testing.T) {
	e := newEnv(t, activitiestest.Options{})
	e.addHardware("gpu-01", "10.0.0.11", "52:54:00:00:00:11", maassim.Faults{})
	o := e.f.AddOnboarding(t, "gpu-01", "10.0.0.11")
	e.toPredeployed(o)
	e.deploy(o)
	require.Eventually(t, func() bool { return len(e.f.NodeAPI.Enrolled()) == 1 }, 10*time.Second, time.Millisecond)
	e.must("AwaitEnrollment", onboarding.AwaitEnrollmentInput{OnboardingRef: ref(o), TaskToken: "tok-1"}, nil)

	err := e.call("CheckCompletionGates", onboarding.CheckCompletionGatesInput{OnboardingRef: ref(o),
		Enrollment: onboarding.EnrollmentReport{NodeID: o.NodeID, Attempt: 2}}, nil)
	var ge *onboarding.CompletionGateError
	require.ErrorAs(t, err, &ge)
	assert.Equal(t, onboarding.GateAttempt, ge.Gate)
}

func TestFinishOnboarding(t *testing.T) {
	cause, err := json.Marshal(map[string]string{"errorType": "PXEPreflightError",
		"errorMessage": "PXE preflight of machine abc123 interface eno1: the interface is disconnected (no VLAN)"})
	require.NoError(t, err)
	catch := &activities.CatchResult{Error: "PXEPreflightError", Cause: string(cause)}

	t.Run("manual intervention records the caught error once", func(t *testing.T) {
		e := newEnv(t, activitiestest.Options{})
		o := e.f.AddOnboarding(t, "gpu-01", "10.0.0.11")
		e.placeAt(o, domain.StagePXEPreflight, "abc123")
		in := onboarding.FinishOnboardingInput{OnboardingRef: ref(o), Status: "manual_intervention", Error: catch}
		var out onboarding.FinishOnboardingOutput
		e.must("FinishOnboarding", in, &out)
		assert.True(t, out.Published)
		e.must("FinishOnboarding", in, &out)
		assert.False(t, out.Published, "a repeat publishes nothing new")

		got := e.onboarding(o.ID)
		assert.Equal(t, domain.OnboardingManualIntervention, got.Status)
		assert.Equal(t, &domain.Failure{Code: "PXEPreflightError", Stage: domain.StagePXEPreflight,
			Message: "PXE preflight of machine abc123 interface eno1: the interface is disconnected (no VLAN)"}, got.Error)
		assert.Equal(t, domain.StagePXEPreflight, got.Stage, "the stage it stopped in stays")
		assert.NotNil(t, got.CompletedAt)
		evs := e.f.Events.Events()
		require.Len(t, evs, 1)
		assert.Equal(t, events.OnboardingManualInterventionRequired, evs[0].DetailType)
		var d events.OnboardingDetail
		require.NoError(t, json.Unmarshal(evs[0].Detail, &d))
		assert.Equal(t, &events.ErrorDetail{Code: "PXEPreflightError", Message: got.Error.Message}, d.Error)
		assert.Equal(t, "abc123", d.MAASSystemID)
	})
	t.Run("failed with a raw cause", func(t *testing.T) {
		e := newEnv(t, activitiestest.Options{})
		o := e.f.AddOnboarding(t, "gpu-01", "10.0.0.11")
		e.placeAt(o, domain.StageValidate, "")
		e.must("FinishOnboarding", onboarding.FinishOnboardingInput{OnboardingRef: ref(o), Status: "failed",
			Error: &activities.CatchResult{Error: "Lambda.Unknown", Cause: "Task timed out after 900.00 seconds"}}, nil)
		got := e.onboarding(o.ID)
		assert.Equal(t, domain.OnboardingFailed, got.Status)
		assert.Equal(t, "Lambda.Unknown", got.Error.Code)
		assert.Equal(t, "Task timed out after 900.00 seconds", got.Error.Message)
		assert.Equal(t, events.OnboardingFailed, e.f.Events.Events()[0].DetailType)
	})
	t.Run("another attempt's onboarding is left alone", func(t *testing.T) {
		e := newEnv(t, activitiestest.Options{})
		o := e.f.AddOnboarding(t, "gpu-01", "10.0.0.11")
		e.placeAt(o, domain.StageDeploy, "abc123")
		stale := ref(o)
		stale.Attempt = 5
		var out onboarding.FinishOnboardingOutput
		e.must("FinishOnboarding", onboarding.FinishOnboardingInput{OnboardingRef: stale, Status: "failed", Error: catch}, &out)
		assert.True(t, out.Stale)
		assert.Equal(t, domain.OnboardingRunning, e.onboarding(o.ID).Status)
		assert.Empty(t, e.f.Events.Events())
	})
	t.Run("a cancelled onboarding stays cancelled", func(t *testing.T) {
		e := newEnv(t, activitiestest.Options{})
		o := e.f.AddOnboarding(t, "gpu-01", "10.0.0.11")
		_, err := e.f.Store.UpdateOnboarding(context.Background(), o.ID, func(x *domain.Onboarding) error {
			x.Status = domain.OnboardingCancelled
			return nil
		})
		require.NoError(t, err)
		var out onboarding.FinishOnboardingOutput
		e.must("FinishOnboarding", onboarding.FinishOnboardingInput{OnboardingRef: ref(o), Status: "failed", Error: catch}, &out)
		assert.Equal(t, domain.OnboardingCancelled, out.Status)
		assert.Empty(t, e.f.Events.Events())
	})
	t.Run("unknown status", func(t *testing.T) {
		e := newEnv(t, activitiestest.Options{})
		o := e.f.AddOnboarding(t, "gpu-01", "10.0.0.11")
		requireErrorName(t, e.call("FinishOnboarding", onboarding.FinishOnboardingInput{OnboardingRef: ref(o), Status: "done"}, nil), "InvalidInputError")
	})
}

func TestEventPublishFailureIsRetryable(t *testing.T) {
	e := newEnv(t, activitiestest.Options{})
	o := e.f.AddOnboarding(t, "gpu-01", "10.0.0.11")
	e.f.Events.FailWith(context.DeadlineExceeded)
	requireErrorName(t, e.call("ValidateOnboarding", refIn{ref(o)}, nil), "EventPublishError")
	assert.Equal(t, "retry", e.lastExit(o.ID, domain.StageValidate).Outcome)
	e.f.Events.FailWith(nil)
	e.must("ValidateOnboarding", refIn{ref(o)}, nil)
	assert.Len(t, e.f.Events.Events(), 1, "published on the retry, once")
}

// leakyCompleter fails the way a workflow service might: quoting the token.
type leakyCompleter struct{}

func (leakyCompleter) CompleteTask(_ context.Context, taskToken string, _ []byte) error {
	return fmt.Errorf("complete enrollment task: %w", fmt.Errorf("InvalidToken: Invalid token %q", taskToken))
}

func TestAwaitEnrollmentCompletionErrorHidesTheTaskToken(t *testing.T) {
	e := newEnv(t, activitiestest.Options{})
	e.addHardware("gpu-01", "10.0.0.11", "52:54:00:00:00:11", maassim.Faults{})
	o := e.f.AddOnboarding(t, "gpu-01", "10.0.0.11")
	e.toPredeployed(o)
	e.deploy(o)
	require.Eventually(t, func() bool { return len(e.f.NodeAPI.Enrolled()) == 1 }, 10*time.Second, time.Millisecond)
	e.f.Completer.Set(leakyCompleter{})

	err := e.call("AwaitEnrollment", onboarding.AwaitEnrollmentInput{OnboardingRef: ref(o), TaskToken: "secret-task-token"}, nil)
	requireErrorName(t, err, "EnrollmentCompletionError")
	assert.NotContains(t, err.Error(), "secret-task-token")
	assert.NotContains(t, e.f.Logs.String(), "secret-task-token")
}
