package workflow_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/internal/maassim"
	"github.com/maasflow/maasflow/shared/activities/activitiestest"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
)

// wakes counts the outputs the machine waits of an execution were woken
// with ({"woke":"event"} or "due"), and the waits that timed out.
func (h *harness) wakes(execARN string) (byReason map[string]int, timedOut int) {
	h.t.Helper()
	hist, err := h.engine.History(execARN)
	require.NoError(h.t, err)
	byReason = map[string]int{}
	for _, e := range hist {
		switch {
		case e.Type == "TaskSucceeded" && e.Details != nil && strings.Contains(e.Details.Output, `"woke"`):
			for _, r := range []string{"event", "due", "superseded"} {
				if strings.Contains(e.Details.Output, `"`+r+`"`) {
					byReason[r]++
				}
			}
		case e.Type == "TaskTimedOut":
			timedOut++
		}
	}
	return byReason, timedOut
}

// TestMachineWaitsParkOnTheWatch: an onboarding's machine waits park on
// the machine watch, which wakes them when MAAS logs the transition; the
// watches are gone once the run ends.
func TestMachineWaitsParkOnTheWatch(t *testing.T) {
	h := newHarness(t, options{})
	h.hardware("gpu-01", "10.0.0.11", "52:54:00:00:00:11", maassim.Faults{})
	o := h.f.AddOnboarding(t, "gpu-01", "10.0.0.11")

	r := h.run(o)
	requireCompleted(t, r)
	woke, timedOut := h.wakes(r.exec.ExecutionARN)
	assert.GreaterOrEqual(t, woke["event"], 2, "Ready and Deployed were noticed from MAAS's events: %v", woke)
	assert.Zero(t, timedOut, "no wait outlived the watcher")
	assert.NotEmpty(t, h.engine.ListExecutions(h.watchARN, ""), "the schedule ran the machine watch")
	left, err := h.f.Store.ListMachineWatches(context.Background())
	require.NoError(t, err)
	assert.Empty(t, left.Watches, "a woken wait's watch is deleted")
	assert.NotEmpty(t, left.Cursors, "the site's cursor was placed")
	// Every task token the runtime mints starts with this; none may reach
	// a log line, however the wait was parked or woken.
	assert.NotContains(t, h.f.Logs.String(), "AQCEAAAAKgAAAA", "a task token reached the log")
	assert.Contains(t, h.f.Logs.String(), "machine wait woken", "the watcher's lines are in the captured log")
}

// TestEarlyCommissioningFailureIsNoticedWithin30s: a commissioning that
// fails in its first minute is noticed within 30 s of MAAS's transition
// (the machine watch's round), not at the wait's next full check ten
// minutes on.
func TestEarlyCommissioningFailureIsNoticedWithin30s(t *testing.T) {
	h := newHarness(t, options{simDurations: maassim.Durations{Commissioning: 40 * time.Second}})
	h.hardware("gpu-21", "10.0.0.41", "52:54:00:00:00:41", maassim.Faults{CommissionFailures: 1})
	o := h.f.AddOnboarding(t, "gpu-21", "10.0.0.41")

	r := h.run(o)
	requireManual(t, r, "MachineCommissioningFailed")

	failedAt := maasTransition(t, h, r.ob.MAASSystemID, "Failed commissioning")
	var noticedAt time.Time
	rows, err := h.f.Store.ListOnboardingEvents(context.Background(), o.ID)
	require.NoError(t, err)
	for _, row := range rows {
		if row.Kind == domain.TimelineStageExited && row.Stage == domain.StageWaitReady && row.Outcome == "failed" {
			noticedAt = row.Time
		}
	}
	require.False(t, noticedAt.IsZero(), "the wait for Ready ended failed")
	latency := noticedAt.Sub(failedAt)
	t.Logf("MAAS failed the commissioning at %s; noticed %s later", failedAt.Format(time.TimeOnly), latency)
	assert.GreaterOrEqual(t, latency, time.Duration(0))
	assert.LessOrEqual(t, latency, 30*time.Second, "MAAS failed the commissioning at %s, the wait noticed at %s", failedAt, noticedAt)
	woke, _ := h.wakes(r.exec.ExecutionARN)
	assert.Equal(t, 1, woke["event"], "woken by the status change, not by its due time: %v", woke)
}

// maasTransition is when MAAS logged the machine's move to status, read
// from its "Node changed status" event (the simulator's clock, which these
// tests do not skew).
func maasTransition(t testing.TB, h *harness, systemID, status string) time.Time {
	t.Helper()
	client, err := maas.NewClient(h.f.Site.MAASURL, domain.Secret(activitiestest.APIKey), maas.WithHTTPClient(h.f.SimServer.Client()))
	require.NoError(t, err)
	evs, err := client.Events(context.Background(), maas.EventQuery{SystemID: systemID, Level: maas.EventLevelDebug, Limit: 1000})
	require.NoError(t, err)
	for _, e := range evs {
		if e.Type == "Node changed status" && strings.HasSuffix(e.Description, "to '"+status+"'") {
			return e.Created
		}
	}
	t.Fatalf("MAAS logged no move of %s to %s", systemID, status)
	return time.Time{}
}

// TestMachineWatchIgnoresTheRegionClock: the watch compares event ids,
// never MAAS's clock, so a region ±10 min off still has its transitions
// noticed from its events.
func TestMachineWatchIgnoresTheRegionClock(t *testing.T) {
	for _, skew := range []time.Duration{10 * time.Minute, -10 * time.Minute} {
		t.Run(skew.String(), func(t *testing.T) {
			h := newHarness(t, options{simSkew: skew})
			h.hardware("gpu-22", "10.0.0.42", "52:54:00:00:00:42", maassim.Faults{})
			o := h.f.AddOnboarding(t, "gpu-22", "10.0.0.42")

			r := h.run(o)
			requireCompleted(t, r)
			woke, timedOut := h.wakes(r.exec.ExecutionARN)
			assert.GreaterOrEqual(t, woke["event"], 2, "%v", woke)
			assert.Zero(t, timedOut)
		})
	}
}
