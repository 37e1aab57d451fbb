package workflow_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/internal/maassim"
	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/activities/activitiestest"
	"github.com/maasflow/maasflow/shared/activities/onboarding"
	"github.com/maasflow/maasflow/shared/asl"
	"github.com/maasflow/maasflow/shared/config"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/events"
)

// reopen does to a stopped onboarding what the admin API does before it
// starts a recovery's execution: a new attempt (restart-clean) or a new run
// of the same attempt (adopt), status pending, and the operation's note.
func reopen(t *testing.T, h *harness, id string, newAttempt bool) domain.Onboarding {
	t.Helper()
	o, err := h.f.Store.UpdateOnboarding(context.Background(), id, func(o *domain.Onboarding) error {
		if newAttempt {
			o.Attempt, o.Run, o.EnrollmentTokenHash = o.Attempt+1, 0, ""
		} else {
			o.Run++
		}
		o.Status, o.Stage, o.Error, o.CompletedAt, o.DeployAttempts = domain.OnboardingPending, domain.StageValidate, nil, nil, 0
		o.ExecutionID, o.EnrollmentTaskToken = "", ""
		return nil
	})
	require.NoError(t, err)
	op := domain.OpAdopt
	if newAttempt {
		op = domain.OpRestartClean
	}
	require.NoError(t, h.f.Store.AppendOnboardingEvents(context.Background(), domain.TimelineEntry{
		OnboardingID: o.ID, Time: h.clock.Now(), Attempt: o.Attempt, Kind: domain.TimelineNote, Stage: o.Stage,
		Outcome: string(domain.OnboardingPending), Source: string(op), Detail: string(op) + " by the test",
	}))
	return o
}

func notes(t *testing.T, h *harness, id, source string) []string {
	t.Helper()
	rows, err := h.f.Store.ListOnboardingEvents(context.Background(), id)
	require.NoError(t, err)
	var out []string
	for _, r := range rows {
		if r.Kind == domain.TimelineNote && r.Source == source && r.Outcome != string(domain.OnboardingPending) {
			out = append(out, r.Detail)
		}
	}
	return out
}

// TestRestartCleanReleasesWithEraseAndCommissionsAfresh: a run stopped
// after deploy failed is restarted clean: the machine is released with the
// policy's erase, commissioned again and deployed.
func TestRestartCleanReleasesWithEraseAndCommissionsAfresh(t *testing.T) {
	quick := domain.EraseQuick
	h := newHarness(t, options{sitePolicy: domain.Policy{DecommissionPolicy: domain.DecommissionPolicy{EraseMode: &quick}}})
	h.hardware("gpu-30", "10.0.0.50", "52:54:00:00:00:50", maassim.Faults{DeployOtherFailures: 1})
	o := h.f.AddOnboarding(t, "gpu-30", "10.0.0.50")
	first := h.run(o)
	requireManual(t, first, activities.CodeDeployFailed)
	systemID := first.ob.MAASSystemID
	before, _ := h.simCalls()

	o = reopen(t, h, o.ID, true)
	r := h.runAt(o, domain.StageReset)
	requireCompleted(t, r)
	assert.Equal(t, 2, r.ob.Attempt)
	assert.Equal(t, systemID, r.ob.MAASSystemID, "the same machine, released and commissioned again")
	after, _ := h.simCalls()
	assert.Equal(t, 1, after["POST release"]-before["POST release"], "released once")
	assert.Equal(t, 1, after["POST commission"]-before["POST commission"], "commissioned afresh")
	assert.Equal(t, 1, after["POST deploy"]-before["POST deploy"])
	sent := notes(t, h, o.ID, "reset")
	require.Len(t, sent, 1)
	assert.Contains(t, sent[0], "erase quick")
}

// TestRestartCleanOfAReadyMachineErasesIt: MAAS erases only on a release,
// so a Ready machine is allocated and released; with erase_mode none it is
// only commissioned again.
func TestRestartCleanOfAReadyMachineErasesIt(t *testing.T) {
	for _, mode := range []string{domain.EraseSecure, domain.EraseNone} {
		t.Run(mode, func(t *testing.T) {
			h := newHarness(t, options{sitePolicy: domain.Policy{DecommissionPolicy: domain.DecommissionPolicy{EraseMode: &mode}}})
			o := adopted(t, h, "gpu-31", "10.0.0.51", "52:54:00:00:00:51")
			o = reopen(t, h, o.ID, true)
			requireCompleted(t, h.runAt(o, domain.StageReset))
			calls, _ := h.simCalls()
			assert.Equal(t, 1, calls["POST commission"])
			if mode == domain.EraseNone {
				assert.Zero(t, calls["POST release"])
			} else {
				assert.Equal(t, 1, calls["POST release"])
			}
		})
	}
}

// TestAdoptReadyContinuesAtStorage: a machine an operator commissioned by
// hand is adopted: the run goes on at storage and commissions nothing.
func TestAdoptReadyContinuesAtStorage(t *testing.T) {
	h := newHarness(t, options{})
	o := adopted(t, h, "gpu-32", "10.0.0.52", "52:54:00:00:00:52")
	o = reopen(t, h, o.ID, false)
	r := h.runAt(o, domain.StageAdopt)
	requireCompleted(t, r)
	calls, _ := h.simCalls()
	assert.Zero(t, calls["POST commission"])
	assert.Equal(t, 1, calls["POST deploy"])
	adopts := notes(t, h, o.ID, "adopt")
	require.Len(t, adopts, 1)
	assert.Contains(t, adopts[0], "Ready: continuing at storage")
}

