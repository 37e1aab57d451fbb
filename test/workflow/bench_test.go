package workflow_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/internal/maassim"
	"github.com/maasflow/maasflow/shared/asl"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/store"
	"github.com/maasflow/maasflow/shared/workflow"
)

// cpuTime is the process's user plus system CPU time.
func cpuTime(tb testing.TB) time.Duration {
	tb.Helper()
	var ru syscall.Rusage
	require.NoError(tb, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// transitions counts the states an execution entered, as Step Functions
// bills them (retries included: each retried attempt enters again).
func transitions(tb testing.TB, e *asl.Engine, execARN string) int {
	tb.Helper()
	hist, err := e.History(execARN)
	require.NoError(tb, err)
	n := 0
	for _, ev := range hist {
		if strings.HasSuffix(ev.Type, "StateEntered") {
			n++
		}
	}
	return n
}

func totalCalls(s *maassim.Simulator) int { return s.Calls().Total }

// runAll starts the onboardings' executions at once and waits for them
// all, failing b for any that did not succeed; it returns their ARNs.
func (h *harness) runAll(b *testing.B, obs []domain.Onboarding) []string {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*runTimeout)
	defer cancel()
	arns := make([]string, len(obs))
	var wg sync.WaitGroup
	for i, o := range obs {
		arn, err := workflow.NewLocal(h.engine, h.smARN).StartOnboarding(ctx, o)
		require.NoError(b, err)
		arns[i] = arn
		wg.Add(1)
		go func() {
			defer wg.Done()
			ex, err := h.engine.Wait(ctx, arn)
			if err == nil && ex.Status != asl.StatusSucceeded {
				err = fmt.Errorf("%s: %s", ex.Error, ex.Cause)
			}
			if err != nil {
				b.Errorf("onboarding %s: %v", o.Hostname, err)
			}
		}()
	}
	wg.Wait()
	return arns
}

// onboardMany runs n clean onboardings at once on h and returns their
// executions' ARNs.
func onboardMany(b *testing.B, h *harness, batch, n int) []string {
	b.Helper()
	obs := make([]domain.Onboarding, n)
	for i := range obs {
		host := fmt.Sprintf("gpu-%d-%03d", batch, i)
		bmc := fmt.Sprintf("10.%d.%d.%d", 30+batch/250, batch%250, i+1)
		mac := fmt.Sprintf("52:54:%02x:%02x:%02x:%02x", (batch>>8)&0xff, batch&0xff, i>>8, i&0xff)
		h.hardware(host, bmc, mac, maassim.Faults{})
		obs[i] = h.f.AddOnboarding(b, host, bmc)
	}
	return h.runAll(b, obs)
}

// benchOnboardings runs b.N batches of n concurrent clean onboardings, each
// batch on a fresh harness (the simulator's one /24 subnet runs out of
// addresses after a few hundred deployed machines, as a real one would),
// and reports per onboarding the CPU time, MAAS API calls and state
// transitions, and the machine watch's MAAS calls and database operations
// apart.
func benchOnboardings(b *testing.B, n int) {
	b.Helper()
	var cpu time.Duration
	calls, trans, watchCalls := 0, 0, 0
	var ops, watchOps store.OpCounts
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		scope := &iterationScope{TB: b}
		h := newHarness(scope, options{localDB: true})
		// The fresh harness's garbage (the parsed state machines, the
		// simulator's seed) is collected here, not charged to the
		// onboardings that follow.
		runtime.GC()
		cpu0, calls0, ops0 := cpuTime(b), totalCalls(h.f.Sim), h.f.DB.Counts()
		watchCalls0, watchOps0 := h.watch.maas.calls.Load(), h.watch.db.Counts()
		b.StartTimer()
		arns := onboardMany(b, h, i, n)
		b.StopTimer()
		cpu += cpuTime(b) - cpu0
		// Counting the transitions renders each execution's history: the
		// benchmark's bookkeeping, not the onboardings', so off the clock.
		for _, arn := range arns {
			trans += transitions(b, h.engine, arn)
		}
		// The simulator counts every caller: the watch's event queries are
		// taken out, so the workflow's own figure stays comparable.
		w := int(h.watch.maas.calls.Load() - watchCalls0)
		watchCalls += w
		calls += totalCalls(h.f.Sim) - calls0 - w
		ops = addOps(ops, h.f.DB.Counts(), ops0)
		watchOps = addOps(watchOps, h.watch.db.Counts(), watchOps0)
		scope.close()
	}
	per := float64(b.N * n)
	b.ReportMetric(float64(cpu.Microseconds())/1000/per, "cpu-ms/onboarding")
	b.ReportMetric(float64(calls)/per, "maas-calls/onboarding")
	b.ReportMetric(float64(trans)/per, "transitions/onboarding")
	b.ReportMetric(float64(ops.Total())/per, "db-ops/onboarding")
	b.ReportMetric(float64(ops.GetItem)/per, "db-gets/onboarding")
	b.ReportMetric(float64(ops.PutItem+ops.UpdateItem+ops.DeleteItem)/per, "db-writes/onboarding")
	b.ReportMetric(float64(ops.Query)/per, "db-queries/onboarding")
	b.ReportMetric(float64(ops.TransactWriteItems)/per, "db-tx/onboarding")
	// The machine watch's share: one event query per site and round, and
	// the watch records.
	b.ReportMetric(float64(watchCalls)/per, "watch-maas-calls/onboarding")
	b.ReportMetric(float64(watchOps.Total())/per, "watch-db-ops/onboarding")
}

// iterationScope runs the cleanups of what one benchmark iteration built
// when the iteration ends rather than when the benchmark does, so that the
// harnesses of earlier iterations (their engine, executions, simulator and
// database) are garbage by the next: kept alive, every collection during
// the next onboardings would mark them all again, and CPU per onboarding
// would grow with b.N.
type iterationScope struct {
	testing.TB
	cleanups []func()
}

func (s *iterationScope) Cleanup(f func()) { s.cleanups = append(s.cleanups, f) }

func (s *iterationScope) close() {
	for _, f := range slices.Backward(s.cleanups) {
		f()
	}
	s.cleanups = nil
}

// addOps returns sum plus the calls counted between before and after.
func addOps(sum, after, before store.OpCounts) store.OpCounts {
	sum.GetItem += after.GetItem - before.GetItem
	sum.PutItem += after.PutItem - before.PutItem
	sum.UpdateItem += after.UpdateItem - before.UpdateItem
	sum.DeleteItem += after.DeleteItem - before.DeleteItem
	sum.Query += after.Query - before.Query
	sum.TransactWriteItems += after.TransactWriteItems - before.TransactWriteItems
	sum.TransactItems += after.TransactItems - before.TransactItems
	return sum
}

// BenchmarkOnboarding runs one clean onboarding at a time against a
// zero-latency simulator in virtual time, on local mode's database.
func BenchmarkOnboarding(b *testing.B) { benchOnboardings(b, 1) }

// BenchmarkConcurrentOnboardings runs 100 onboardings at once; one op is
// the whole batch.
func BenchmarkConcurrentOnboardings(b *testing.B) { benchOnboardings(b, 100) }
