package localstack_test

import (
	"bufio"
	"context"
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
	"github.com/maasflow/maasflow/shared/store"
	"github.com/maasflow/maasflow/shared/store/journal"
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
	assert.FileExists(t, filepath.Join(dir, "dynamodb.jsonl"), "and leaves its files alone")

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
	t.Run("journal damaged in the middle", func(t *testing.T) {
		dir := seed(t)
		path := filepath.Join(dir, journal.File)
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		lines := strings.SplitAfter(string(b), "\n")
		require.Greater(t, len(lines), 3)
		lines[1] = "garbage\n"
		require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines, "")), 0o600))
		err = start(dir)
		var damaged *journal.DamagedError
		require.ErrorAs(t, err, &damaged)
		assert.Equal(t, 2, damaged.Line)
	})
	t.Run("corrupt secrets file", func(t *testing.T) {
		dir := seed(t)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "secrets.json"), []byte(`{"maasflow/sites/x": "not base64!`), 0o600))
		err := start(dir)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "secrets")
	})
	t.Run("journal cut in the middle of a record", func(t *testing.T) {
		dir := seed(t)
		path := filepath.Join(dir, journal.File)
		info, err := os.Stat(path)
		require.NoError(t, err)
		require.NoError(t, os.Truncate(path, info.Size()-7))
		require.NoError(t, start(dir), "repaired: the torn record was never acknowledged")
		kept, err := filepath.Glob(path + ".damaged-*")
		require.NoError(t, err)
		assert.Len(t, kept, 1)
	})
}
