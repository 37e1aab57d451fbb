package events

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/maasflow/maasflow/shared/clock"
)

// openTestDB opens a bbolt file at path, closed when the test ends.
func openTestDB(tb testing.TB, path string) *bolt.DB {
	tb.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = db.Close() })
	return db
}

func newTestBus(t *testing.T, db LocalDB) *LocalBus {
	t.Helper()
	var n atomic.Int64
	bus, err := NewLocalBus(db,
		WithClock(clock.NewFake(t0)),
		WithIDs(func() string { return fmt.Sprintf("evt-%d", n.Add(1)) }))
	require.NoError(t, err)
	t.Cleanup(func() { _ = bus.Close() })
	return bus
}

func TestLocalBusWritesReadsBackAndNotifies(t *testing.T) {
	db := openTestDB(t, filepath.Join(t.TempDir(), "test.db"))
	bus := newTestBus(t, db)

	var seen []Envelope
	cancel := bus.Subscribe(func(e Envelope) { seen = append(seen, e) })

	ctx := context.Background()
	require.NoError(t, bus.Publish(ctx, OnboardingStarted, sampleDetail(OnboardingStarted)))
	require.NoError(t, bus.Publish(ctx, OnboardingCompleted, sampleDetail(OnboardingCompleted)))
	cancel()
	cancel() // a second cancel is harmless
	require.NoError(t, bus.Publish(ctx, OnboardingFailed, sampleDetail(OnboardingFailed)))

	got, err := bus.ReadAll()
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

	// Each event is an envelope under its sequence number, in order.
	require.NoError(t, db.View(func(tx *bolt.Tx) error {
		k, v := tx.Bucket(Bucket).Cursor().First()
		assert.Equal(t, uint64(1), binary.BigEndian.Uint64(k))
		var env map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(v, &env))
		assert.ElementsMatch(t, []string{"id", "source", "detail-type", "time", "detail"}, sortedKeys(env))
		return nil
	}))
}

func TestLocalBusKeepsItsEventsAcrossARestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "test.db")
	db, err := bolt.Open(path, 0o600, nil)
	require.NoError(t, err)
	first, err := NewLocalBus(db)
	require.NoError(t, err)
	require.NoError(t, first.Publish(context.Background(), OnboardingStarted, sampleDetail(OnboardingStarted)))
	require.NoError(t, first.Close())
	require.NoError(t, db.Close())

	second := newTestBus(t, openTestDB(t, path))
	require.NoError(t, second.Publish(context.Background(), OnboardingCompleted, sampleDetail(OnboardingCompleted)))
	got, err := second.ReadAll()
	require.NoError(t, err)
	require.Len(t, got, 2, "a restart appends, it never truncates")
	assert.Equal(t, OnboardingStarted, got[0].DetailType)
	assert.Equal(t, OnboardingCompleted, got[1].DetailType)
}

func TestLocalBusRejectsInvalidDetailWritingNothing(t *testing.T) {
	bus := newTestBus(t, openTestDB(t, filepath.Join(t.TempDir(), "test.db")))
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
	got, err := bus.ReadAll()
	require.NoError(t, err)
	assert.Empty(t, got, "nothing written")
	assert.False(t, called, "no subscriber called")
}

// failingDB is a database whose writes fail, as a full disk's do.
type failingDB struct{ LocalDB }

var errDiskFull = errors.New("no space left on device")

func (failingDB) Update(func(*bolt.Tx) error) error { return errDiskFull }

func TestLocalBusWriteFailures(t *testing.T) {
	t.Run("closed bus", func(t *testing.T) {
		bus := newTestBus(t, openTestDB(t, filepath.Join(t.TempDir(), "test.db")))
		require.NoError(t, bus.Close())
		require.NoError(t, bus.Close(), "closing twice is a no-op")
		err := bus.Publish(context.Background(), OnboardingStarted, sampleDetail(OnboardingStarted))
		var we *EventWriteError
		require.ErrorAs(t, err, &we)
		require.ErrorIs(t, err, ErrBusClosed)
		assert.Equal(t, OnboardingStarted, we.DetailType)
	})
	t.Run("write fails", func(t *testing.T) {
		db := openTestDB(t, filepath.Join(t.TempDir(), "test.db"))
		bus := newTestBus(t, db)
		called := false
		bus.Subscribe(func(Envelope) { called = true })
		bus.db = failingDB{db}
		err := bus.Publish(context.Background(), OnboardingStarted, sampleDetail(OnboardingStarted))
		var we *EventWriteError
		require.ErrorAs(t, err, &we, "a write error is returned, never swallowed")
		require.ErrorIs(t, err, errDiskFull)
		require.NotErrorIs(t, err, ErrBusClosed)
		assert.False(t, called, "an event that is not on disk is not delivered")
		got, err := ReadAll(db)
		require.NoError(t, err)
		assert.Empty(t, got)
	})
	t.Run("cancelled context", func(t *testing.T) {
		bus := newTestBus(t, openTestDB(t, filepath.Join(t.TempDir(), "test.db")))
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err := bus.Publish(ctx, OnboardingStarted, sampleDetail(OnboardingStarted))
		require.ErrorIs(t, err, context.Canceled)
		got, err := bus.ReadAll()
		require.NoError(t, err)
		assert.Empty(t, got)
	})
	t.Run("bucket cannot be created", func(t *testing.T) {
		_, err := NewLocalBus(failingDB{})
		require.ErrorIs(t, err, errDiskFull)
	})
}

