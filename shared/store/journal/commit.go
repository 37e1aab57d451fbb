package journal

import (
	"fmt"
	"io"
	"slices"
	"sync"
)

// How a write reaches the file without making writes of other items wait:
//
//  1. It locks the items it touches (itemLocks), reads them, writes, reads
//     them back and encodes the record — all outside any lock another item
//     needs.
//  2. It queues the record (commit). The write that opens a batch leads
//     it: once the batch before it is on disk, it takes every record
//     queued in its batch meanwhile, numbers them in queue order, and
//     writes them in one write(2) followed by one fsync, on its own
//     goroutine. While it does, the next batch fills up under its own
//     leader; a thousand concurrent writes share a handful of fsyncs
//     instead of queueing for one each, and a write alone on the journal
//     goes to the file without handing over to another goroutine (under
//     load a hand-over waits for a core).
//  3. The batch's outcome wakes all its writes at once. A batch that fails
//     fails every write in it and is cut from the file; each write then
//     undoes itself in memory, under its own item locks.
//
// Replay applies the file in order, so each item's records must be in the
// order its writes took effect. They are: a write holds its items' locks
// until its record is durable, so the next write of the same item queues
// its record after it.

// itemLocks orders the writes of each item: a lock per item held, made
// when a write needs it and dropped when no write holds or waits for it.
// Exact locks rather than a fixed set of stripes: a write holds its items
// until its record is durable (an fsync away), so two unrelated items
// sharing a stripe would wait that long for nothing, and with a thousand
// executions writing at once they would share often.
type itemLocks struct {
	mu   sync.Mutex
	byID map[string]*itemLock
}

type itemLock struct {
	sync.Mutex
	refs int // writes holding or waiting for it; guarded by itemLocks.mu
}

// lock locks the items ids names and returns their unlock. Items are
// locked in ascending order, so two transactions touching the same items
// cannot deadlock.
func (l *itemLocks) lock(ids []string) (unlock func()) {
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	locks := make([]*itemLock, len(ids))
	l.mu.Lock()
	if l.byID == nil {
		l.byID = map[string]*itemLock{}
	}
	for i, id := range ids {
		il := l.byID[id]
		if il == nil {
			il = &itemLock{}
			l.byID[id] = il
		}
		il.refs++
		locks[i] = il
	}
	l.mu.Unlock()
	for _, il := range locks {
		il.Lock()
	}
	return func() {
		for _, il := range slices.Backward(locks) {
			il.Unlock()
		}
		l.mu.Lock()
		for i, il := range locks {
			if il.refs--; il.refs == 0 {
				delete(l.byID, ids[i])
			}
		}
		l.mu.Unlock()
	}
}

// pending is one write's record, waiting for its batch to be written.
type pending struct {
	// body is the record after its number: `"t":…}` or `"tx":[…]}` and the
	// newline. The batch's leader prefixes {"n":seq, as it puts records in order.
	body []byte
	ids  []string // identity of each touched item
	live []bool   // whether each exists after the write
}

// batch is the records one leader writes at once, and their outcome.
type batch struct {
	recs []pending
	turn chan struct{} // closed when the batch before it is on disk (or failed)
	done chan struct{} // closed when err is set
	err  error
}

// commit queues rec and waits until the batch holding it is on disk, or
// has failed. It waits whatever the caller's context says: the write is
// applied in memory already and must end recorded or undone.
func (j *Journal) commit(rec pending) error {
	j.queueMu.Lock()
	b := j.open
	if b != nil {
		b.recs = append(b.recs, rec)
		j.queueMu.Unlock()
		<-b.done
		return b.err
	}
	// This write opens a batch and leads it.
	b = &batch{recs: []pending{rec}, turn: make(chan struct{}), done: make(chan struct{})}
	j.open = b
	first := !j.writing
	j.writing = true
	j.queueMu.Unlock()
	if !first {
		<-b.turn
	}
	j.queueMu.Lock()
	j.open = nil // what comes now goes into the next batch
	j.queueMu.Unlock()

	b.err = j.writeBatch(b.recs)
	close(b.done)

	j.queueMu.Lock()
	if next := j.open; next != nil {
		close(next.turn) // its leader writes next
	} else {
		j.writing = false
	}
	j.queueMu.Unlock()
	return b.err
}

// writeBatch numbers the records, appends them in one write and syncs the
// file. On failure the file is cut back to its last whole record and no
// number is used, so the next batch follows without a gap.
func (j *Journal) writeBatch(recs []pending) error {
	j.fileMu.Lock()
	defer j.fileMu.Unlock()
	if err := j.brokenErr(); err != nil {
		return err
	}
	buf, seq := j.buf[:0], j.seq
	for _, r := range recs {
		seq++
		buf = appendRecordNumber(buf, seq)
		buf = append(buf, r.body...)
	}
	j.buf = buf
	n, err := j.f.Write(buf)
	if err == nil && n != len(buf) {
		err = io.ErrShortWrite
	}
	if err == nil {
		if err = syncData(j.f); err != nil {
			err = fmt.Errorf("sync: %w", err)
		}
	}
	if err != nil {
		if terr := j.f.Truncate(j.size); terr != nil {
			j.setBroken(fmt.Errorf("cut a failed record from the file: %w", terr))
		}
		return err
	}
	j.size += int64(n)
	j.seq = seq
	j.lines += len(recs)
	for _, r := range recs {
		for i, id := range r.ids {
			j.mark(id, r.live[i])
		}
	}
	if j.tooLong() {
		j.bloated.Store(true)
	}
	return nil
}