// TestAdoptDeployedNeverEnrolledNeedsAnOperator: a machine deployed by hand
// without maasflow's bootstrap has no node agent: the run stops for an
// operator, saying so, and the node does not become active.
func TestAdoptDeployedNeverEnrolledNeedsAnOperator(t *testing.T) {
	h := newHarness(t, options{})
	sid := h.machineSeed("gpu-33", "10.0.0.53", "52:54:00:00:00:53", "deployed")
	o := h.f.AddOnboarding(t, "gpu-33", "10.0.0.53")
	_, err := h.f.Store.UpdateOnboarding(context.Background(), o.ID, func(x *domain.Onboarding) error {
		x.MAASSystemID = sid
		return nil
	})
	require.NoError(t, err)
	o = reopen(t, h, o.ID, false)
	r := h.runAt(o, domain.StageAdopt)
	requireManual(t, r, "AdoptionRefusedError")
	assert.Contains(t, r.ob.Error.Message, "Deployed")
	assert.Contains(t, r.ob.Error.Message, "never enrolled")
	assert.Equal(t, domain.StageAdopt, r.ob.Error.Stage)
	node, err := h.f.Store.GetNode(context.Background(), o.NodeID)
	require.NoError(t, err)
	assert.NotEqual(t, domain.NodeActive, node.Status)

	// Adopted again after the operator looked: the second run of the same
	// attempt that stops publishes its own event.
	requireManual(t, h.runAt(reopen(t, h, o.ID, false), domain.StageAdopt), "AdoptionRefusedError")
	manual := 0
	for _, typ := range h.eventTypes() {
		if typ == events.OnboardingManualInterventionRequired {
			manual++
		}
	}
	assert.Equal(t, 2, manual, "one manual_intervention_required per run: %v", h.eventTypes())
}

// TestAdoptOtherStatusesNameTheOperationThatFits: what MAAS shows and the
// operation that fits are in the error an operator reads.
func TestAdoptOtherStatusesNameTheOperationThatFits(t *testing.T) {
	for status, fits := range map[string]string{"new": "rerun", "broken": "mark it fixed"} {
		t.Run(status, func(t *testing.T) {
			h := newHarness(t, options{})
			sid := h.machineSeed("gpu-34", "10.0.0.54", "52:54:00:00:00:54", status)
			o := h.f.AddOnboarding(t, "gpu-34", "10.0.0.54")
			_, err := h.f.Store.UpdateOnboarding(context.Background(), o.ID, func(x *domain.Onboarding) error {
				x.MAASSystemID = sid
				return nil
			})
			require.NoError(t, err)
			r := h.runAt(reopen(t, h, o.ID, false), domain.StageAdopt)
			requireManual(t, r, "AdoptionRefusedError")
			assert.Contains(t, r.ob.Error.Message, fits)
			_, mutating := h.simCalls()
			assert.Zero(t, mutating, "adopt reads MAAS only")
		})
	}
}

// TestAdoptDeployedAndEnrolledPassesTheGates: the node enrolled with this
// attempt's token but the run stopped at the gates; adopt hands the
// enrollment to the completion gates, which complete it.
func TestAdoptDeployedAndEnrolledPassesTheGates(t *testing.T) {
	var deps activities.Deps
	var failed atomic.Bool
	gates := func(*asl.VirtualClock) asl.TaskHandler {
		once := func(ctx context.Context, in onboarding.CheckCompletionGatesInput) (onboarding.CheckCompletionGatesOutput, error) {
			if failed.CompareAndSwap(false, true) {
				return onboarding.CheckCompletionGatesOutput{}, &onboarding.CompletionGateError{Gate: onboarding.GateMAASDeployed, Reason: "a MAAS hiccup"}
			}
			return onboarding.New(deps).CheckCompletionGates(ctx, in)
		}
		return lambda.NewHandlerWithOptions(once, config.HandlerOptions()...)
	}
	h := newHarness(t, options{
		deps:     func(_ *activitiestest.Fixture, d *activities.Deps) { deps = *d },
		handlers: replaceHandler("CheckCompletionGates", gates),
	})
	h.hardware("gpu-35", "10.0.0.55", "52:54:00:00:00:55", maassim.Faults{})
	o := h.f.AddOnboarding(t, "gpu-35", "10.0.0.55")
	requireManual(t, h.run(o), "CompletionGateError")
	node, err := h.f.Store.GetNode(context.Background(), o.NodeID)
	require.NoError(t, err)
	assert.Equal(t, domain.NodeOnboarding, node.Status, "a node whose run stopped after it enrolled is not left active")
	require.NotNil(t, node.EnrolledAt)

	r := h.runAt(reopen(t, h, o.ID, false), domain.StageAdopt)
	requireCompleted(t, r)
	adopts := notes(t, h, o.ID, "adopt")
	require.Len(t, adopts, 2, "the reactivation and the adoption, each saying why")
	assert.Contains(t, adopts[0], "active again")
	assert.Contains(t, adopts[1], "Deployed, with node")
	node, err = h.f.Store.GetNode(context.Background(), o.NodeID)
	require.NoError(t, err)
	assert.Equal(t, domain.NodeActive, node.Status)
	calls, _ := h.simCalls()
	assert.Equal(t, 1, calls["POST deploy"], "nothing deployed again")
}
