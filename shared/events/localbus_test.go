package events

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/clock"
)

func newTestBus(t *testing.T, path string) *LocalBus {
	t.Helper()
	var n atomic.Int64
	bus, err := NewLocalBus(path,
		WithClock(clock.NewFake(t0)),
		WithIDs(func() string { return fmt.Sprintf("evt-%d", n.Add(1)) }))
	require.NoError(t, err)
	t.Cleanup(func() { _ = bus.Close() })
	return bus
}

func TestLocalBusWritesReadsBackAndNotifies(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data", LocalFileName)
	bus := newTestBus(t, path)

	var seen []Envelope
	cancel := bus.Subscribe(func(e Envelope) { seen = append(seen, e) })

	ctx := context.Background()
	require.NoError(t, bus.Publish(ctx, OnboardingStarted, sampleDetail(OnboardingStarted)))
	require.NoError(t, bus.Publish(ctx, OnboardingCompleted, sampleDetail(OnboardingCompleted)))
	cancel()
	cancel() // a second cancel is harmless
	require.NoError(t, bus.Publish(ctx, OnboardingFailed, sampleDetail(OnboardingFailed)))

	info, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())

	got, err := ReadAll(path)
	require.NoError(t, err)
	require.Len(t, got, 3)
	for i, dt := range []string{OnboardingStarted, OnboardingCompleted, OnboardingFailed} {
		assert.Equal(t, fmt.Sprintf("evt-%d", i+1), got[i].ID)
		assert.Equal(t, Source, got[i].Source)
		assert.Equal(t, dt, got[i].DetailType)
		assert.True(t, t0.Equal(got[i].Time))
		var d OnboardingDetail
		require.NoError(t, json.Unmarshal(got[i].Detail, &d))
		assert.Equal(t, sampleDetail(dt), d)
	}
	require.Len(t, seen, 2, "the cancelled subscriber missed the third event")
	assert.Equal(t, got[:2], seen)

	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var line map[string]json.RawMessage
	first, _, _ := cutLine(raw)
	require.NoError(t, json.Unmarshal(first, &line))
	assert.ElementsMatch(t, []string{"id", "source", "detail-type", "time", "detail"}, sortedKeys(line))
}

func cutLine(b []byte) ([]byte, []byte, bool) {
	for i, c := range b {
		if c == '\n' {
			return b[:i], b[i+1:], true
		}
	}
	return b, nil, false
}

func TestLocalBusAppendsToExistingFileAndTightensMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), LocalFileName)
	first := newTestBus(t, path)
	require.NoError(t, first.Publish(context.Background(), OnboardingStarted, sampleDetail(OnboardingStarted)))
	require.NoError(t, first.Close())
	require.NoError(t, os.Chmod(path, 0o644)) //nolint:gosec // G302: loosened to check that the bus tightens it

	second := newTestBus(t, path)
	require.NoError(t, second.Publish(context.Background(), OnboardingCompleted, sampleDetail(OnboardingCompleted)))

	info, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	got, err := ReadAll(path)
	require.NoError(t, err)
	require.Len(t, got, 2, "a restart appends, it never truncates")
	assert.Equal(t, OnboardingCompleted, got[1].DetailType)
}

func TestLocalBusRejectsInvalidDetailWritingNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), LocalFileName)
	bus := newTestBus(t, path)
	called := false
	bus.Subscribe(func(Envelope) { called = true })

	bad := sampleDetail(OnboardingStarted)
	bad.Hostname = ""
	tests := []struct {
		name       string
		detailType string
		detail     any
	}{
		{name: "missing hostname", detailType: OnboardingStarted, detail: bad},
		{name: "error on completed", detailType: OnboardingCompleted, detail: sampleDetail(OnboardingFailed)},
		{name: "secret field", detailType: OnboardingStarted, detail: map[string]any{"token": seedSecret}},
		{name: "no schema", detailType: "node.retirement.started", detail: sampleDetail(OnboardingStarted)},
		{name: "onboarding detail as decommission", detailType: DecommissionStarted, detail: sampleDetail(OnboardingStarted)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := bus.Publish(context.Background(), tt.detailType, tt.detail)
			require.Error(t, err)
			assert.True(t, IsInvalidDetail(err), err.Error())
			assert.NotContains(t, err.Error(), seedSecret)
		})
	}
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Empty(t, raw, "nothing written")
	assert.False(t, called, "no subscriber called")
}

