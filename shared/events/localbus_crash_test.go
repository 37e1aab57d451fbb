package events

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
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
)

// crashChildEnv makes the test binary play a local-mode process that a
// test kills: it publishes to the event file in its working directory from
// eight goroutines until killed, printing each event it got acknowledged.
const crashChildEnv = "MAASFLOW_LOCALBUS_CRASH_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(crashChildEnv) != "" {
		dir, err := os.Getwd()
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		publishUntilKilled(filepath.Join(dir, LocalFileName))
	}
	os.Exit(m.Run())
}

// publishUntilKilled publishes onboarding.started events whose onboarding
// ids are unique and prints "ack ID" as each Publish returns.
func publishUntilKilled(path string) {
	bus, err := NewLocalBus(path)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	for w := range 8 {
		go func() {
			for i := 0; ; i++ {
				d := sampleDetail(OnboardingStarted)
				d.OnboardingID = fmt.Sprintf("onb-%d-%d", w, i)
				if bus.Publish(context.Background(), OnboardingStarted, d) == nil {
					fmt.Println("ack", d.OnboardingID)
				}
			}
		}()
	}
	select {} // until killed
}

// TestLocalBusKeepsEveryAcknowledgedEventThroughKill9 kills a process with
// SIGKILL while eight goroutines publish, then opens its event file again
// as a restart does: every event Publish acknowledged must be there.
func TestLocalBusKeepsEveryAcknowledgedEventThroughKill9(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, LocalFileName)
	cmd := exec.CommandContext(context.Background(), os.Args[0], "-test.run=^$") //nolint:gosec // G204: the test binary itself
	cmd.Env = append(os.Environ(), crashChildEnv+"=1")
	cmd.Dir = dir
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	var (
		mu       sync.Mutex
		acked    []string
		childErr string
	)
	read := make(chan struct{})
	go func() {
		defer close(read)
		for sc := bufio.NewScanner(out); sc.Scan(); {
			mu.Lock()
			if id, ok := strings.CutPrefix(sc.Text(), "ack "); ok {
				acked = append(acked, id)
			} else {
				childErr = sc.Text()
			}
			mu.Unlock()
		}
	}()
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return childErr != "" || len(acked) >= 300
	}, 60*time.Second, 5*time.Millisecond)
	mu.Lock()
	require.Empty(t, childErr, "the child could not publish")
	mu.Unlock()
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	<-read // every acknowledgement the child printed before it died
	_ = cmd.Wait()

	bus, err := NewLocalBus(path) // repairs a torn last event, as a restart does
	require.NoError(t, err)
	require.NoError(t, bus.Close())
	got, err := ReadAll(path)
	require.NoError(t, err)
	onFile := map[string]bool{}
	for _, e := range got {
		var d OnboardingDetail
		require.NoError(t, json.Unmarshal(e.Detail, &d))
		onFile[d.OnboardingID] = true
	}
	missing := 0
	for _, id := range acked {
		if !onFile[id] {
			missing++
		}
	}
	assert.Zero(t, missing, "of %d acknowledged events", len(acked))
}
