package boltdb_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/internal/crashtest"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/store"
)

// crashChildEnv makes the test binary play a local-mode process that a
// test kills: it opens the database file in its working directory and
// writes from eight goroutines until killed, printing each write it got
// acknowledged.
const crashChildEnv = "MAASFLOW_BOLTDB_CRASH_CHILD"

const dbFile = "maasflow.db"

func TestMain(m *testing.M) {
	crashtest.PlayChild(crashChildEnv, writeUntilKilled)
	crashtest.PlayChild(fullDiskChildEnv, fillDisk)
	os.Exit(m.Run())
}

// writeUntilKilled creates SKUs of their own and increments the SKU
// "shared" from eight goroutines, and prints "sku ID" and "shared VERSION"
// as each is acknowledged.
func writeUntilKilled(dir string) {
	ctx := context.Background()
	db, err := store.OpenLocalDB(ctx, filepath.Join(dir, dbFile), "", false)
	if err == nil {
		{
			s := store.New(db, "", time.Now)
			if err = s.CreateSKU(ctx, domain.SKU{ID: "shared"}); err == nil {
				for w := range 8 {
					go func() {
						for i := 0; ; i++ {
							id := fmt.Sprintf("k-%d-%d", w, i)
							if s.CreateSKU(ctx, domain.SKU{ID: id}) == nil {
								fmt.Println("sku", id)
							}
							if k, err := s.UpdateSKU(ctx, "shared", func(k *domain.SKU) error { k.GPUsTotal++; return nil }); err == nil {
								fmt.Println("shared", k.Version)
							}
						}
					}()
				}
				select {} // until killed
			}
		}
	}
	fmt.Println("error", err)
	os.Exit(1)
}

// TestEveryAcknowledgedWriteSurvivesKill9DuringConcurrentWrites kills a
// process with SIGKILL while eight goroutines write to items of their own
// and to one they share, and opens its database file again: every write it
// acknowledged must be there, and the shared item at least as new as its
// last acknowledged write.
func TestEveryAcknowledgedWriteSurvivesKill9DuringConcurrentWrites(t *testing.T) {
	dir := t.TempDir()
	var (
		skus          []string
		sharedVersion int64
		childErr      string
	)
	classify := func(lines []string) {
		skus, sharedVersion, childErr = skus[:0], 0, ""
		for _, l := range lines {
			what, value, _ := strings.Cut(l, " ")
			switch what {
			case "sku":
				skus = append(skus, value)
			case "shared":
				v, err := strconv.ParseInt(value, 10, 64)
				if err == nil && v > sharedVersion {
					sharedVersion = v
				}
			default:
				childErr = l
			}
		}
	}
	classify(crashtest.KillWhen(t, dir, crashChildEnv, func(lines []string) bool {
		classify(lines)
		return childErr != "" || len(skus) >= 300 && sharedVersion >= 50
	}))
	require.Empty(t, childErr, "the child could not write")

	ctx := context.Background()
	db, err := store.OpenLocalDB(ctx, filepath.Join(dir, dbFile), "", true)
	require.NoError(t, err, "the file is whole after the kill")
	t.Cleanup(func() { _ = db.Close() })
	s := store.New(db, "", time.Now)
	missing := 0
	for _, id := range skus {
		if _, err := s.GetSKU(ctx, id); err != nil {
			missing++
			require.ErrorAs(t, err, new(*store.ItemNotFoundError), id)
		}
	}
	assert.Zero(t, missing, "of %d acknowledged creates", len(skus))
	shared, err := s.GetSKU(ctx, "shared")
	require.NoError(t, err)
	assert.GreaterOrEqual(t, shared.Version, sharedVersion, "the shared item holds its last acknowledged write")
	assert.Equal(t, int(shared.Version-1), shared.GPUsTotal, "and is one whole write, not a mix")
}
