package journal

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/store"
)

// BenchmarkReplay100k opens a journal of 100,000 onboardings, as local
// mode does at start-up: replay into a fresh memdb.
func BenchmarkReplay100k(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	{ // write the journal once, through the store
		db, err := store.NewLocalDB(ctx, "")
		require.NoError(b, err)
		j, err := Open(ctx, db, dir)
		require.NoError(b, err)
		s := store.New(j, "", nil)
		t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		for i := range 100_000 {
			o := domain.Onboarding{ID: fmt.Sprintf("o%06d", i), SiteID: fmt.Sprintf("site-%d", i%4), ProfileID: "p1", SKUID: "h100",
				Hostname: fmt.Sprintf("gpu-%05d", i%25_000), IPMIIP: "10.0.0.1", Status: domain.OnboardingCompleted,
				CreatedAt: t0.Add(time.Duration(i) * time.Second)}
			require.NoError(b, s.CreateOnboarding(ctx, o))
		}
		require.NoError(b, j.Close())
	}
	f, err := os.Open(filepath.Join(dir, File))
	require.NoError(b, err)
	lines := 0
	for sc := bufio.NewScanner(f); sc.Scan(); {
		lines++
	}
	_ = f.Close()
	var ru0, ru1 syscall.Rusage
	require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru0))
	b.ResetTimer()
	for b.Loop() {
		db, err := store.NewLocalDB(ctx, "")
		require.NoError(b, err)
		j, err := Open(ctx, db, dir)
		require.NoError(b, err)
		b.StopTimer()
		require.NoError(b, j.Close())
		b.StartTimer()
	}
	b.StopTimer()
	require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru1))
	cpu := time.Duration(ru1.Utime.Nano()+ru1.Stime.Nano()-ru0.Utime.Nano()-ru0.Stime.Nano()) / time.Duration(b.N)
	b.ReportMetric(cpu.Seconds(), "cpu-s/replay")
	b.ReportMetric(float64(lines), "records")
}

// BenchmarkConcurrentWrites writes through the journal from 64 goroutines
// at once (SetParallelism 32 per core on 2 cores), as a thousand executions
// and the API do in local mode: creates of distinct items and updates of
// one item each goroutine owns. It reports the 99th percentile of a write's
// latency besides the time per write.
func BenchmarkConcurrentWrites(b *testing.B) {
	ctx := context.Background()
	s, _ := openLocal(b, b.TempDir())
	var (
		mu        sync.Mutex
		latencies []time.Duration
		workers   atomic.Int64
	)
	b.SetParallelism(32)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		w := workers.Add(1)
		own := fmt.Sprintf("own-%d", w)
		require.NoError(b, s.CreateSKU(ctx, domain.SKU{ID: own}))
		var mine []time.Duration
		for i := 0; pb.Next(); i++ {
			start := time.Now()
			var err error
			if i%2 == 0 {
				err = s.CreateSKU(ctx, domain.SKU{ID: fmt.Sprintf("k-%d-%d", w, i)})
			} else {
				_, err = s.UpdateSKU(ctx, own, func(k *domain.SKU) error { k.GPUsTotal = i; return nil })
			}
			mine = append(mine, time.Since(start))
			if err != nil {
				b.Error(err)
				return
			}
		}
		mu.Lock()
		latencies = append(latencies, mine...)
		mu.Unlock()
	})
	b.StopTimer()
	slices.Sort(latencies)
	if len(latencies) > 0 {
		b.ReportMetric(float64(latencies[len(latencies)*99/100].Microseconds()), "p99-us")
	}
}

// BenchmarkSequentialWrites writes through the journal from one goroutine:
// every write waits for its own record on disk, with no other write to
// share the fsync with.
func BenchmarkSequentialWrites(b *testing.B) {
	ctx := context.Background()
	s, _ := openLocal(b, b.TempDir())
	i := 0
	for b.Loop() {
		i++
		if err := s.CreateSKU(ctx, domain.SKU{ID: fmt.Sprintf("k-%d", i)}); err != nil {
			b.Fatal(err)
		}
	}
}
