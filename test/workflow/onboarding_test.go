// Package workflow_test runs statemachines/onboarding.asl.json on the
// embedded ASL runtime with the real activities, the MAAS simulator (over
// HTTP through the real MAAS client) and the read model on minidyn, in
// virtual time: every Wait, retry back-off and MAAS phase plays out without
// sleeping.
package workflow_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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
	"github.com/maasflow/maasflow/shared/workflow"
)

var t0 = time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)

// runTimeout bounds one execution in wall-clock time: a hung run fails the
// test instead of blocking it. Virtual time makes real runs take well
// under a second.
const runTimeout = 60 * time.Second

type harness struct {
	t      testing.TB
	f      *activitiestest.Fixture
	engine *asl.Engine
	smARN  string
	clock  *asl.VirtualClock
	// watchARN is the machine watch state machine's.
	watchARN string
	// watch counts the machine watch's own database operations and MAAS
	// calls, apart from the workflow's.
	watch *watchShare
}

type options struct {
	sitePolicy domain.Policy
	// tokenWaitsIdle lets virtual time run past an enrollment wait nobody
	// answers (the never-enrolls case).
	tokenWaitsIdle bool
	// localDB runs the store on local mode's database (benchmarks).
	localDB bool
	// simSkew and simSecondSubnet set the simulator's region-wide options (clock skew, a second
	// subnet on the PXE VLAN).
	simSkew         time.Duration
	simSecondSubnet bool
	// simDurations are the simulator's phase lengths (zero: its defaults).
	simDurations maassim.Durations
	// deps adjusts the activities' dependencies before the handlers are
	// built (a slow MAAS, a short invocation budget).
	deps func(f *activitiestest.Fixture, d *activities.Deps)
	// handlers replace activities' handlers by activity name (a crash, a
	// hang); each is built with the harness's clock.
	handlers map[string]func(vc *asl.VirtualClock) asl.TaskHandler
}

func newHarness(t testing.TB, o options) *harness {
	t.Helper()
	vc := asl.NewVirtualClock(t0)
	f := activitiestest.New(t, activitiestest.Options{Clock: vc, SitePolicy: o.sitePolicy, Seed: 7, LocalDB: o.localDB,
		SimClockSkew: o.simSkew, SimSecondSubnet: o.simSecondSubnet, SimDurations: o.simDurations})
	tasks := map[string]asl.TaskHandler{}
	subs := map[string]string{}
	if o.deps != nil {
		o.deps(f, &f.Deps)
	}
	watch := newWatchShare(f, vc)
	var schedule atomic.Pointer[workflow.MachineWatchSchedule]
	f.Deps.Watches = watch.store
	watchSites := watch.watchSites(f.Deps)
	for _, fn := range onboarding.Catalog(f.Deps) {
		arn := "arn:aws:lambda:us-east-1:123456789012:function:maasflow-" + fn.Name
		subs[fn.Substitution] = arn
		if fn.Activity == "WatchSites" {
			fn.Handler = watchSites
		}
		tasks[arn] = lambda.NewHandlerWithOptions(fn.Handler, config.HandlerOptions()...)
		if fn.Activity == "WatchMachine" {
			tasks[arn] = wakingTask{tasks[arn], &schedule}
		}
		if replace, ok := o.handlers[fn.Activity]; ok {
			tasks[arn] = replace(vc)
		}
	}
	def, err := os.ReadFile("../../statemachines/onboarding.asl.json")
	require.NoError(t, err)
	sm, err := asl.Parse(def, subs)
	require.NoError(t, err)
	engine := asl.NewEngine(asl.Options{Clock: vc, Tasks: tasks, TokenWaitsIdle: o.tokenWaitsIdle,
		IdleTokenFunctions: map[string]bool{subs["WatchMachineFunctionArn"]: true}})
	arn, err := engine.CreateStateMachine("onboarding", sm)
	require.NoError(t, err)
	f.Completer.Set(workflow.NewLocal(engine, arn))
	// The machine waits park on the machine watch, which its schedule runs
	// every minute of the harness's clock, as in local mode — while an
	// onboarding runs: the virtual clock jumps to the next tick whenever
	// nothing runs, so a schedule left armed would drive it on without end
	// once the harness's work is done. A parked wait wakes it again.
	idle := func() bool { return len(engine.ListExecutions(arn, asl.StatusRunning)) == 0 }
	watchARN, sched, err := workflow.StartLocalMachineWatch(engine, subs, vc, nil, idle)
	require.NoError(t, err)
	schedule.Store(sched)
	t.Cleanup(sched.Stop)
	return &harness{t: t, f: f, engine: engine, smARN: arn, clock: vc, watchARN: watchARN, watch: watch}
}

