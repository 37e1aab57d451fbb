package boltdb

import (
	"fmt"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// maxGroup bounds how many writes one transaction gathers, so that one
// commit (and so the wait of the writers in it) stays short.
const maxGroup = 256

// groupCommit gathers the writes that arrive while a transaction commits
// into the next transaction, so concurrent writers share one commit and
// one fsync instead of queueing for one each (a commit's cost is mostly
// its fdatasyncs, whatever it holds). Unlike bbolt's DB.Batch it never
// waits for company: a write that finds no commit under way commits at
// once, alone, so a lone writer's latency stays one commit; only writes
// that would have queued behind a commit anyway are gathered.
//
// The first writer to find no commit under way leads: it commits what is
// pending, each write is handed its outcome, and the lead passes to the
// oldest writer still pending, if any. A write is acknowledged only once
// the transaction that holds it is on disk.
type groupCommit struct {
	mu      sync.Mutex
	pending []*call
	leading bool
}

// call is one write waiting for its transaction.
type call struct {
	fn   func(*bolt.Tx) error
	done chan outcome // room for each message a call gets: the lead, then its result
}

// outcome is what a waiting write is told: its transaction's result, or
// that it now leads and commits the pending writes itself.
type outcome struct {
	err  error
	lead bool
}

// run runs fn in a write transaction shared with the writes pending beside
// it and returns once that transaction is on disk, with fn's error or the
// commit's. fn may run more than once (when a write beside it fails, the
// transaction is rolled back and the others run again without it): it
// must read what it needs from the transaction and overwrite, never
// accumulate, what it reports, as the store's writes do.
func (g *groupCommit) run(db *DB, fn func(*bolt.Tx) error) error {
	c := &call{fn: fn, done: make(chan outcome, 2)}
	g.mu.Lock()
	g.pending = append(g.pending, c)
	if g.leading {
		g.mu.Unlock()
		if o := <-c.done; !o.lead {
			return o.err
		}
		g.mu.Lock()
	}
	g.leading = true
	// The leader is always the oldest pending write (pending was empty,
	// or the lead was passed to pending[0]), so it is in the group.
	n := min(len(g.pending), maxGroup)
	group := g.pending[:n:n]
	g.pending = g.pending[n:]
	g.mu.Unlock()

	commitGroup(db, group)

	g.mu.Lock()
	if len(g.pending) > 0 {
		g.pending[0].done <- outcome{lead: true}
	} else {
		g.leading = false
		g.pending = nil
	}
	g.mu.Unlock()
	return (<-c.done).err
}

// commitGroup commits group in one transaction and answers every write in
// it. When one write's function fails, the transaction is rolled back, that
// write runs again alone (so its outcome is its own) and the others commit
// again without it: one write's failure is never another's.
func commitGroup(db *DB, group []*call) {
	for len(group) > 0 {
		failed := -1
		err := db.bolt.Update(func(tx *bolt.Tx) error {
			for i, c := range group {
				if err := safely(c.fn, tx); err != nil {
					failed = i
					return err
				}
			}
			return db.stampTx(tx)
		})
		if failed < 0 {
			for _, c := range group {
				c.done <- outcome{err: err}
			}
			return
		}
		alone := group[failed]
		alone.done <- outcome{err: db.bolt.Update(func(tx *bolt.Tx) error {
			if err := safely(alone.fn, tx); err != nil {
				return err
			}
			return db.stampTx(tx)
		})}
		group = append(group[:failed:failed], group[failed+1:]...)
	}
}

// safely runs fn, turning a panic into its error so that the writes
// gathered beside it are still answered.
func safely(fn func(*bolt.Tx) error, tx *bolt.Tx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("write panicked: %v", r)
		}
	}()
	return fn(tx)
}

// highWaterKey is the meta key of the latest time a write transaction was
// stamped with (StampWrites).
var highWaterKey = []byte("high_water")

// StampWrites has every write transaction from now on also record now()
// in the file, so that HighWater answers at the next start without reading
// the records. Each record's times were taken from the same clock before
// its transaction committed, so the stamp is never older than any of them.
func (db *DB) StampWrites(now func() time.Time) { db.stamp.Store(&now) }

// stampTx records the stamp clock's time in tx, when there is one.
func (db *DB) stampTx(tx *bolt.Tx) error {
	now := db.stamp.Load()
	if now == nil {
		return nil
	}
	return tx.Bucket(metaBucket).Put(highWaterKey, (*now)().UTC().AppendFormat(nil, time.RFC3339Nano))
}

// HighWater is the latest time a write transaction was stamped with; ok is
// false when none was (a file written without StampWrites, or migrated).
func (db *DB) HighWater() (hw time.Time, ok bool, err error) {
	err = db.bolt.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(metaBucket).Get(highWaterKey)
		if v == nil {
			return nil
		}
		if hw, err = time.Parse(time.RFC3339Nano, string(v)); err != nil {
			return &DamagedError{Path: db.bolt.Path(), Reason: "the high-water time is unreadable"}
		}
		ok = true
		return nil
	})
	return hw, ok, err
}

// Update runs fn in a write transaction shared with the writes made beside
// it and returns once that is on disk, for the other local-mode state kept
// in buckets of its own (the event bus). fn may run more than once and
// must be idempotent; it must not touch the tables' buckets.
func (db *DB) Update(fn func(*bolt.Tx) error) error { return db.write(fn) }

// View runs fn in a read transaction.
func (db *DB) View(fn func(*bolt.Tx) error) error { return db.bolt.View(fn) }