func TestLocalBusSubscriberMayPublish(t *testing.T) {
	bus := newTestBus(t, openTestDB(t, filepath.Join(t.TempDir(), "test.db")))
	bus.Subscribe(func(e Envelope) {
		if e.DetailType == OnboardingStarted {
			assert.NoError(t, bus.Publish(context.Background(), OnboardingCompleted, sampleDetail(OnboardingCompleted)))
		}
	})
	require.NoError(t, bus.Publish(context.Background(), OnboardingStarted, sampleDetail(OnboardingStarted)))
	got, err := bus.ReadAll()
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, OnboardingCompleted, got[1].DetailType)
}

func TestLocalBusConcurrentPublishers(t *testing.T) {
	bus, err := NewLocalBus(openTestDB(t, filepath.Join(t.TempDir(), "test.db")), WithClock(clock.NewFake(t0)))
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

	got, err := bus.ReadAll()
	require.NoError(t, err)
	require.Len(t, got, publishers*each, "every event intact")
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

func TestReadAllNamesADamagedEventWithoutItsContent(t *testing.T) {
	db := openTestDB(t, filepath.Join(t.TempDir(), "test.db"))
	bus := newTestBus(t, db)
	require.NoError(t, bus.Publish(context.Background(), OnboardingStarted, sampleDetail(OnboardingStarted)))
	require.NoError(t, db.Update(func(tx *bolt.Tx) error { return put(tx, []byte(`{"id":`+seedSecret)) }))
	_, err := ReadAll(db)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "event 2 is not an event envelope")
	assert.NotContains(t, err.Error(), seedSecret)
}

// TestMigrateJSONLMovesAnEarlierReleasesEventsOnce: the events of an
// earlier release's file are moved in its order, an unacknowledged torn
// last line is left out, and moving the same file again (a crash before
// it was renamed aside) moves nothing.
func TestMigrateJSONLMovesAnEarlierReleasesEventsOnce(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, LegacyFileName)
	env := func(id string) string {
		return `{"id":"` + id + `","source":"maasflow","detail-type":"node.onboarding.started","time":"2025-01-01T00:00:00Z","detail":{}}`
	}
	require.NoError(t, os.WriteFile(path, []byte(env("a")+"\n\n"+env("b")+"\n"+`{"id":"c","sour`), 0o600))
	db := openTestDB(t, filepath.Join(dir, "test.db"))
	n, torn, err := MigrateJSONL(path, db)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	assert.True(t, torn, "the torn last line is reported")
	again, _, err := MigrateJSONL(path, db)
	require.NoError(t, err)
	assert.Zero(t, again, "moved once")

	bus := newTestBus(t, db)
	require.NoError(t, bus.Publish(context.Background(), OnboardingStarted, sampleDetail(OnboardingStarted)))
	got, err := bus.ReadAll()
	require.NoError(t, err)
	require.Len(t, got, 3)
	assert.Equal(t, []string{"a", "b", "evt-1"}, []string{got[0].ID, got[1].ID, got[2].ID}, "the moved events come first, in order")
}

// TestMigrateJSONLRefusesADamagedFile: a whole line that is not an
// envelope refuses the file, naming the line and what to do, with nothing
// moved and no content quoted.
func TestMigrateJSONLRefusesADamagedFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, LegacyFileName)
	good := `{"id":"1","source":"maasflow","detail-type":"node.onboarding.started","time":"2025-01-01T00:00:00Z","detail":{}}`
	require.NoError(t, os.WriteFile(path, []byte(good+"\n{\"id\":"+seedSecret+"\n"+good+"\n"), 0o600))
	db := openTestDB(t, filepath.Join(dir, "test.db"))
	_, _, err := MigrateJSONL(path, db)
	var damaged *DamagedEventsError
	require.ErrorAs(t, err, &damaged)
	assert.Equal(t, 2, damaged.Line)
	assert.Contains(t, err.Error(), "restore it from a backup")
	assert.NotContains(t, err.Error(), seedSecret)
	got, err := ReadAll(db)
	require.NoError(t, err)
	assert.Empty(t, got, "nothing moved")
}

func BenchmarkLocalBusPublish(b *testing.B) {
	bus, err := NewLocalBus(openTestDB(b, filepath.Join(b.TempDir(), "test.db")))
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