// wakingTask is WatchMachine's handler that also wakes the harness's
// machine watch schedule, which pauses while no onboarding runs.
type wakingTask struct {
	asl.TaskHandler
	schedule *atomic.Pointer[workflow.MachineWatchSchedule]
}

func (w wakingTask) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	out, err := w.TaskHandler.Invoke(ctx, payload)
	if s := w.schedule.Load(); s != nil {
		s.Wake()
	}
	return out, err
}

type result struct {
	exec asl.Execution
	ob   domain.Onboarding
	// state is the execution's final state (output on success; the input of
	// the failure for a failed run is not exposed, so state is empty then).
	state map[string]any
}

// run starts the onboarding's execution through the workflow adapter, as
// the admin API does, and waits for it to end.
func (h *harness) run(o domain.Onboarding) result {
	h.t.Helper()
	return h.runAt(o, "")
}

// runAt starts the onboarding's execution at stage start (empty: at the
// beginning) and waits for it to end.
func (h *harness) runAt(o domain.Onboarding, start domain.Stage) result {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	execARN, err := workflow.NewLocal(h.engine, h.smARN).StartOnboardingAt(ctx, o, start)
	require.NoError(h.t, err)
	exec, err := h.engine.Wait(ctx, execARN)
	require.NoError(h.t, err, "execution did not end")
	r := result{exec: exec}
	r.ob, err = h.f.Store.GetOnboarding(context.Background(), o.ID)
	require.NoError(h.t, err)
	if len(exec.Output) > 0 {
		require.NoError(h.t, json.Unmarshal([]byte(exec.Output), &r.state))
	}
	return r
}

func (h *harness) hardware(hostname, bmc, mac string, faults maassim.Faults) {
	h.t.Helper()
	require.NoError(h.t, h.f.Sim.AddHardware(maassim.Hardware{BMCIP: bmc, PXEMAC: mac, Hostname: hostname, Faults: faults}))
}

func (h *harness) machineSeed(hostname, bmc, mac, status string) string {
	h.t.Helper()
	sid, err := h.f.Sim.AddMachine(maassim.MachineSeed{Hostname: hostname, BMCIP: bmc, PXEMAC: mac, Status: status})
	require.NoError(h.t, err)
	return sid
}

func (h *harness) eventTypes() []string {
	var out []string
	for _, e := range h.f.Events.Events() {
		out = append(out, e.DetailType)
	}
	return out
}

// simCalls counts the simulator's MAAS calls by method and op ("" for
// plain CRUD), and the non-GET total.
func (h *harness) simCalls() (byOp map[string]int, mutating int) {
	byOp = map[string]int{}
	for _, c := range h.f.Sim.Calls().Calls {
		byOp[c.Method+" "+c.Op] += c.Count
		if c.Method != "GET" {
			mutating += c.Count
		}
	}
	return byOp, mutating
}

func requireCompleted(t *testing.T, r result) {
	t.Helper()
	require.Equal(t, asl.StatusSucceeded, r.exec.Status, "error %s: %s", r.exec.Error, r.exec.Cause)
	assert.Equal(t, domain.OnboardingCompleted, r.ob.Status)
	assert.Equal(t, domain.StageDone, r.ob.Stage)
	assert.NotNil(t, r.ob.CompletedAt)
	assert.Nil(t, r.ob.Error)
}

