package journal

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// syncFails is a file whose sync fails, as a failing disk's does.
type syncFails struct{ file }

var errSync = errors.New("input/output error")

func (syncFails) Sync() error { return errSync }

func TestSyncData(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	require.NoError(t, err)
	_, err = f.Write([]byte("{\"n\":1}\n"))
	require.NoError(t, err)
	require.NoError(t, syncData(f))
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "{\"n\":1}\n", string(got))

	require.NoError(t, f.Close())
	require.Error(t, syncData(f), "a closed file cannot be synced")
	assert.ErrorIs(t, syncData(syncFails{f}), errSync, "a file without a descriptor is synced whole")
}