func TestLocalBusWriteFailures(t *testing.T) {
	t.Run("closed bus", func(t *testing.T) {
		bus := newTestBus(t, filepath.Join(t.TempDir(), LocalFileName))
		require.NoError(t, bus.Close())
		require.NoError(t, bus.Close(), "closing twice is a no-op")
		err := bus.Publish(context.Background(), OnboardingStarted, sampleDetail(OnboardingStarted))
		var we *EventWriteError
		require.ErrorAs(t, err, &we)
		require.ErrorIs(t, err, ErrBusClosed)
		assert.Equal(t, OnboardingStarted, we.DetailType)
	})
	t.Run("file gone bad under the bus", func(t *testing.T) {
		bus := newTestBus(t, filepath.Join(t.TempDir(), LocalFileName))
		called := false
		bus.Subscribe(func(Envelope) { called = true })
		require.NoError(t, bus.f.Close()) // the descriptor fails as a full or vanished disk would
		err := bus.Publish(context.Background(), OnboardingStarted, sampleDetail(OnboardingStarted))
		var we *EventWriteError
		require.ErrorAs(t, err, &we, "a write error is returned, never swallowed")
		require.NotErrorIs(t, err, ErrBusClosed)
		assert.False(t, called, "an event that is not on disk is not delivered")
	})
	t.Run("cancelled context", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), LocalFileName)
		bus := newTestBus(t, path)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err := bus.Publish(ctx, OnboardingStarted, sampleDetail(OnboardingStarted))
		require.ErrorIs(t, err, context.Canceled)
		got, err := ReadAll(path)
		require.NoError(t, err)
		assert.Empty(t, got)
	})
	t.Run("directory cannot be created", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "plain-file")
		require.NoError(t, os.WriteFile(file, nil, 0o600))
		_, err := NewLocalBus(filepath.Join(file, "sub", LocalFileName))
		assert.Error(t, err)
	})
}

func TestLocalBusSubscriberMayPublish(t *testing.T) {
	path := filepath.Join(t.TempDir(), LocalFileName)
	bus := newTestBus(t, path)
	bus.Subscribe(func(e Envelope) {
		if e.DetailType == OnboardingStarted {
			assert.NoError(t, bus.Publish(context.Background(), OnboardingCompleted, sampleDetail(OnboardingCompleted)))
		}
	})
	require.NoError(t, bus.Publish(context.Background(), OnboardingStarted, sampleDetail(OnboardingStarted)))
	got, err := ReadAll(path)
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, OnboardingCompleted, got[1].DetailType)
}

func TestLocalBusConcurrentPublishers(t *testing.T) {
	path := filepath.Join(t.TempDir(), LocalFileName)
	bus, err := NewLocalBus(path, WithClock(clock.NewFake(t0)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = bus.Close() })

	var delivered atomic.Int64
	bus.Subscribe(func(Envelope) { delivered.Add(1) })

	const publishers, each = 8, 25
	var wg sync.WaitGroup
	for p := range publishers {
		wg.Go(func() {
			for i := range each {
				d := sampleDetail(OnboardingStarted)
				d.OnboardingID = fmt.Sprintf("onb-%d-%d", p, i)
				assert.NoError(t, bus.Publish(context.Background(), OnboardingStarted, d))
			}
		})
	}
	// Subscribing and cancelling while others publish is safe too.
	wg.Go(func() {
		for range each {
			cancel := bus.Subscribe(func(Envelope) {})
			cancel()
		}
	})
	wg.Wait()

	got, err := ReadAll(path)
	require.NoError(t, err)
	require.Len(t, got, publishers*each, "every line intact")
	ids := map[string]bool{}
	onboardings := map[string]bool{}
	for _, e := range got {
		ids[e.ID] = true
		var d OnboardingDetail
		require.NoError(t, json.Unmarshal(e.Detail, &d))
		onboardings[d.OnboardingID] = true
	}
	assert.Len(t, ids, publishers*each, "unique ids")
	assert.Len(t, onboardings, publishers*each, "no event lost or duplicated")
	assert.Equal(t, int64(publishers*each), delivered.Load())
}

func TestReadAll(t *testing.T) {
	dir := t.TempDir()
	good := `{"id":"1","source":"maasflow","detail-type":"node.onboarding.started","time":"2025-01-01T00:00:00Z","detail":{}}`
	tests := []struct {
		name    string
		content string
		want    int
		wantErr string
	}{
		{name: "empty", content: "", want: 0},
		{name: "two events and a blank line", content: good + "\n\n" + good + "\n", want: 2},
		{name: "no trailing newline", content: good, want: 1},
		{name: "corrupt line", content: good + "\n{\"id\":" + seedSecret + "\n", wantErr: "line 2 is not an event envelope"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, fmt.Sprintf("e%d.jsonl", i))
			require.NoError(t, os.WriteFile(path, []byte(tt.content), 0o600))
			got, err := ReadAll(path)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				assert.NotContains(t, err.Error(), seedSecret)
				return
			}
			require.NoError(t, err)
			assert.Len(t, got, tt.want)
		})
	}
	t.Run("missing file", func(t *testing.T) {
		_, err := ReadAll(filepath.Join(dir, "nope.jsonl"))
		assert.ErrorIs(t, err, os.ErrNotExist)
	})
}

func BenchmarkLocalBusPublish(b *testing.B) {
	bus, err := NewLocalBus(filepath.Join(b.TempDir(), LocalFileName))
	require.NoError(b, err)
	b.Cleanup(func() { _ = bus.Close() })
	d := sampleDetail(OnboardingStarted)
	d.OccurredAt = time.Now()
	b.ReportAllocs()
	for b.Loop() {
		if err := bus.Publish(context.Background(), OnboardingStarted, d); err != nil {
			b.Fatal(err)
		}
	}
}