func requireManual(t *testing.T, r result, code string) {
	t.Helper()
	require.Equal(t, asl.StatusFailed, r.exec.Status)
	assert.Equal(t, code, r.exec.Error, r.exec.Cause)
	assert.Equal(t, domain.OnboardingManualIntervention, r.ob.Status)
	require.NotNil(t, r.ob.Error)
	assert.Equal(t, code, r.ob.Error.Code)
	assert.NotEmpty(t, r.ob.Error.Message)
	assert.NotEmpty(t, r.ob.Error.Stage)
}

func machineOf(t *testing.T, r result) (rule, action string) {
	t.Helper()
	m, ok := r.state["machine"].(map[string]any)
	require.True(t, ok, "state has no machine: %v", r.state)
	return m["rule"].(string), m["action"].(string)
}

func TestCleanOnboardingCompletes(t *testing.T) {
	h := newHarness(t, options{})
	h.hardware("gpu-01", "10.0.0.11", "52:54:00:00:00:11", maassim.Faults{})
	o := h.f.AddOnboarding(t, "gpu-01", "10.0.0.11")

	r := h.run(o)
	requireCompleted(t, r)
	rule, action := machineOf(t, r)
	assert.Equal(t, domain.DiscoveryRuleNone, rule)
	assert.Equal(t, domain.DiscoveryCreate, action)
	assert.Equal(t, 1, r.ob.DeployAttempts)
	assert.Equal(t, []string{events.OnboardingStarted, events.OnboardingCompleted}, h.eventTypes())
	assert.Equal(t, []string{o.NodeID}, h.f.NodeAPI.Enrolled())

	// The state stays small and holds no token or user_data.
	assertNoSecrets(t, "execution output", r.exec.Output)
	assertNoSecrets(t, "logs", h.f.Logs.String())
	hist, err := h.engine.History(r.exec.ExecutionARN)
	require.NoError(t, err)
	b, err := json.Marshal(hist)
	require.NoError(t, err)
	assertNoSecrets(t, "history", string(b))
	assert.Less(t, len(r.exec.Output), 4096)
}

func TestExistingMachineMatchedByHostname(t *testing.T) {
	h := newHarness(t, options{})
	sid := h.machineSeed("gpu-02", "10.0.0.12", "52:54:00:00:00:12", "ready")
	o := h.f.AddOnboarding(t, "gpu-02", "10.0.0.12")

	r := h.run(o)
	requireCompleted(t, r)
	rule, action := machineOf(t, r)
	assert.Equal(t, domain.DiscoveryRuleHostname, rule)
	assert.Equal(t, domain.DiscoveryAdopt, action)
	assert.Equal(t, sid, r.ob.MAASSystemID)
	calls, _ := h.simCalls()
	assert.Zero(t, calls["POST "], "no machine is created")
	assert.Zero(t, calls["POST commission"], "a Ready machine is not recommissioned")
}

func TestExistingMachineMatchedByPowerAddress(t *testing.T) {
	h := newHarness(t, options{})
	sid := h.machineSeed("enlisted-by-pxe", "10.0.0.13", "52:54:00:00:00:13", "ready")
	o := h.f.AddOnboarding(t, "gpu-03", "10.0.0.13")

	r := h.run(o)
	requireCompleted(t, r)
	rule, action := machineOf(t, r)
	assert.Equal(t, domain.DiscoveryRulePowerAddress, rule)
	assert.Equal(t, domain.DiscoveryAdopt, action)
	assert.Equal(t, sid, r.ob.MAASSystemID)
}

func TestTwoMatchesNeedAnOperatorAndChangeNothing(t *testing.T) {
	h := newHarness(t, options{})
	h.machineSeed("gpu-04", "10.0.0.14", "52:54:00:00:00:14", "ready")
	h.machineSeed("gpu-04", "10.0.0.15", "52:54:00:00:00:15", "ready")
	o := h.f.AddOnboarding(t, "gpu-04", "10.0.0.14")

	r := h.run(o)
	requireManual(t, r, "AmbiguousMachineMatchError")
	assert.Equal(t, domain.StageDiscover, r.ob.Error.Stage)
	_, mutating := h.simCalls()
	assert.Zero(t, mutating, "nothing may change in MAAS: %+v", h.f.Sim.Calls())
	assert.Equal(t, []string{events.OnboardingStarted, events.OnboardingManualInterventionRequired}, h.eventTypes())
}

