package localstack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/internal/localstack"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/store"
	"github.com/maasflow/maasflow/test/maassim"
)

// benchTimeScale is the e2e suite's: one simulated minute takes 100 ms.
const benchTimeScale = 600

// benchClient is shared by every request of a benchmark, so connections
// are reused as a real client would.
var benchClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: time.Minute}

func cpuTime(tb testing.TB) time.Duration {
	tb.Helper()
	var ru syscall.Rusage
	require.NoError(tb, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func peakRSSMiB(tb testing.TB) float64 {
	tb.Helper()
	var ru syscall.Rusage
	require.NoError(tb, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return float64(ru.Maxrss) / 1024 // Linux reports KiB
}

// adminCall sends one admin API request and decodes the answer; it returns
// the status so callers can check it.
func adminCall(tb testing.TB, s *localstack.Stack, method, path string, body any) (int, map[string]any) {
	tb.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(tb, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, s.APIURL+path, rd)
	require.NoError(tb, err)
	req.Header.Set("Authorization", "Bearer "+s.AdminToken)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := benchClient.Do(req)
	require.NoError(tb, err)
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(tb, err)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	return resp.StatusCode, out
}

func mustAdmin(tb testing.TB, s *localstack.Stack, method, path string, body any, want int) map[string]any {
	tb.Helper()
	status, out := adminCall(tb, s, method, path, body)
	require.Equal(tb, want, status, "%s %s: %v", method, path, out)
	return out
}

type benchSite struct{ site, profile, sku string }

// startBenchStack starts local mode on a fresh data directory with a probed
// site, a profile and an SKU, as an operator would set it up.
func startBenchStack(tb testing.TB, dir string) (*localstack.Stack, benchSite) {
	tb.Helper()
	s, err := localstack.Start(context.Background(), localstack.Config{
		Listen: "127.0.0.1:0", SimListen: "127.0.0.1:0", TimeScale: benchTimeScale, DataDir: dir,
	})
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = s.Close() })
	site := mustAdmin(tb, s, "POST", "/api/v1/admin/maas-sites", map[string]any{
		"name": "bench", "maas_url": s.SimURL, "policy": map[string]any{"bootstrap": s.SiteBootstrap},
	}, http.StatusCreated)
	id := site["id"].(string) //nolint:forcetypeassert // the API's contract
	mustAdmin(tb, s, "POST", "/api/v1/admin/maas-sites/"+id+"/credentials", map[string]any{
		"maas_api_key": s.SimAPIKey, "bmc_username": "maasflow", "bmc_password": "bench-bmc-password",
	}, http.StatusOK)
	mustAdmin(tb, s, "POST", "/api/v1/admin/maas-sites/"+id+"/probe", nil, http.StatusOK)
	prof := mustAdmin(tb, s, "POST", "/api/v1/admin/maas-sites/"+id+"/profiles", map[string]any{
		"name": "gpu-jammy", "architecture": "amd64/generic", "distro_series": "jammy",
	}, http.StatusCreated)
	mustAdmin(tb, s, "POST", "/api/v1/admin/skus", map[string]any{"id": "h100", "gpu_model": "H100", "gpus_total": 8}, http.StatusCreated)
	return s, benchSite{site: id, profile: prof["id"].(string), sku: "h100"} //nolint:forcetypeassert // the API's contract
}

// batchResult is what one batch of concurrent onboardings cost.
type batchResult struct {
	cpu       time.Duration
	wall      time.Duration
	postP99   time.Duration
	postAll   time.Duration
	maasCalls int
	dbOps     store.OpCounts
	completed int
	others    map[string]int
}

// onboardBatch adds n hosts to the simulator, posts n onboardings at once
// (16 clients in parallel) and waits until every one is closed.
func onboardBatch(tb testing.TB, s *localstack.Stack, site benchSite, n int) batchResult {
	tb.Helper()
	hosts := make([]string, n)
	for i := range hosts {
		hosts[i] = fmt.Sprintf("gpu-%05d", i)
		require.NoError(tb, s.Sim.AddHardware(maassim.Hardware{
			Hostname: hosts[i], BMCIP: fmt.Sprintf("10.40.%d.%d", i/250, i%250+1),
			PXEMAC: fmt.Sprintf("52:54:00:%02x:%02x:%02x", (i>>16)&0xff, (i>>8)&0xff, i&0xff),
		}))
	}
	var r batchResult
	cpu0, wall0 := cpuTime(tb), time.Now()
	calls0, ops0 := s.Sim.Calls().Total, s.DatabaseOps()

	latencies := make([]time.Duration, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for i := range next {
				t0 := time.Now()
				status, out := adminCall(tb, s, "POST", "/api/v1/admin/onboardings", map[string]any{
					"site_id": site.site, "profile_id": site.profile, "sku_id": site.sku,
					"hostname": hosts[i], "ipmi_ip": fmt.Sprintf("10.40.%d.%d", i/250, i%250+1),
				})
				latencies[i] = time.Since(t0)
				if status != http.StatusAccepted {
					tb.Errorf("POST onboarding %s: %d %v", hosts[i], status, out)
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	r.postAll = time.Since(wall0)
	slices.Sort(latencies)
	r.postP99 = latencies[(len(latencies)*99)/100]

	ctx := context.Background()
	waitQueries := int64(0) // the benchmark's own reads, not the onboardings'
	for {
		open := 0
		for _, st := range []domain.OnboardingStatus{domain.OnboardingPending, domain.OnboardingRunning} {
			page, err := s.Store.ListOnboardings(ctx, store.OnboardingFilter{Status: st, Limit: 1})
			require.NoError(tb, err)
			waitQueries++
			open += len(page.Items)
		}
		if open == 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	r.wall = time.Since(wall0)
	r.cpu = cpuTime(tb) - cpu0
	r.maasCalls = s.Sim.Calls().Total - calls0
	ops := s.DatabaseOps()
	r.dbOps = store.OpCounts{
		GetItem: ops.GetItem - ops0.GetItem, PutItem: ops.PutItem - ops0.PutItem, UpdateItem: ops.UpdateItem - ops0.UpdateItem,
		DeleteItem: ops.DeleteItem - ops0.DeleteItem, Query: ops.Query - ops0.Query - waitQueries,
		TransactWriteItems: ops.TransactWriteItems - ops0.TransactWriteItems, TransactItems: ops.TransactItems - ops0.TransactItems,
	}
	r.others = map[string]int{}
	cursor := ""
	for {
		page, err := s.Store.ListOnboardings(ctx, store.OnboardingFilter{Limit: 200, Cursor: cursor})
		require.NoError(tb, err)
		for _, o := range page.Items {
			if o.Status == domain.OnboardingCompleted {
				r.completed++
			} else {
				r.others[string(o.Status)+" "+string(o.Stage)+" "+errorCode(o)]++
			}
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	return r
}

func errorCode(o domain.Onboarding) string {
	if o.Error == nil {
		return ""
	}
	return o.Error.Code
}

// BenchmarkLocalOnboardings runs N clean onboardings at once on the whole
// local stack (`maasflow local` at the e2e suite's time scale, with the
// bundled simulator), each batch on a fresh stack, and fails unless every
// onboarding completes. It reports per onboarding the CPU time, MAAS API
// calls and database operations, the p99 of POST /onboardings while the
// batch is posted, and the batch's wall time and the process's peak RSS.
// docs/benchmarks.md records the figures and the cost model built on them.
func BenchmarkLocalOnboardings(b *testing.B) {
	for _, n := range []int{1, 10, 1000} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			var total batchResult
			for range b.N {
				b.StopTimer()
				s, site := startBenchStack(b, b.TempDir())
				b.StartTimer()
				r := onboardBatch(b, s, site, n)
				b.StopTimer()
				require.NoError(b, s.Close())
				if r.completed != n {
					b.Fatalf("%d of %d onboardings completed; the others: %v", r.completed, n, r.others)
				}
				total.cpu += r.cpu
				total.wall += r.wall
				total.postP99 = max(total.postP99, r.postP99)
				total.maasCalls += r.maasCalls
				total.dbOps.GetItem += r.dbOps.GetItem
				total.dbOps.PutItem += r.dbOps.PutItem
				total.dbOps.UpdateItem += r.dbOps.UpdateItem
				total.dbOps.DeleteItem += r.dbOps.DeleteItem
				total.dbOps.Query += r.dbOps.Query
				total.dbOps.TransactWriteItems += r.dbOps.TransactWriteItems
				total.dbOps.TransactItems += r.dbOps.TransactItems
			}
			per := float64(b.N * n)
			b.ReportMetric(float64(total.cpu.Microseconds())/1000/per, "cpu-ms/onb")
			b.ReportMetric(float64(total.maasCalls)/per, "maas-calls/onb")
			b.ReportMetric(float64(total.dbOps.Total())/per, "db-ops/onb")
			b.ReportMetric(float64(total.dbOps.GetItem)/per, "get/onb")
			b.ReportMetric(float64(total.dbOps.PutItem+total.dbOps.UpdateItem+total.dbOps.DeleteItem)/per, "write/onb")
			b.ReportMetric(float64(total.dbOps.Query)/per, "query/onb")
			b.ReportMetric(float64(total.dbOps.TransactWriteItems)/per, "tx/onb")
			b.ReportMetric(float64(total.dbOps.TransactItems)/per, "tx-items/onb")
			b.ReportMetric(float64(total.postP99.Microseconds())/1000, "post-p99-ms")
			b.ReportMetric(total.wall.Seconds()/float64(b.N), "wall-s/batch")
			b.ReportMetric(peakRSSMiB(b), "peak-rss-MiB")
		})
	}
}
