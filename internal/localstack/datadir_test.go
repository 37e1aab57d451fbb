package localstack_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/internal/localstack"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/events"
	"github.com/maasflow/maasflow/shared/store"
	"github.com/maasflow/maasflow/shared/store/boltdb"
	"github.com/maasflow/maasflow/shared/store/legacy"
)

// crashChildEnv makes the test binary play a `maasflow local` process that
// a test kills: it starts the stack on the directory the variable names,
// prints its API URL and waits to be killed.
const crashChildEnv = "MAASFLOW_LOCALSTACK_CRASH_CHILD"

const crashToken = "crash-test-admin-token"

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		s, err := localstack.Start(context.Background(), localstack.Config{
			Listen: "127.0.0.1:0", SimListen: "127.0.0.1:0", TimeScale: 1, DataDir: dir, AdminToken: crashToken,
		})
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println("api", s.APIURL)
		select {} // until killed
	}
	os.Exit(m.Run())
}

// startChild runs the stack in a child process on dir and returns its API
// URL and the process.
func startChild(t *testing.T, dir string) (string, *exec.Cmd) {
	t.Helper()
	cmd := exec.CommandContext(context.Background(), os.Args[0], "-test.run=^$") //nolint:gosec // G204: the test binary itself
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "api ")
	require.True(t, ok, "child said %q", line)
	return url, cmd
}

func TestASecondStackOnTheSameDataDirIsRefused(t *testing.T) {
	dir := t.TempDir()
	_, child := startChild(t, dir)

	_, err := localstack.Start(context.Background(), localstack.Config{Listen: "127.0.0.1:0", SimListen: "127.0.0.1:0", DataDir: dir})
	var inUse *localstack.DataDirInUseError
	require.ErrorAs(t, err, &inUse)
	assert.Equal(t, child.Process.Pid, inUse.PID)
	assert.Contains(t, err.Error(), "is in use by another process (pid")
	require.ErrorAs(t, localstack.Reset(dir), &inUse, "--reset refuses a directory a running stack holds")
	assert.FileExists(t, filepath.Join(dir, localstack.DatabaseFile), "and leaves its files alone")

	require.NoError(t, child.Process.Kill())
	_ = child.Wait()
	s, err := localstack.Start(context.Background(), localstack.Config{Listen: "127.0.0.1:0", SimListen: "127.0.0.1:0", DataDir: dir})
	require.NoError(t, err, "the kernel drops the lock of a killed process")
	require.NoError(t, s.Close())
}

// TestEveryAcknowledgedWriteSurvivesKill9 writes SKUs through the admin API
// of a stack in another process from eight clients, kills that process
// with SIGKILL in the middle of the writes, and starts a stack on the same
// directory: every write the API acknowledged must be there.
func TestEveryAcknowledgedWriteSurvivesKill9(t *testing.T) {
	dir := t.TempDir()
	url, child := startChild(t, dir)

	var mu sync.Mutex
	var acked []string
	stop := make(chan struct{})
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 10 * time.Second}
	for w := range 8 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("sku-%d-%05d", w, i)
				body := strings.NewReader(fmt.Sprintf(`{"id":%q,"gpu_model":"H100","gpus_total":8}`, id))
				req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url+"/api/v1/admin/skus", body)
				if err != nil {
					return
				}
				req.Header.Set("Authorization", "Bearer "+crashToken)
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if err != nil {
					return // the process is gone
				}
				_ = resp.Body.Close()
				if resp.StatusCode == http.StatusCreated {
					mu.Lock()
					acked = append(acked, id)
					mu.Unlock()
				}
			}
		})
	}
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(acked) >= 300
	}, 60*time.Second, 5*time.Millisecond)
	require.NoError(t, child.Process.Signal(syscall.SIGKILL))
	close(stop)
	wg.Wait()
	_ = child.Wait()

	s, err := localstack.Start(context.Background(), localstack.Config{Listen: "127.0.0.1:0", SimListen: "127.0.0.1:0", DataDir: dir})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	ctx := context.Background()
	missing := 0
	for _, id := range acked {
		if _, err := s.Store.GetSKU(ctx, id); err != nil {
			missing++
			require.ErrorAs(t, err, new(*store.ItemNotFoundError), id)
		}
	}
	assert.Zero(t, missing, "of %d acknowledged writes", len(acked))
}