func TestAutoClaimOnlyWhenPolicyAllows(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		name   string
		claim  *bool
		manual string
	}{
		{name: "policy allows", claim: &yes},
		{name: "policy default (off)", manual: "MachineClaimNotAllowedError"},
		{name: "policy off", claim: &no, manual: "MachineClaimNotAllowedError"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, options{sitePolicy: domain.Policy{AutoClaimNew: tc.claim}})
			sid := h.machineSeed("enlisted-7", "10.0.0.16", "52:54:00:00:00:16", "new")
			o := h.f.AddOnboarding(t, "gpu-05", "10.0.0.16")

			r := h.run(o)
			if tc.manual != "" {
				requireManual(t, r, tc.manual)
				_, mutating := h.simCalls()
				assert.Zero(t, mutating)
				return
			}
			requireCompleted(t, r)
			assert.Equal(t, sid, r.ob.MAASSystemID)
			calls, _ := h.simCalls()
			assert.Equal(t, 1, calls["POST commission"], "the claimed New machine is commissioned")
		})
	}
}

func TestDatasourceFailureOnceIsRetried(t *testing.T) {
	h := newHarness(t, options{})
	h.hardware("gpu-06", "10.0.0.17", "52:54:00:00:00:17", maassim.Faults{DeployDatasourceFailures: 1})
	o := h.f.AddOnboarding(t, "gpu-06", "10.0.0.17")

	r := h.run(o)
	requireCompleted(t, r)
	assert.Equal(t, 2, r.ob.DeployAttempts)
	calls, _ := h.simCalls()
	assert.Equal(t, 2, calls["POST deploy"])
	assert.Equal(t, 1, calls["POST abort"], "the stuck deploy is aborted, not left to MAAS's timeout")
	assertTimelineHas(t, h, o.ID, domain.TimelineDiagnostic, "")
	assertTimelineHas(t, h, o.ID, domain.TimelineNote, "class datasource")
}

// A region whose clock is minutes off the control plane's still has its
// deploy's events read: they are chosen by MAAS event id, not by time.
func TestDatasourceFailureIsRetriedWhateverTheRegionClock(t *testing.T) {
	for _, skew := range []time.Duration{10 * time.Minute, -10 * time.Minute} {
		t.Run(skew.String(), func(t *testing.T) {
			h := newHarness(t, options{simSkew: skew})
			h.hardware("gpu-16", "10.0.0.36", "52:54:00:00:00:36", maassim.Faults{DeployDatasourceFailures: 1})
			o := h.f.AddOnboarding(t, "gpu-16", "10.0.0.36")

			r := h.run(o)
			requireCompleted(t, r)
			assert.Equal(t, 2, r.ob.DeployAttempts)
			calls, _ := h.simCalls()
			assert.Equal(t, 2, calls["POST deploy"])
			assertTimelineHas(t, h, o.ID, domain.TimelineNote, "class datasource")
		})
	}
}

func TestDatasourceFailureTwiceNeedsAnOperator(t *testing.T) {
	h := newHarness(t, options{})
	h.hardware("gpu-07", "10.0.0.18", "52:54:00:00:00:18", maassim.Faults{DeployDatasourceFailures: 2})
	o := h.f.AddOnboarding(t, "gpu-07", "10.0.0.18")

	r := h.run(o)
	requireManual(t, r, activities.CodeDeployFailed)
	assert.Equal(t, 2, r.ob.DeployAttempts)
	assert.Contains(t, r.ob.Error.Message, "class datasource")
	calls, _ := h.simCalls()
	assert.Equal(t, 2, calls["POST deploy"])
}

