package onboarding_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/internal/maassim"
	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/activities/activitiestest"
	"github.com/maasflow/maasflow/shared/activities/onboarding"
	"github.com/maasflow/maasflow/shared/config"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
)

var t0 = time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)

// pollStages are the stages the state machine runs each poll loop in.
var pollStages = map[activities.PollTarget]domain.Stage{
	activities.TargetReady:      domain.StageWaitReady,
	activities.TargetDeployed:   domain.StageWaitDeployed,
	activities.TargetDeployable: domain.StageRecoverDeploy,
}

// env runs activities the way both runtimes do: through aws-lambda-go's
// handler with unknown fields refused, on a fake clock shared with the
// simulator and the store.
type env struct {
	t        *testing.T
	clk      *clockwork.FakeClock
	f        *activitiestest.Fixture
	handlers map[string]lambda.Handler
}

func newEnv(t *testing.T, o activitiestest.Options) *env {
	t.Helper()
	clk := clockwork.NewFakeClockAt(t0)
	o.Clock = clk
	if o.Seed == 0 {
		o.Seed = 1
	}
	f := activitiestest.New(t, o)
	e := &env{t: t, clk: clk, f: f, handlers: map[string]lambda.Handler{}}
	for _, fn := range onboarding.Catalog(f.Deps) {
		e.handlers[fn.Activity] = lambda.NewHandlerWithOptions(fn.Handler, config.HandlerOptions()...)
	}
	return e
}

// call invokes an activity with in as its JSON payload and decodes the
// output into out (when not nil). It returns the handler's error as the
// Lambda runtime sees it.
func (e *env) call(activity string, in, out any) error {
	e.t.Helper()
	h, ok := e.handlers[activity]
	require.True(e.t, ok, "unknown activity %s", activity)
	payload, err := json.Marshal(in)
	require.NoError(e.t, err)
	res, err := h.Invoke(context.Background(), payload)
	if err != nil {
		return err
	}
	if out != nil {
		require.NoError(e.t, json.Unmarshal(res, out))
	}
	return nil
}

// must invokes an activity that has to succeed.
func (e *env) must(activity string, in, out any) {
	e.t.Helper()
	require.NoError(e.t, e.call(activity, in, out), activity)
}

// lambdaErrorType is the errorType aws-lambda-go reports (lambda/errors.go):
// the dereferenced type name.
func lambdaErrorType(err error) string {
	t := reflect.TypeOf(err)
	if t.Kind() == reflect.Pointer {
		return t.Elem().Name()
	}
	return t.Name()
}

func requireErrorName(t *testing.T, err error, name string) {
	t.Helper()
	require.Error(t, err)
	assert.Equal(t, name, lambdaErrorType(err), "error: %v", err)
}

func (e *env) onboarding(id string) domain.Onboarding {
	e.t.Helper()
	o, err := e.f.Store.GetOnboarding(context.Background(), id)
	require.NoError(e.t, err)
	return o
}

func (e *env) timeline(id string) []domain.TimelineEntry {
	e.t.Helper()
	rows, err := e.f.Store.ListOnboardingEvents(context.Background(), id)
	require.NoError(e.t, err)
	return rows
}

func (e *env) machine(systemID string) maas.Machine {
	e.t.Helper()
	c, err := maas.NewClient(e.f.Site.MAASURL, activitiestest.APIKey, maas.WithNow(e.clk.Now))
	require.NoError(e.t, err)
	m, err := c.Get(context.Background(), systemID)
	require.NoError(e.t, err)
	return m
}

// mutatingCalls counts the simulator's MAAS calls that are not reads.
func (e *env) mutatingCalls() int {
	n := 0
	for _, c := range e.f.Sim.Calls().Calls {
		if c.Method != "GET" {
			n += c.Count
		}
	}
	return n
}

func (e *env) addHardware(hostname, bmc, mac string, faults maassim.Faults, extraMACs ...string) {
	e.t.Helper()
	require.NoError(e.t, e.f.Sim.AddHardware(maassim.Hardware{BMCIP: bmc, PXEMAC: mac, Hostname: hostname, Faults: faults, ExtraMACs: extraMACs}))
}

func ref(o domain.Onboarding) onboarding.OnboardingRef { return activitiestest.Ref(o) }

type refIn struct {
	onboarding.OnboardingRef
}

// toDiscovered runs Validate and Discover.
func (e *env) toDiscovered(o domain.Onboarding) onboarding.DiscoverMachineOutput {
	e.t.Helper()
	e.must("ValidateOnboarding", refIn{ref(o)}, nil)
	var out onboarding.DiscoverMachineOutput
	e.must("DiscoverMachine", refIn{ref(o)}, &out)
	return out
}

