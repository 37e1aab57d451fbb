package events

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	bolt "go.etcd.io/bbolt"
)

// Bucket is the bucket of local mode's database file that holds the local
// bus's events, each under its sequence number (8 bytes, big-endian), so
// the bucket's order is the order they were published in.
var Bucket = []byte("events")

// ErrBusClosed is what Publish on a closed LocalBus wraps.
var ErrBusClosed = errors.New("local event bus is closed")

// EventWriteError is a LocalBus publish that did not reach the disk. The
// event was not delivered to subscribers; the caller's retry may publish it
// again.
type EventWriteError struct {
	DetailType string `json:"detail_type"`
	Err        error  `json:"-"`
}

func (e *EventWriteError) Error() string {
	return fmt.Sprintf("local event bus: write %s: %v", e.DetailType, e.Err)
}

func (e *EventWriteError) Unwrap() error { return e.Err }

// LocalDB is the database file the local bus keeps its events in: a write
// transaction that returns once it is on disk, and a read transaction.
// local mode's database (shared/store/boltdb) shares each write's
// transaction with the writes made beside it, so Update's function may run
// more than once; the bus's is idempotent. A *bolt.DB is one too.
type LocalDB interface {
	Update(fn func(*bolt.Tx) error) error
	View(fn func(*bolt.Tx) error) error
}

// LocalBus is the local-mode event bus: each event (an Envelope, as JSON)
// is written to its bucket of the database file and is on disk before it
// is handed to the in-process subscribers. The bucket is the record;
// subscribers are a convenience, so an event is never delivered without
// being on disk.
type LocalBus struct {
	db   LocalDB
	opts options

	// gate is held shared by each Publish until its event is on disk, and
	// exclusively by Close, which so finds no event half written.
	gate   sync.RWMutex
	closed bool // guarded by gate

	subMu   sync.RWMutex
	subs    map[uint64]func(Envelope)
	nextSub uint64
}

var _ interface {
	Publish(ctx context.Context, detailType string, detail any) error
} = (*LocalBus)(nil)

// NewLocalBus opens the bus on db, creating its bucket when missing.
func NewLocalBus(db LocalDB, opts ...Option) (*LocalBus, error) {
	if err := db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(Bucket)
		return err
	}); err != nil {
		return nil, fmt.Errorf("local event bus: create its bucket: %w", err)
	}
	return &LocalBus{db: db, opts: buildOptions(opts), subs: map[uint64]func(Envelope){}}, nil
}

// Publish validates the detail against its schema (an invalid detail is an
// error and nothing is written), writes the event and waits until it is on
// disk, then calls every subscriber in the publishing goroutine. A write
// that fails is an *EventWriteError, with nothing written. Publishing the
// same detail twice writes two events with different ids: consumers
// de-duplicate on onboarding_id, attempt and type.
func (b *LocalBus) Publish(ctx context.Context, detailType string, detail any) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("publish %s: %w", detailType, err)
	}
	raw, err := EncodeDetail(detailType, detail)
	if err != nil {
		return err
	}
	env := Envelope{
		ID:         b.opts.newID(),
		Source:     Source,
		DetailType: detailType,
		Time:       b.opts.clock.Now().UTC(),
		Detail:     raw,
	}
	value, err := json.Marshal(env)
	if err != nil {
		return fmt.Errorf("publish %s: marshal envelope: %w", detailType, err)
	}
	if err := b.append(value); err != nil {
		return &EventWriteError{DetailType: detailType, Err: err}
	}

	b.subMu.RLock()
	subs := make([]func(Envelope), 0, len(b.subs))
	for _, fn := range b.subs {
		subs = append(subs, fn)
	}
	b.subMu.RUnlock()
	// No lock is held here, so a subscriber may publish in turn. Across
	// concurrent publishers subscribers may see events in a different
	// order than the bucket holds them.
	for _, fn := range subs {
		fn(env)
	}
	return nil
}

// append writes value under the bucket's next sequence number.
func (b *LocalBus) append(value []byte) error {
	b.gate.RLock()
	defer b.gate.RUnlock()
	if b.closed {
		return ErrBusClosed
	}
	return b.db.Update(func(tx *bolt.Tx) error { return put(tx, value) })
}

// put writes value under the bucket's next sequence number; run again in a
// new transaction, it takes that transaction's next number.
func put(tx *bolt.Tx, value []byte) error {
	bk := tx.Bucket(Bucket)
	if bk == nil {
		return fmt.Errorf("the bucket %s is missing", Bucket)
	}
	seq, err := bk.NextSequence()
	if err != nil {
		return err
	}
	return bk.Put(binary.BigEndian.AppendUint64(nil, seq), value)
}

// Subscribe registers fn for every event published after it returns. fn runs
// in the publisher's goroutine after the event is on disk: it must be quick
// and must not block on the publisher. cancel removes it and may be called
// more than once.
func (b *LocalBus) Subscribe(fn func(Envelope)) (cancel func()) {
	b.subMu.Lock()
	id := b.nextSub
	b.nextSub++
	b.subs[id] = fn
	b.subMu.Unlock()
	return func() {
		b.subMu.Lock()
		delete(b.subs, id)
		b.subMu.Unlock()
	}
}

// Close stops the bus once the publishes under way are on disk; later
// Publish calls fail with ErrBusClosed inside an *EventWriteError. The
// database is its owner's to close. Closing twice is a no-op.
func (b *LocalBus) Close() error {
	b.gate.Lock()
	defer b.gate.Unlock()
	b.closed = true
	return nil
}

// ReadAll reads every event the bus holds, in the order they were
// published.
func (b *LocalBus) ReadAll() ([]Envelope, error) { return ReadAll(b.db) }

// ReadAll reads every event of the local bus in db, in the order they were
// published. An event that is not an envelope is an error naming its
// sequence number (not its content).
func ReadAll(db LocalDB) ([]Envelope, error) {
	var out []Envelope
	err := db.View(func(tx *bolt.Tx) error {
		bk := tx.Bucket(Bucket)
		if bk == nil {
			return nil
		}
		return bk.ForEach(func(k, v []byte) error {
			var env Envelope
			if err := json.Unmarshal(v, &env); err != nil {
				return fmt.Errorf("read events: event %d is not an event envelope", binary.BigEndian.Uint64(k))
			}
			out = append(out, env)
			return nil
		})
	})
	return out, err
}