func TestOtherDeployFailureIsNotRetried(t *testing.T) {
	h := newHarness(t, options{})
	h.hardware("gpu-08", "10.0.0.19", "52:54:00:00:00:19", maassim.Faults{DeployOtherFailures: 1})
	o := h.f.AddOnboarding(t, "gpu-08", "10.0.0.19")

	r := h.run(o)
	requireManual(t, r, activities.CodeDeployFailed)
	assert.Equal(t, 1, r.ob.DeployAttempts)
	assert.Contains(t, r.ob.Error.Message, "class other")
	calls, _ := h.simCalls()
	assert.Equal(t, 1, calls["POST deploy"])
	assert.Zero(t, calls["POST release"]+calls["POST abort"])
	assertTimelineHas(t, h, o.ID, domain.TimelineDiagnostic, "curtin")
}

func TestPXEPreflightFailureStopsBeforeDeploy(t *testing.T) {
	h := newHarness(t, options{})
	h.hardware("gpu-09", "10.0.0.20", "52:54:00:00:00:20", maassim.Faults{PXEUnlinked: true})
	o := h.f.AddOnboarding(t, "gpu-09", "10.0.0.20")

	r := h.run(o)
	requireManual(t, r, "PXEPreflightError")
	assert.Equal(t, domain.StagePXEPreflight, r.ob.Error.Stage)
	calls, _ := h.simCalls()
	assert.Zero(t, calls["POST deploy"], "nothing is deployed after a failed preflight")
	assert.Zero(t, r.ob.DeployAttempts)
}

func TestPXELinkUpOnlyIsRelinkedOnTheDiscoveredSubnet(t *testing.T) {
	h := newHarness(t, options{simSecondSubnet: true})
	h.hardware("gpu-21", "10.0.0.41", "52:54:00:00:00:41", maassim.Faults{PXELinkUpOnly: true})
	o := h.f.AddOnboarding(t, "gpu-21", "10.0.0.41")

	r := h.run(o)
	requireCompleted(t, r)
	assertTimelineHas(t, h, o.ID, domain.TimelineStageExited, "10.20.0.0/24")
}

func TestPXELinkUpOnlyOnTheVLANsOnlySubnetIsRelinked(t *testing.T) {
	h := newHarness(t, options{})
	h.hardware("gpu-22", "10.0.0.42", "52:54:00:00:00:42", maassim.Faults{PXELinkUpOnly: true, PXENotDiscovered: true})
	o := h.f.AddOnboarding(t, "gpu-22", "10.0.0.42")

	r := h.run(o)
	requireCompleted(t, r)
}

func TestPXELinkUpOnlyWithTwoSubnetsAndNoEvidenceNeedsAnOperator(t *testing.T) {
	h := newHarness(t, options{simSecondSubnet: true})
	h.hardware("gpu-23", "10.0.0.43", "52:54:00:00:00:43", maassim.Faults{PXELinkUpOnly: true, PXENotDiscovered: true})
	o := h.f.AddOnboarding(t, "gpu-23", "10.0.0.43")

	r := h.run(o)
	requireManual(t, r, "PXEPreflightError")
	assert.Equal(t, domain.StagePXEPreflight, r.ob.Error.Stage)
	assert.Contains(t, r.ob.Error.Message, "10.20.0.0/24")
	assert.Contains(t, r.ob.Error.Message, maassim.SecondSubnetCIDR)
	calls, _ := h.simCalls()
	assert.Zero(t, calls["POST link_subnet"], "nothing is linked when the subnet is a guess")
	assert.Zero(t, calls["POST deploy"])
}

// A failed commissioning or testing names its failed scripts, with their
// exit status and the end of their output, on the onboarding (requirements readiness
// §8.3).
func TestFailedCommissioningAndTestingShowTheScripts(t *testing.T) {
	cases := []struct {
		name, script, output string
		faults               maassim.Faults
	}{
		{"commissioning", "50-maas-01-commissioning", "failed to read /sys/class/dmi/id", maassim.Faults{CommissionFailures: 1}},
		{"testing", "smartctl-validate", "SMART status FAILED", maassim.Faults{TestingFailures: 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, options{})
			h.hardware("gpu-17", "10.0.0.37", "52:54:00:00:00:37", tc.faults)
			o := h.f.AddOnboarding(t, "gpu-17", "10.0.0.37")

			r := h.run(o)
			requireManual(t, r, "MachineCommissioningFailed")
			assert.Contains(t, r.ob.Error.Message, tc.script)
			assertTimelineHas(t, h, o.ID, domain.TimelineDiagnostic, tc.script)
			assertTimelineHas(t, h, o.ID, domain.TimelineDiagnostic, "exit status 1")
			assertTimelineHas(t, h, o.ID, domain.TimelineDiagnostic, tc.output)
		})
	}
}