func TestLocalBusRepairsATornLastEventLoudly(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), LocalFileName)
	first := newTestBus(t, path)
	require.NoError(t, first.Publish(ctx, OnboardingStarted, sampleDetail(OnboardingStarted)))
	require.NoError(t, first.Close())
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0o600)
	require.NoError(t, err)
	_, err = f.WriteString(`{"id":"evt-2","source":"maasflow","detail-ty`)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	var logs syncBuffer
	bus, err := NewLocalBus(path, WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))))
	require.NoError(t, err)
	t.Cleanup(func() { _ = bus.Close() })
	assert.Contains(t, logs.String(), `"level":"ERROR"`)
	assert.Contains(t, logs.String(), "torn event")
	torn, err := filepath.Glob(path + ".torn-*")
	require.NoError(t, err)
	require.Len(t, torn, 1, "the torn bytes are set aside")

	require.NoError(t, bus.Publish(ctx, OnboardingCompleted, sampleDetail(OnboardingCompleted)))
	got, err := ReadAll(path)
	require.NoError(t, err, "the file reads whole again")
	require.Len(t, got, 2)
	assert.Equal(t, OnboardingCompleted, got[1].DetailType)
}

func TestLocalBusRefusesADamagedLastEvent(t *testing.T) {
	path := filepath.Join(t.TempDir(), LocalFileName)
	require.NoError(t, os.WriteFile(path, []byte("{\"id\":\"evt-1\"}\nnot an event at all\n"), 0o600))
	_, err := NewLocalBus(path)
	var damaged *DamagedEventsError
	require.ErrorAs(t, err, &damaged)
}

type syncBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	return len(p), nil
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

// BenchmarkLocalBusPublishParallel publishes from 64 goroutines at once
// (SetParallelism 32 per core on 2 cores), as a thousand executions do in
// local mode.
func BenchmarkLocalBusPublishParallel(b *testing.B) {
	bus, err := NewLocalBus(filepath.Join(b.TempDir(), LocalFileName))
	require.NoError(b, err)
	b.Cleanup(func() { _ = bus.Close() })
	d := sampleDetail(OnboardingStarted)
	d.OccurredAt = time.Now()
	b.SetParallelism(32)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := bus.Publish(context.Background(), OnboardingStarted, d); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// flakyEventDisk fails every third write, after taking half of it, as a
// disk that keeps filling up does.
type flakyEventDisk struct {
	eventFile
	writes atomic.Int64
}

func (d *flakyEventDisk) Write(p []byte) (int, error) {
	if d.writes.Add(1)%3 != 0 {
		return d.eventFile.Write(p)
	}
	n, _ := d.eventFile.Write(p[:len(p)/2])
	return n, syscall.ENOSPC
}

func TestLocalBusAFailedBatchFailsItsEventsAndLeavesNoHalfLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), LocalFileName)
	bus := newTestBus(t, path)
	disk := &flakyEventDisk{eventFile: bus.f}
	bus.f = disk // before the first Publish: the writer has not touched it yet
	var mu sync.Mutex
	var delivered []Envelope
	bus.Subscribe(func(e Envelope) {
		mu.Lock()
		delivered = append(delivered, e)
		mu.Unlock()
	})

	acked := map[string]bool{}
	var refusals []error
	var wg sync.WaitGroup
	for p := range 8 {
		wg.Go(func() {
			for i := range 25 {
				d := sampleDetail(OnboardingStarted)
				d.OnboardingID = fmt.Sprintf("onb-%d-%d", p, i)
				err := bus.Publish(context.Background(), OnboardingStarted, d)
				mu.Lock()
				if err != nil {
					refusals = append(refusals, err)
				} else {
					acked[d.OnboardingID] = true
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.Positive(t, disk.writes.Load()/3, "some batches failed")
	require.Less(t, len(acked), 200, "and failed their events")
	require.NotEmpty(t, acked)
	for _, err := range refusals {
		var we *EventWriteError
		require.ErrorAs(t, err, &we)
		require.ErrorIs(t, err, syscall.ENOSPC)
	}

	got, err := ReadAll(path)
	require.NoError(t, err, "no half line is left behind")
	assert.Equal(t, acked, onboardingIDs(t, got, "written once"), "the file holds exactly the acknowledged events")
	assert.Equal(t, acked, onboardingIDs(t, delivered, "delivered once"), "and only they were delivered")
}

// onboardingIDs returns the onboarding ids of events, each of which must
// appear once.
func onboardingIDs(t *testing.T, events []Envelope, once string) map[string]bool {
	t.Helper()
	ids := map[string]bool{}
	for _, e := range events {
		var d OnboardingDetail
		require.NoError(t, json.Unmarshal(e.Detail, &d))
		assert.False(t, ids[d.OnboardingID], "%s: %s", once, d.OnboardingID)
		ids[d.OnboardingID] = true
	}
	return ids
}
