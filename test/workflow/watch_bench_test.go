package workflow_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/internal/maassim"
	"github.com/maasflow/maasflow/shared/domain"
)

// machineWaitCost is what the machine waits of a set of onboardings cost:
// the checks they ran, the time they spent parked, and the latency from
// MAAS's Ready and Deployed to the wait noticing them.
type machineWaitCost struct {
	checks   int
	parked   time.Duration
	latency  []time.Duration
	watchGET int64
}

// waitCost reads an execution's history: its Check* tasks and the time
// between entering and leaving its WaitFor* tasks.
func (h *harness) waitCost(tb testing.TB, execARN string, c *machineWaitCost) {
	tb.Helper()
	hist, err := h.engine.History(execARN)
	require.NoError(tb, err)
	entered := map[string]time.Time{}
	for _, e := range hist {
		if e.Details == nil {
			continue
		}
		name := e.Details.Name
		switch {
		case e.Type == "TaskStateEntered" && strings.HasPrefix(name, "Check") && name != "CheckPredeploy" && name != "CheckCompletionGates":
			c.checks++
		case e.Type == "TaskStateEntered" && strings.HasPrefix(name, "WaitFor"):
			entered[name] = e.Timestamp
		case e.Type == "TaskStateExited" && strings.HasPrefix(name, "WaitFor"):
			c.parked += e.Timestamp.Sub(entered[name])
		}
	}
}

// noticeLatency is, for Ready and Deployed, the time from MAAS logging the
// transition to the onboarding's wait recording its end.
func (h *harness) noticeLatency(tb testing.TB, o domain.Onboarding, c *machineWaitCost) {
	tb.Helper()
	ob, err := h.f.Store.GetOnboarding(context.Background(), o.ID)
	require.NoError(tb, err)
	rows, err := h.f.Store.ListOnboardingEvents(context.Background(), o.ID)
	require.NoError(tb, err)
	for stage, status := range map[domain.Stage]string{domain.StageWaitReady: "Ready", domain.StageWaitDeployed: "Deployed"} {
		at := maasTransition(tb, h, ob.MAASSystemID, status)
		for _, r := range rows {
			if r.Kind == domain.TimelineStageExited && r.Stage == stage && r.Outcome == "ok" {
				c.latency = append(c.latency, r.Time.Sub(at))
			}
		}
	}
}

// BenchmarkMachineWait runs n onboardings at once on one site, with a
// 15-minute commissioning (then 5 min of tests) and a 20-minute deploy,
// in virtual time, and reports for their machine waits the MAAS GETs per
// hour a machine waits (two per check, plus the machine watch's event
// queries shared by the site) and the latency from MAAS's Ready or
// Deployed to the wait noticing it. Each phase ends one second after a
// watch round, the worst case: the round after comes 29 s later.
func BenchmarkMachineWait(b *testing.B) {
	for _, n := range []int{1, 10, 50} {
		b.Run(fmt.Sprintf("machines=%d", n), func(b *testing.B) {
			var total machineWaitCost
			for i := range b.N {
				h := newHarness(b, options{localDB: true, simDurations: maassim.Durations{
					Commissioning: 15*time.Minute + time.Second, Testing: 5 * time.Minute, Deploying: 20*time.Minute + time.Second}})
				watch0 := h.watch.maas.calls.Load()
				obs := make([]domain.Onboarding, n)
				for j := range obs {
					host := fmt.Sprintf("gpu-%d-%03d", i, j)
					bmc := fmt.Sprintf("10.%d.%d.%d", 40+i/250, i%250, j+1)
					mac := fmt.Sprintf("52:54:01:%02x:%02x:%02x", i&0xff, j>>8, j&0xff)
					h.hardware(host, bmc, mac, maassim.Faults{})
					obs[j] = h.f.AddOnboarding(b, host, bmc)
				}
				arns := h.runAll(b, obs)
				total.watchGET += h.watch.maas.calls.Load() - watch0
				for j, arn := range arns {
					h.waitCost(b, arn, &total)
					h.noticeLatency(b, obs[j], &total)
				}
			}
			hours := total.parked.Hours()
			gets := float64(2*total.checks) + float64(total.watchGET)
			var worst, sum time.Duration
			for _, l := range total.latency {
				worst = max(worst, l)
				sum += l
			}
			b.ReportMetric(gets/hours, "gets/waiting-hour")
			b.ReportMetric(float64(total.watchGET)/hours, "watch-gets/waiting-hour")
			b.ReportMetric(worst.Seconds(), "worst-latency-s")
			b.ReportMetric(sum.Seconds()/float64(len(total.latency)), "mean-latency-s")
		})
	}
}