// A node whose boot MAC an earlier onboarding observed finds its machine by
// that MAC when MAAS knows it under another hostname and another power
// address (requirements readiness §4.1 step 3).
func TestEarlierObservedPXEMACMatchesTheMachine(t *testing.T) {
	h := newHarness(t, options{})
	const mac = "52:54:00:00:00:38"
	sid := h.machineSeed("old-name-38", "10.9.0.38", mac, "ready")
	o := h.f.AddOnboarding(t, "gpu-18", "10.0.0.38")
	_, err := h.f.Store.UpdateNode(context.Background(), o.NodeID, func(n *domain.Node) error {
		n.PXEMAC = mac
		return nil
	})
	require.NoError(t, err)

	h.run(o)
	assertTimelineHas(t, h, o.ID, domain.TimelineNote, "by "+domain.DiscoveryRulePXEMAC)
	got, err := h.f.Store.GetOnboarding(context.Background(), o.ID)
	require.NoError(t, err)
	assert.Equal(t, sid, got.MAASSystemID, "the machine MAAS knows by the MAC is the one used")
	calls, _ := h.simCalls()
	assert.Zero(t, calls["POST "], "no second machine is created")
}

// The boot MAC the PXE preflight observes is kept on the node for later
// onboardings of it.
func TestPXEMACIsKeptOnTheNode(t *testing.T) {
	h := newHarness(t, options{})
	h.hardware("gpu-19", "10.0.0.39", "52:54:00:00:00:39", maassim.Faults{})
	o := h.f.AddOnboarding(t, "gpu-19", "10.0.0.39")

	requireCompleted(t, h.run(o))
	n, err := h.f.Store.GetNode(context.Background(), o.NodeID)
	require.NoError(t, err)
	assert.Equal(t, "52:54:00:00:00:39", n.PXEMAC)
}

func TestEnrollmentNeverArrivesTimesOut(t *testing.T) {
	h := newHarness(t, options{tokenWaitsIdle: true})
	h.hardware("gpu-10", "10.0.0.21", "52:54:00:00:00:21", maassim.Faults{NeverEnrolls: true})
	o := h.f.AddOnboarding(t, "gpu-10", "10.0.0.21")

	r := h.run(o)
	requireManual(t, r, activities.CodeEnrollmentTimeout)
	assert.Equal(t, domain.StageWaitEnrollment, r.ob.Error.Stage)
	assert.Empty(t, h.f.NodeAPI.Enrolled())
	assert.Equal(t, []string{events.OnboardingStarted, events.OnboardingManualInterventionRequired}, h.eventTypes())
}

func assertTimelineHas(t *testing.T, h *harness, id string, kind domain.TimelineKind, contains string) {
	t.Helper()
	rows, err := h.f.Store.ListOnboardingEvents(context.Background(), id)
	require.NoError(t, err)
	for _, r := range rows {
		if r.Kind == kind && (contains == "" || containsFold(r.Detail, contains)) {
			return
		}
	}
	t.Errorf("timeline has no %s row containing %q", kind, contains)
}

func assertNoSecrets(t *testing.T, where, s string) {
	t.Helper()
	for _, secret := range activitiestest.Secrets() {
		assert.NotContains(t, s, secret, "%s holds a seeded secret", where)
	}
	assert.NotContains(t, s, "#cloud-config", "%s holds user_data", where)
	assert.NotContains(t, s, "GPUAAS_ENROLLMENT_TOKEN", "%s holds a bundle", where)
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}