// poll calls CheckMachine until the outcome is not in_progress, advancing
// the clock by the machine watch's round (30 s) between checks: the
// soonest the watcher wakes a parked wait.
func (e *env) poll(o domain.Onboarding, target activities.PollTarget, p activities.Poll) onboarding.CheckMachineOutput {
	e.t.Helper()
	for range 200 {
		var out onboarding.CheckMachineOutput
		e.must("CheckMachine", onboarding.CheckMachineInput{OnboardingRef: ref(o), Target: target, Stage: pollStages[target], Poll: p}, &out)
		if out.Outcome != activities.OutcomeInProgress {
			// The next state runs later, as under the state machine: what
			// follows (a deploy's event window) starts on a later second.
			e.clk.Advance(time.Second)
			return out
		}
		e.clk.Advance(watchRound)
		p = out.Poll
	}
	e.t.Fatalf("poll %s never ended", target)
	return onboarding.CheckMachineOutput{}
}

// watchRound is the machine watch's cadence (machine-watch.asl.json).
const watchRound = 30 * time.Second

// toReady drives a fresh onboarding of a simulated host to Ready.
func (e *env) toReady(o domain.Onboarding) {
	e.t.Helper()
	e.toDiscovered(o)
	e.must("CommissionMachine", refIn{ref(o)}, nil)
	out := e.poll(o, activities.TargetReady, activities.Poll{})
	require.Equal(e.t, activities.OutcomeDone, out.Outcome, out.Reason)
}

// toPredeployed continues to the end of the pre-deploy checks.
func (e *env) toPredeployed(o domain.Onboarding) {
	e.t.Helper()
	e.toReady(o)
	e.must("ConfigureStorage", refIn{ref(o)}, nil)
	e.must("PreflightPXE", refIn{ref(o)}, nil)
	e.must("CheckPredeploy", refIn{ref(o)}, nil)
}

// deploy runs DeployMachine and polls to the end of the deployed wait.
func (e *env) deploy(o domain.Onboarding) (onboarding.DeployMachineOutput, onboarding.CheckMachineOutput) {
	e.t.Helper()
	var d onboarding.DeployMachineOutput
	e.must("DeployMachine", refIn{ref(o)}, &d)
	out := e.poll(o, activities.TargetDeployed, activities.Poll{StartedAt: d.StartedAt})
	return d, out
}

// assertNoSecrets checks that no seeded secret (nor the user_data marker)
// shows up in s.
func assertNoSecrets(t *testing.T, where, s string) {
	t.Helper()
	for _, secret := range activitiestest.Secrets() {
		assert.NotContains(t, s, secret, "%s holds a seeded secret", where)
	}
	assert.NotContains(t, s, "#cloud-config", "%s holds user_data", where)
	assert.NotContains(t, s, "GPUAAS_ENROLLMENT_TOKEN\":\"", "%s holds a bundle", where)
}

func timelineText(rows []domain.TimelineEntry) string {
	var b strings.Builder
	for _, r := range rows {
		b.WriteString(string(r.Kind) + " " + string(r.Stage) + " " + r.Outcome + " " + r.Source + " " + r.Detail + "\n")
	}
	return b.String()
}

// placeAt puts a fresh onboarding straight into a running stage with a
// machine, as if the earlier stages had run.
func (e *env) placeAt(o domain.Onboarding, stage domain.Stage, systemID string) {
	e.t.Helper()
	_, err := e.f.Store.UpdateOnboarding(context.Background(), o.ID, func(x *domain.Onboarding) error {
		x.Status, x.Stage, x.MAASSystemID = domain.OnboardingRunning, stage, systemID
		return nil
	})
	require.NoError(e.t, err)
}

func (e *env) callsTo(method, op string) int {
	n := 0
	for _, c := range e.f.Sim.Calls().Calls {
		if c.Method == method && c.Op == op {
			n += c.Count
		}
	}
	return n
}

func (e *env) lastExit(id string, stage domain.Stage) domain.TimelineEntry {
	e.t.Helper()
	var last domain.TimelineEntry
	for _, r := range e.timeline(id) {
		if r.Kind == domain.TimelineStageExited && r.Stage == stage {
			last = r
		}
	}
	return last
}

func lambdaHandler(h any) lambda.Handler {
	return lambda.NewHandlerWithOptions(h, config.HandlerOptions()...)
}
