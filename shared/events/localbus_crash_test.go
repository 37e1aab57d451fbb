package events

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/maasflow/maasflow/internal/crashtest"
)

// crashChildEnv makes the test binary play a local-mode process that a
// test kills: it publishes to the event file in its working directory from
// eight goroutines until killed, printing each event it got acknowledged.
const crashChildEnv = "MAASFLOW_LOCALBUS_CRASH_CHILD"

// crashDBFile is the database file the child publishes into.
const crashDBFile = "maasflow.db"

func TestMain(m *testing.M) {
	crashtest.PlayChild(crashChildEnv, func(dir string) { publishUntilKilled(filepath.Join(dir, crashDBFile)) })
	os.Exit(m.Run())
}

// publishUntilKilled publishes onboarding.started events whose onboarding
// ids are unique and prints "ack ID" as each Publish returns.
func publishUntilKilled(path string) {
	db, err := bolt.Open(path, 0o600, nil)
	if err == nil {
		var bus *LocalBus
		if bus, err = NewLocalBus(db); err == nil {
			publishForever(bus)
		}
	}
	fmt.Println("error", err)
	os.Exit(1)
}

// publishForever publishes from eight goroutines until the process is
// killed.
func publishForever(bus *LocalBus) {
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
	path := filepath.Join(dir, crashDBFile)
	var acked []string
	childErr := ""
	classify := func(lines []string) {
		acked, childErr = acked[:0], ""
		for _, l := range lines {
			if id, ok := strings.CutPrefix(l, "ack "); ok {
				acked = append(acked, id)
			} else {
				childErr = l
			}
		}
	}
	classify(crashtest.KillWhen(t, dir, crashChildEnv, func(lines []string) bool {
		classify(lines)
		return childErr != "" || len(acked) >= 300
	}))
	require.Empty(t, childErr, "the child could not publish")

	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	require.NoError(t, err, "the file is whole after the kill")
	t.Cleanup(func() { _ = db.Close() })
	got, err := ReadAll(db)
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