func TestADamagedDataDirIsCaughtAtStart(t *testing.T) {
	start := func(dir string) error {
		s, err := localstack.Start(context.Background(), localstack.Config{Listen: "127.0.0.1:0", SimListen: "127.0.0.1:0", DataDir: dir})
		if err == nil {
			_ = s.Close()
		}
		return err
	}
	seed := func(t *testing.T) string {
		t.Helper()
		dir := t.TempDir()
		s, err := localstack.Start(context.Background(), localstack.Config{Listen: "127.0.0.1:0", SimListen: "127.0.0.1:0", DataDir: dir})
		require.NoError(t, err)
		_, err = s.SeedDemo(context.Background())
		require.NoError(t, err)
		require.NoError(t, s.Close())
		return dir
	}
	// refused checks a start is refused with a message that names what is
	// wrong and says what to do.
	refused := func(t *testing.T, err error, what string) {
		t.Helper()
		require.Error(t, err)
		assert.Contains(t, err.Error(), what)
		assert.Contains(t, err.Error(), "backup")
		assert.Contains(t, err.Error(), "--reset")
	}
	db := func(dir string) string { return filepath.Join(dir, localstack.DatabaseFile) }
	t.Run("database file emptied", func(t *testing.T) {
		dir := seed(t)
		require.NoError(t, os.Truncate(db(dir), 0))
		err := start(dir)
		refused(t, err, "empty")
		require.ErrorAs(t, err, new(*boltdb.DamagedError))
	})
	t.Run("database file cut short", func(t *testing.T) {
		dir := seed(t)
		// Three pages: the meta pages and one more, far fewer than the
		// seeded tables use (the file may be longer than its pages in use,
		// so a cut in its second half need not remove any).
		require.NoError(t, os.Truncate(db(dir), int64(3*os.Getpagesize())))
		err := start(dir)
		refused(t, err, "damaged")
		require.ErrorAs(t, err, new(*boltdb.DamagedError))
	})
	t.Run("database meta pages overwritten", func(t *testing.T) {
		dir := seed(t)
		f, err := os.OpenFile(db(dir), os.O_RDWR, 0)
		require.NoError(t, err)
		junk := make([]byte, 2*os.Getpagesize())
		for i := range junk {
			junk[i] = 0xA5
		}
		_, err = f.WriteAt(junk, 0)
		require.NoError(t, err)
		require.NoError(t, f.Close())
		err = start(dir)
		refused(t, err, "damaged")
		require.ErrorAs(t, err, new(*boltdb.DamagedError))
	})
	t.Run("database page overwritten", func(t *testing.T) {
		dir := seed(t)
		f, err := os.OpenFile(db(dir), os.O_RDWR, 0)
		require.NoError(t, err)
		info, err := f.Stat()
		require.NoError(t, err)
		// Every page past the two meta pages, the freelist's included.
		junk := make([]byte, info.Size()-int64(2*os.Getpagesize()))
		for i := range junk {
			junk[i] = 0xA5
		}
		_, err = f.WriteAt(junk, int64(2*os.Getpagesize()))
		require.NoError(t, err)
		require.NoError(t, f.Close())
		err = start(dir)
		refused(t, err, "damaged")
		require.ErrorAs(t, err, new(*boltdb.DamagedError))
	})
	t.Run("database file from a newer release", func(t *testing.T) {
		dir := seed(t)
		d, err := boltdb.Open(db(dir), boltdb.Options{})
		require.NoError(t, err)
		require.NoError(t, d.SetSchemaVersion(boltdb.SchemaVersion+1))
		require.NoError(t, d.Close())
		err = start(dir)
		require.ErrorAs(t, err, new(*boltdb.NewerVersionError))
		assert.Contains(t, err.Error(), "newer than this release")
		assert.Contains(t, err.Error(), "backup")
	})
	t.Run("corrupt secrets file", func(t *testing.T) {
		dir := seed(t)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "secrets.json"), []byte(`{"maasflow/sites/x": "not base64!`), 0o600))
		err := start(dir)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "secrets")
	})
	t.Run("empty secrets file", func(t *testing.T) {
		dir := seed(t)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "secrets.json"), nil, 0o600))
		err := start(dir)
		refused(t, err, "secrets file")
		assert.Contains(t, err.Error(), "empty")
	})
	t.Run("connector key cut short", func(t *testing.T) {
		dir := seed(t)
		path := filepath.Join(dir, "connector.key")
		before, err := os.ReadFile(path)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(path, before[:10], 0o600))
		refused(t, start(dir), "connector key")
		after, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, before[:10], after, "the key is left for the operator, not replaced")
	})
	t.Run("connector key emptied", func(t *testing.T) {
		dir := seed(t)
		require.NoError(t, os.Truncate(filepath.Join(dir, "connector.key"), 0))
		refused(t, start(dir), "connector key")
	})
}

// TestADataDirOfTheJournalReleaseIsMigrated starts on a data directory the
// release before the database file wrote (testdata/datadir-journal, made by
// running that release's stack: a SKU updated once, an onboarding completed
// and one left running): its records are served, the running one is closed
// as interrupted, and the journal is kept aside, never read again.
func TestADataDirOfTheJournalReleaseIsMigrated(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS("testdata/datadir-journal")))
	ctx := context.Background()
	s, err := localstack.Start(ctx, localstack.Config{Listen: "127.0.0.1:0", SimListen: "127.0.0.1:0", DataDir: dir})
	require.NoError(t, err)
	sku, err := s.Store.GetSKU(ctx, "k1")
	require.NoError(t, err)
	assert.Equal(t, 4, sku.GPUsTotal, "the SKU as last written")
	done, err := s.Store.GetOnboarding(ctx, "o-done")
	require.NoError(t, err)
	assert.Equal(t, domain.OnboardingCompleted, done.Status)
	running, err := s.Store.GetOnboarding(ctx, "o-running")
	require.NoError(t, err)
	assert.Equal(t, domain.OnboardingFailed, running.Status, "closed as interrupted by the restart")
	rows, err := s.Store.ListOnboardingEvents(ctx, "o-running")
	require.NoError(t, err)
	assert.Len(t, rows, 2, "its stage row, and the close note")
	require.NoError(t, s.Close())

	assert.NoFileExists(t, filepath.Join(dir, "dynamodb.jsonl"))
	assert.FileExists(t, filepath.Join(dir, "dynamodb.jsonl.migrated"))

	// The next start serves the database file alone.
	s, err = localstack.Start(ctx, localstack.Config{Listen: "127.0.0.1:0", SimListen: "127.0.0.1:0", DataDir: dir})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	again, err := s.Store.GetOnboarding(ctx, "o-running")
	require.NoError(t, err)
	assert.Equal(t, running.Version, again.Version)
}

