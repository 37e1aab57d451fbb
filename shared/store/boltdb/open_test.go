package boltdb

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A second opener of one file is refused, with what to do, once the lock
// timeout has passed.
func TestASecondOpenerIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	db, err := Open(path, Options{})
	require.NoError(t, err)
	defer func() { _ = db.Close() }()
	_, err = Open(path, Options{LockTimeout: 50 * time.Millisecond})
	var inUse *InUseError
	require.ErrorAs(t, err, &inUse)
	assert.Contains(t, err.Error(), "in use by another process")
}

// An emptied file is damage, not a new database.
func TestAnEmptiedFileIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	require.NoError(t, os.WriteFile(path, nil, 0o600))
	_, err := Open(path, Options{})
	require.ErrorAs(t, err, new(*DamagedError))
	assert.Contains(t, err.Error(), "--reset")
}

// A file a newer release wrote is refused; one this release wrote opens.
func TestAFileFromANewerReleaseIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	db, err := Open(path, Options{})
	require.NoError(t, err)
	require.NoError(t, db.Close())
	db, err = Open(path, Options{Check: true})
	require.NoError(t, err)
	require.NoError(t, db.SetSchemaVersion(SchemaVersion+1))
	require.NoError(t, db.Close())
	_, err = Open(path, Options{})
	var newer *NewerVersionError
	require.ErrorAs(t, err, &newer)
	assert.Equal(t, SchemaVersion+1, newer.Version)
}

// A file cut short is refused before bbolt maps it (reading past its end
// would fault the process), wherever the cut falls.
func TestAFileCutShortIsRefused(t *testing.T) {
	src := filepath.Join(t.TempDir(), "x.db")
	db, err := Open(src, Options{})
	require.NoError(t, err)
	require.NoError(t, db.bolt.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte("fill"))
		if err != nil {
			return err
		}
		for i := range 2000 {
			if err := b.Put(fmt.Appendf(nil, "k%05d", i), make([]byte, 500)); err != nil {
				return err
			}
		}
		return nil
	}))
	var used int64 // the bytes of the pages in use; the file may be longer
	require.NoError(t, db.bolt.View(func(tx *bolt.Tx) error { used = tx.Size(); return nil }))
	require.NoError(t, db.Close())
	full, err := os.ReadFile(src)
	require.NoError(t, err)
	for _, frac := range []int64{10, 25, 50, 75, 95} {
		cut := filepath.Join(t.TempDir(), "cut.db")
		require.NoError(t, os.WriteFile(cut, full[:used*frac/100], 0o600))
		_, err := Open(cut, Options{Check: true})
		require.ErrorAs(t, err, new(*DamagedError), "cut at %d%%", frac)
		assert.Contains(t, err.Error(), "cut short")
	}
}
