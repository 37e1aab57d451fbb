package workflow_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda/messages"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/internal/maassim"
	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/activities/activitiestest"
	"github.com/maasflow/maasflow/shared/asl"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
)

// handlerFunc adapts a function to asl.TaskHandler.
type handlerFunc func(ctx context.Context, payload []byte) ([]byte, error)

func (f handlerFunc) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	return f(ctx, payload)
}

func replaceHandler(activity string, h func(vc *asl.VirtualClock) asl.TaskHandler) map[string]func(vc *asl.VirtualClock) asl.TaskHandler {
	return map[string]func(vc *asl.VirtualClock) asl.TaskHandler{activity: h}
}

func requireFailed(t *testing.T, r result, code string) {
	t.Helper()
	require.Equal(t, asl.StatusFailed, r.exec.Status)
	assert.Equal(t, code, r.exec.Error, r.exec.Cause)
	assert.Equal(t, domain.OnboardingFailed, r.ob.Status)
	require.NotNil(t, r.ob.Error)
	assert.Equal(t, code, r.ob.Error.Code)
}

// adopted records a Ready machine on a pending onboarding, as a run that
// stopped after commissioning leaves it.
func adopted(t *testing.T, h *harness, hostname, bmc, mac string) domain.Onboarding {
	t.Helper()
	sid := h.machineSeed(hostname, bmc, mac, "ready")
	o := h.f.AddOnboarding(t, hostname, bmc)
	o, err := h.f.Store.UpdateOnboarding(context.Background(), o.ID, func(x *domain.Onboarding) error {
		x.MAASSystemID, x.Stage = sid, domain.StageWaitReady
		return nil
	})
	require.NoError(t, err)
	return o
}

// TestRunEntersAtAMiddleStage starts an execution at storage on the
// embedded runtime: the guardrails run, then the workflow picks up there,
// with no activity changed for it.
func TestRunEntersAtAMiddleStage(t *testing.T) {
	h := newHarness(t, options{})
	o := adopted(t, h, "gpu-20", "10.0.0.40", "52:54:00:00:00:40")

	r := h.runAt(o, domain.StageStorage)
	requireCompleted(t, r)
	calls, _ := h.simCalls()
	assert.Zero(t, calls["POST "], "nothing is created")
	assert.Zero(t, calls["POST commission"], "the run entered after commissioning")
	assert.Equal(t, 1, calls["POST deploy"])
	rows, err := h.f.Store.ListOnboardingEvents(context.Background(), o.ID)
	require.NoError(t, err)
	entered := map[domain.Stage]bool{}
	for _, row := range rows {
		if row.Kind == domain.TimelineStageEntered {
			entered[row.Stage] = true
		}
	}
	assert.True(t, entered[domain.StageValidate], "the guardrails always run")
	assert.False(t, entered[domain.StageDiscover])
	assert.False(t, entered[domain.StageCommission])
	assert.True(t, entered[domain.StageStorage])
	assert.True(t, entered[domain.StageDone])
}

func TestUnknownStartStageFails(t *testing.T) {
	h := newHarness(t, options{})
	o := h.f.AddOnboarding(t, "gpu-21", "10.0.0.41")

	r := h.runAt(o, "somewhere")
	requireFailed(t, r, activities.CodeInvalidStartStage)
	assert.Contains(t, r.ob.Error.Message, "somewhere")
	_, mutating := h.simCalls()
	assert.Zero(t, mutating, "nothing in MAAS was touched")
}

// A handler that panics: after MAAS was touched the run needs an operator
// (the machine may be half-done), before it the run fails and frees the
// host.
func TestCrashAfterMAASWasTouchedNeedsAnOperator(t *testing.T) {
	panics := func(*asl.VirtualClock) asl.TaskHandler {
		return handlerFunc(func(context.Context, []byte) ([]byte, error) { panic("nil map write in the storage layout") })
	}
	h := newHarness(t, options{handlers: replaceHandler("ConfigureStorage", panics)})
	h.hardware("gpu-22", "10.0.0.42", "52:54:00:00:00:42", maassim.Faults{})
	o := h.f.AddOnboarding(t, "gpu-22", "10.0.0.42")

	r := h.run(o)
	requireManual(t, r, "string")
	assert.Contains(t, r.ob.Error.Message, "nil map write in the storage layout", "the cause is kept")
	assert.Equal(t, domain.StageConfigureMachine, r.ob.Error.Stage)
}