// TestADamagedJournalOfAnEarlierReleaseIsNotMigrated: a journal line in
// the middle that is not a record refuses the start, and nothing of the
// journal is half-loaded.
func TestADamagedJournalOfAnEarlierReleaseIsNotMigrated(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS("testdata/datadir-journal")))
	path := filepath.Join(dir, "dynamodb.jsonl")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.SplitAfter(string(b), "\n")
	lines[1] = "garbage\n"
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines, "")), 0o600))
	_, err = localstack.Start(context.Background(), localstack.Config{Listen: "127.0.0.1:0", SimListen: "127.0.0.1:0", DataDir: dir})
	var damaged *legacy.JournalDamagedError
	require.ErrorAs(t, err, &damaged)
	assert.Equal(t, 2, damaged.Line)
	assert.Contains(t, err.Error(), "--reset")
	assert.FileExists(t, path, "left for the operator")

	d, err := boltdb.Open(filepath.Join(dir, localstack.DatabaseFile), boltdb.Options{})
	require.NoError(t, err)
	defer func() { _ = d.Close() }()
	require.NoError(t, store.CreateTable(context.Background(), d, ""))
	_, err = store.New(d, "", time.Now).GetSKU(context.Background(), "k1")
	require.ErrorAs(t, err, new(*store.ItemNotFoundError), "nothing of the damaged journal was loaded")
}

// TestAnEventFileOfTheJSONLinesReleaseIsMigrated starts on a data directory
// holding the event file the release before the event bus moved into the
// database wrote (testdata/datadir-events, made by that release's
// LocalBus): its events are served first, in order, the next event after
// them, the file is kept aside, and another start moves nothing twice.
func TestAnEventFileOfTheJSONLinesReleaseIsMigrated(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS("testdata/datadir-events")))
	ctx := context.Background()
	start := func() *localstack.Stack {
		s, err := localstack.Start(ctx, localstack.Config{Listen: "127.0.0.1:0", SimListen: "127.0.0.1:0", DataDir: dir})
		require.NoError(t, err)
		return s
	}
	s := start()
	assert.NoFileExists(t, filepath.Join(dir, events.LegacyFileName))
	assert.FileExists(t, filepath.Join(dir, events.LegacyFileName+".migrated"))
	require.NoError(t, s.Bus.Publish(ctx, events.OnboardingFailed, events.OnboardingDetail{
		SiteID: "s1", OnboardingID: "o-2", NodeID: "n1", MAASSystemID: "abc123", Hostname: "gpu-02", CorrelationID: "c1",
		Attempt: 1, Status: "failed", Stage: "deploy", Error: &events.ErrorDetail{Code: "X", Message: "x"}, OccurredAt: time.Now(),
	}))
	require.NoError(t, s.Close())

	s = start()
	t.Cleanup(func() { _ = s.Close() })
	got, err := s.Bus.ReadAll()
	require.NoError(t, err)
	var seen []string
	for _, e := range got {
		var d events.OnboardingDetail
		require.NoError(t, json.Unmarshal(e.Detail, &d))
		seen = append(seen, d.OnboardingID+" "+e.DetailType)
	}
	assert.Equal(t, []string{
		"o-1 " + events.OnboardingStarted, "o-1 " + events.OnboardingCompleted, "o-2 " + events.OnboardingStarted,
		"o-2 " + events.OnboardingFailed,
	}, seen)
}

// TestADamagedEventFileOfAnEarlierReleaseIsRefused: a line of the event
// file that is not an envelope refuses the start with what to do, and the
// file is left for the operator.
func TestADamagedEventFileOfAnEarlierReleaseIsRefused(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS("testdata/datadir-events")))
	path := filepath.Join(dir, events.LegacyFileName)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.SplitAfter(string(b), "\n")
	lines[1] = "garbage\n"
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines, "")), 0o600))
	_, err = localstack.Start(context.Background(), localstack.Config{Listen: "127.0.0.1:0", SimListen: "127.0.0.1:0", DataDir: dir})
	var damaged *events.DamagedEventsError
	require.ErrorAs(t, err, &damaged)
	assert.Equal(t, 2, damaged.Line)
	assert.Contains(t, err.Error(), "restore it from a backup")
	assert.FileExists(t, path, "left for the operator")
}
