package boltdb_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/store"
	"github.com/maasflow/maasflow/shared/store/boltdb"
)

// BenchmarkOpen100k opens a database file of 100,000 onboardings, as local
// mode's start does: with bbolt's page-by-page check (check) and without
// (meta pages only).
func BenchmarkOpen100k(b *testing.B) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), dbFile)
	// Written without fsync: the benchmark is of the open, not of the
	// writes.
	db, err := boltdb.Open(path, boltdb.Options{NoSync: true})
	require.NoError(b, err)
	require.NoError(b, store.CreateTable(ctx, db, ""))
	s := store.New(db, "", time.Now)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const records = 100_000
	for i := range records {
		require.NoError(b, s.CreateOnboarding(ctx, domain.Onboarding{
			ID: fmt.Sprintf("o%06d", i), SiteID: fmt.Sprintf("site-%d", i%4), ProfileID: "p1", SKUID: "h100",
			Hostname: fmt.Sprintf("gpu-%06d", i), IPMIIP: fmt.Sprintf("10.%d.%d.%d", i/65536, i/256%256, i%256+1),
			Status: domain.OnboardingCompleted, CreatedAt: t0.Add(time.Duration(i) * time.Second),
		}))
	}
	require.NoError(b, db.Close())
	for _, check := range []bool{true, false} {
		b.Run(fmt.Sprintf("check=%v", check), func(b *testing.B) {
			for range b.N {
				db, err := boltdb.Open(path, boltdb.Options{Check: check})
				require.NoError(b, err)
				require.NoError(b, db.Close())
			}
		})
	}
}
