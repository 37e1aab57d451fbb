package journal

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/clock"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/store"
)

// openLocal opens a journal over dir on a fresh memdb, as local mode does.
func openLocal(t testing.TB, dir string) (*store.Store, *Journal) {
	t.Helper()
	ctx := context.Background()
	db, err := store.NewLocalDB(ctx, "")
	require.NoError(t, err)
	j, err := Open(ctx, db, dir)
	require.NoError(t, err)
	t.Cleanup(func() { _ = j.Close() })
	return store.New(j, "", clock.NewFake(t0).Now), j
}

// dumpTable returns every item of the store's table, encoded, by key.
func dumpTable(t *testing.T, db Backend) map[string]string {
	t.Helper()
	out := map[string]string{}
	in := &dynamodb.ScanInput{TableName: aws.String(store.DefaultTable)}
	for {
		page, err := db.Scan(context.Background(), in)
		require.NoError(t, err)
		for _, item := range page.Items {
			k, err := appendItem(nil, map[string]types.AttributeValue{"pk": item["pk"], "sk": item["sk"]})
			require.NoError(t, err)
			v, err := appendItem(nil, item)
			require.NoError(t, err)
			out[string(k)] = string(v)
		}
		if len(page.LastEvaluatedKey) == 0 {
			return out
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

// uniqueOnboarding is an onboarding of its own host and BMC address.
func uniqueOnboarding(w, i int) domain.Onboarding {
	return domain.Onboarding{ID: fmt.Sprintf("o-%d-%d", w, i), SiteID: "s1", ProfileID: "p1", SKUID: "h100x8",
		Hostname: fmt.Sprintf("gpu-%d-%d", w, i), IPMIIP: fmt.Sprintf("10.1.%d.%d", w, i)}
}

// writeConcurrently runs writers goroutines that each create items of
// their own, create onboardings (a transaction of several items) and
// increment the GPU count of the SKU "shared", which all of them update.
// It returns how many increments were acknowledged; every other outcome
// is handed to check.
func writeConcurrently(t *testing.T, s *store.Store, writers, each int, check func(what string, err error)) int64 {
	t.Helper()
	ctx := context.Background()
	var increments atomic.Int64
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				check(fmt.Sprintf("sku k-%d-%d", w, i), s.CreateSKU(ctx, domain.SKU{ID: fmt.Sprintf("k-%d-%d", w, i)}))
				check(fmt.Sprintf("onboarding o-%d-%d", w, i), s.CreateOnboarding(ctx, uniqueOnboarding(w, i)))
				_, err := s.UpdateSKU(ctx, "shared", func(k *domain.SKU) error { k.GPUsTotal++; return nil })
				if err == nil {
					increments.Add(1)
				} else {
					check("increment", err)
				}
			}
		})
	}
	wg.Wait()
	return increments.Load()
}

func TestConcurrentWritesReplayAsTheLiveTable(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, j := openLocal(t, dir)
	require.NoError(t, s.CreateSKU(ctx, domain.SKU{ID: "shared"}))

	const writers, each = 16, 30
	increments := writeConcurrently(t, s, writers, each, func(what string, err error) {
		if what == "increment" {
			// Sixteen writers of one item may outrun the store's retries:
			// a refused update is a conflict, never anything else.
			assert.ErrorAs(t, err, new(*store.ItemConflictError))
			return
		}
		assert.NoError(t, err, what)
	})
	require.Positive(t, increments)
	shared, err := s.GetSKU(ctx, "shared")
	require.NoError(t, err)
	assert.Equal(t, int(increments), shared.GPUsTotal, "every acknowledged increment, none lost to a concurrent one")
	live := dumpTable(t, j)
	require.Greater(t, len(live), writers*each*2, "the SKUs, the onboardings and their locks")
	require.NoError(t, j.Close())

	_, r := openLocal(t, dir)
	assert.Equal(t, live, dumpTable(t, r), "the replay holds exactly what the live table held")
}

func TestConcurrentWritesOfOneItemKeepTheirOrderInTheFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, j := openLocal(t, dir)
	require.NoError(t, s.CreateSKU(ctx, domain.SKU{ID: "shared"}))
	var wg sync.WaitGroup
	var acked atomic.Int64
	for range 8 {
		wg.Go(func() {
			for range 25 {
				if _, err := s.UpdateSKU(ctx, "shared", func(k *domain.SKU) error { k.GPUsTotal++; return nil }); err == nil {
					acked.Add(1)
				}
			}
		})
	}
	wg.Wait()
	require.NoError(t, j.Close())

	r, _ := openLocal(t, dir)
	got, err := r.GetSKU(ctx, "shared")
	require.NoError(t, err)
	assert.Equal(t, int(acked.Load()), got.GPUsTotal, "the last record replayed is the last write made")
	assert.Equal(t, acked.Load()+1, got.Version)
}

// flakyDisk fails every third write, after taking half of it, as a disk
// that keeps filling up does.
type flakyDisk struct {
	file
	writes atomic.Int64
}

func (d *flakyDisk) Write(p []byte) (int, error) {
	if d.writes.Add(1)%3 != 0 {
		return d.file.Write(p)
	}
	n, _ := d.file.Write(p[:len(p)/2])
	return n, syscall.ENOSPC
}

func TestAFailedBatchFailsItsWritesAndLeavesNothingHalfApplied(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, j := openLocal(t, dir)
	require.NoError(t, s.CreateSKU(ctx, domain.SKU{ID: "shared"}))
	disk := &flakyDisk{file: j.f}
	j.fileMu.Lock()
	j.f = disk
	j.fileMu.Unlock()

	var mu sync.Mutex
	refused := map[string]bool{}
	var conflicts, others []error
	increments := writeConcurrently(t, s, 8, 20, func(what string, err error) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err == nil:
		case errors.Is(err, syscall.ENOSPC):
			refused[what] = true
		case what == "increment":
			conflicts = append(conflicts, err)
		default:
			others = append(others, err)
		}
	})
	require.Empty(t, others, "a write fails for the disk or not at all")
	for _, err := range conflicts {
		require.ErrorAs(t, err, new(*store.ItemConflictError), "an increment may also lose to the others")
	}
	require.Positive(t, disk.writes.Load()/3, "some batches failed")
	require.NotEmpty(t, refused, "and failed their writes")

	for w := range 8 {
		for i := range 20 {
			_, err := s.GetSKU(ctx, fmt.Sprintf("k-%d-%d", w, i))
			if refused[fmt.Sprintf("sku k-%d-%d", w, i)] {
				require.ErrorAs(t, err, new(*store.ItemNotFoundError), "a refused create is undone")
			} else {
				require.NoError(t, err, "an acknowledged create is kept")
			}
			_, err = s.GetOnboarding(ctx, fmt.Sprintf("o-%d-%d", w, i))
			if refused[fmt.Sprintf("onboarding o-%d-%d", w, i)] {
				require.ErrorAs(t, err, new(*store.ItemNotFoundError), "a refused transaction is undone whole")
			} else {
				require.NoError(t, err)
			}
		}
	}
	shared, err := s.GetSKU(ctx, "shared")
	require.NoError(t, err)
	assert.Equal(t, int(increments), shared.GPUsTotal, "refused increments are undone, acknowledged ones kept")
	live := dumpTable(t, j)
	require.NoError(t, j.Close())

	_, r := openLocal(t, dir)
	assert.Equal(t, live, dumpTable(t, r), "the file holds exactly what memory held: no refused write, no gap")
}