func TestCrashBeforeMAASWasTouchedFails(t *testing.T) {
	panics := func(*asl.VirtualClock) asl.TaskHandler {
		return handlerFunc(func(context.Context, []byte) ([]byte, error) { panic("guardrail crash") })
	}
	h := newHarness(t, options{handlers: replaceHandler("ValidateOnboarding", panics)})
	o := h.f.AddOnboarding(t, "gpu-23", "10.0.0.43")

	r := h.run(o)
	requireFailed(t, r, "string")
	assert.Contains(t, r.ob.Error.Message, "guardrail crash")
	assert.Zero(t, h.f.Sim.Calls().Total, "MAAS was never asked anything")
}

// A handler that runs past the Task's TimeoutSeconds (States.Timeout)
// after MAAS was touched needs an operator, never failed.
func TestTaskTimeoutAfterMAASWasTouchedNeedsAnOperator(t *testing.T) {
	hangs := func(vc *asl.VirtualClock) asl.TaskHandler {
		return handlerFunc(func(ctx context.Context, _ []byte) ([]byte, error) {
			// Hang as a stuck function would: let virtual time run on until
			// the Task's timeout cancels the invocation.
			vc.Idle()
			<-ctx.Done()
			vc.Busy()
			return nil, ctx.Err()
		})
	}
	h := newHarness(t, options{handlers: replaceHandler("PreflightPXE", hangs)})
	h.hardware("gpu-24", "10.0.0.44", "52:54:00:00:00:44", maassim.Faults{})
	o := h.f.AddOnboarding(t, "gpu-24", "10.0.0.44")

	r := h.run(o)
	requireManual(t, r, "States.Timeout")
	assert.Equal(t, domain.StageStorage, r.ob.Error.Stage)
}

// The names the Lambda platform reports for a function that timed out,
// crashed or ran out of memory.
func TestLambdaLevelFailuresAfterMAASWasTouchedNeedAnOperator(t *testing.T) {
	for _, name := range []string{"Sandbox.Timedout", "Runtime.ExitError", "Runtime.OutOfMemory", "Lambda.Unknown"} {
		t.Run(name, func(t *testing.T) {
			fails := func(*asl.VirtualClock) asl.TaskHandler {
				return handlerFunc(func(context.Context, []byte) ([]byte, error) {
					return nil, messages.InvokeResponse_Error{Type: name, Message: "RequestId: 1 Error: " + name}
				})
			}
			h := newHarness(t, options{handlers: replaceHandler("CheckPredeploy", fails)})
			h.hardware("gpu-25", "10.0.0.45", "52:54:00:00:00:45", maassim.Faults{})
			o := h.f.AddOnboarding(t, "gpu-25", "10.0.0.45")

			r := h.run(o)
			requireManual(t, r, name)
		})
	}
}

// slowMAAS holds every request for one MAAS op until the caller gives up.
type slowMAAS struct {
	base http.RoundTripper
	op   string
	held atomic.Int32
}

func (s *slowMAAS) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Query().Get("op") != s.op {
		return s.base.RoundTrip(req)
	}
	s.held.Add(1)
	<-req.Context().Done()
	return nil, req.Context().Err()
}

// TestSlowMAASIsRetriedThenNeedsAnOperator: a MAAS call past the
// invocation's budget is a retryable MAASTimeoutError; the state machine
// backs off and retries it, and once the retries are spent the run needs
// an operator. It never fails through States.Timeout.
func TestSlowMAASIsRetriedThenNeedsAnOperator(t *testing.T) {
	var slow *slowMAAS
	h := newHarness(t, options{deps: func(f *activitiestest.Fixture, d *activities.Deps) {
		slow = &slowMAAS{base: f.SimServer.Client().Transport, op: "commission"}
		d.InvocationBudget = 400 * time.Millisecond
		d.MAAS = activities.NewSiteConnector(f.Store, f.Secrets, func(url string, key domain.Secret) (activities.MAAS, error) {
			return maas.NewClient(url, key, maas.WithNow(f.Clock.Now), maas.WithHTTPClient(&http.Client{Transport: slow}))
		})
	}})
	h.hardware("gpu-26", "10.0.0.46", "52:54:00:00:00:46", maassim.Faults{})
	o := h.f.AddOnboarding(t, "gpu-26", "10.0.0.46")

	r := h.run(o)
	requireManual(t, r, "MAASTimeoutError")
	assert.Equal(t, domain.StageCommission, r.ob.Error.Stage)
	assert.Equal(t, int32(6), slow.held.Load(), "the first call and the state machine's five retries")
}
