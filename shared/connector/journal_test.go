package connector_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/connector"
)

// TestAJournalOfTheJSONLinesReleaseIsMigrated opens a state directory the
// release before the journal's database file wrote (testdata/state-jsonl,
// made by that release's journal: one mutation finished, one begun and
// never finished): the finished one is answered from the journal, the
// begun one is interrupted, the old file is kept aside, and a restart
// moves nothing twice.
func TestAJournalOfTheJSONLinesReleaseIsMigrated(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS("testdata/state-jsonl")))
	now := time.Date(2026, 11, 28, 12, 30, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	for range 2 {
		j, err := connector.OpenJournal(dir, clock)
		require.NoError(t, err)
		state, reply, err := j.Begin("req-done")
		require.NoError(t, err)
		assert.Equal(t, connector.BeginDone, state)
		assert.Equal(t, 200, reply.Status)
		assert.JSONEq(t, `{"system_id":"abc123"}`, string(reply.Body))
		state, _, err = j.Begin("req-begun")
		require.NoError(t, err)
		assert.Equal(t, connector.BeginInterrupted, state, "begun by the earlier release and never finished")
		require.NoError(t, j.Close())
		assert.NoFileExists(t, filepath.Join(dir, "journal.jsonl"))
		assert.FileExists(t, filepath.Join(dir, "journal.jsonl.migrated"))
		assert.FileExists(t, filepath.Join(dir, connector.JournalFile))
	}
}

// TestADamagedJournalOfAnEarlierReleaseIsRefused: a line that is not an
// entry (other than a last line cut short) refuses the start and names the
// line; the file is left as it was.
func TestADamagedJournalOfAnEarlierReleaseIsRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "journal.jsonl")
	require.NoError(t, os.WriteFile(path, []byte("{\"id\":\"a\",\"at\":\"2026-11-28T12:00:00Z\"}\ngarbage\n{\"id\":\"b\",\"at\":\"2026-11-28T12:00:00Z\"}\n"), 0o600))
	_, err := connector.OpenJournal(dir, nil)
	var damaged *connector.ConnectorJournalDamagedError
	require.ErrorAs(t, err, &damaged)
	assert.Contains(t, err.Error(), "line 2")
	assert.FileExists(t, path)
}

// TestADamagedJournalIsRefused: a journal file that is empty, cut short or
// overwritten is refused with what to do, never served nor reset: without
// it a mutation could be sent to MAAS twice.
func TestADamagedJournalIsRefused(t *testing.T) {
	write := func(t *testing.T) string {
		t.Helper()
		dir := t.TempDir()
		j, err := connector.OpenJournal(dir, nil)
		require.NoError(t, err)
		for _, id := range []string{"a", "b", "c"} {
			_, _, err := j.Begin(id)
			require.NoError(t, err)
			require.NoError(t, j.Finish(id, connector.Response{ID: id, Status: 200}))
		}
		require.NoError(t, j.Close())
		return dir
	}
	for name, damage := range map[string]func(path string) error{
		"emptied":   func(p string) error { return os.Truncate(p, 0) },
		"cut short": func(p string) error { return os.Truncate(p, 4096+100) },
		"overwritten": func(p string) error {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for i := range b {
				b[i] = 0xAB
			}
			return os.WriteFile(p, b, 0o600)
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := write(t)
			path := filepath.Join(dir, connector.JournalFile)
			require.NoError(t, damage(path))
			_, err := connector.OpenJournal(dir, nil)
			var damaged *connector.ConnectorJournalDamagedError
			require.ErrorAs(t, err, &damaged)
			assert.Contains(t, err.Error(), "restore it from a backup")
		})
	}
}

// TestASecondConnectorOnOneStateDirIsRefused: two connectors on one
// journal could each run a mutation the other began.
func TestASecondConnectorOnOneStateDirIsRefused(t *testing.T) {
	dir := t.TempDir()
	j, err := connector.OpenJournal(dir, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = j.Close() })
	_, err = connector.OpenJournal(dir, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "in use by another connector")
}
