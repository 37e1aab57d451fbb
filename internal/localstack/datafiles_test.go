package localstack

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestResetEmptiesADataDir(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, AdminTokenFile), []byte("tok\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, eventsFile), []byte("{}\n"), 0o600))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "extra"), 0o700))

	require.NoError(t, Reset(dir))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	assert.Subset(t, []string{lockFile}, left, "only the (released) lock file may remain")

	assert.NoError(t, Reset(filepath.Join(dir, "missing")), "nothing to reset is fine")
	assert.NoError(t, Reset(dir), "an empty dir is fine")
}

func TestResetRefusesADirectoryThatIsNotOurs(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("keep"), 0o600))
	err := Reset(dir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "holds none of maasflow's files")
	_, err = os.Stat(filepath.Join(dir, "notes.txt"))
	assert.NoError(t, err)
}

func TestAdminTokenIsKeptAcrossStarts(t *testing.T) {
	dir := t.TempDir()
	first, err := loadOrCreateToken(dir)
	require.NoError(t, err)
	assert.Len(t, first, 48)
	again, err := loadOrCreateToken(dir)
	require.NoError(t, err)
	assert.Equal(t, first, again)

	fi, err := os.Stat(filepath.Join(dir, AdminTokenFile))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "only the operator reads it")

	require.NoError(t, os.WriteFile(filepath.Join(dir, AdminTokenFile), []byte("  \n"), 0o600))
	fresh, err := loadOrCreateToken(dir)
	require.NoError(t, err)
	assert.Len(t, fresh, 48, "an empty file gets a new token")
}

func TestDemoHostsNumberOn(t *testing.T) {
	h, faults := demoHost(3)
	assert.Equal(t, DemoRetryHost, h.Hostname)
	assert.Equal(t, map[string]any{"deploy_datasource_failures": 1}, faults)
	h, faults = demoHost(12)
	assert.Equal(t, DemoHost{Hostname: "gpu-node-12", BMCIP: "10.20.0.112", PXEMAC: "52:54:00:20:01:0c"}, h)
	assert.Nil(t, faults)
}
