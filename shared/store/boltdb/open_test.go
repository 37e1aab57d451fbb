package boltdb

import (
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
