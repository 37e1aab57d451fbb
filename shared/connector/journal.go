package connector

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/maasflow/maasflow/shared/store/boltdb"
)

// JournalFile is the connector's journal in its state directory: one bbolt
// file of its own (the connector runs at the site, away from the stack's
// database).
const JournalFile = "connector.db"

// legacyJournalFile is the JSON-lines journal earlier releases kept; it is
// moved into JournalFile once and renamed aside with migratedSuffix.
const (
	legacyJournalFile = "journal.jsonl"
	migratedSuffix    = ".migrated"
)

// mutationsBucket holds one entry a mutation, under its request id.
var mutationsBucket = []byte("mutations")

// Journal remembers which mutations a connector began and the reply of
// each it finished, in a database file that survives a restart, so a
// request the transport delivers again (SQS delivers at least once; a
// connector that crashed leaves its message to be received again) is never
// sent to MAAS a second time. Entries older than the retention are dropped
// when the journal opens and every compactEvery writes: by then the
// request's queue has long expired it.
type Journal struct {
	db        *boltdb.DB
	path      string
	retention time.Duration
	now       func() time.Time

	mu sync.Mutex
	// running are the mutations this process began and has not finished:
	// an entry begun and not done that is not running was interrupted by
	// an earlier process.
	running map[string]bool
	// written counts writes since the last pruning.
	written int

	closeOnce sync.Once
	closeErr  error
}

// compactEvery is how many writes trigger dropping the expired entries, so
// the file of a connector running for months stays small.
var compactEvery = 10000

// JournalRetention is how long a journal keeps an entry: far longer than
// a request may wait in its queue (15 minutes) plus its visibility timeout.
const JournalRetention = 2 * time.Hour

type journalEntry struct {
	ID    string    `json:"id"`
	At    time.Time `json:"at"`
	Done  bool      `json:"done,omitempty"`
	Reply *Response `json:"reply,omitempty"`
}

// Begin outcomes.
const (
	// BeginNew: the mutation was recorded as begun; run it.
	BeginNew = iota
	// BeginRunning: another worker of this process is running it now.
	BeginRunning
	// BeginDone: it ran; the recorded reply is returned.
	BeginDone
	// BeginInterrupted: a previous process began it and stopped before
	// recording the reply; what MAAS did is unknown.
	BeginInterrupted
)

// ConnectorJournalDamagedError is a journal file that does not hold together. The
// connector does not start on it: running without the journal could send
// a mutation to MAAS twice.
type ConnectorJournalDamagedError struct {
	Path   string
	Reason string
}

func (e *ConnectorJournalDamagedError) Error() string {
	return fmt.Sprintf("connector journal %s is damaged (%s): restore it from a backup; or, once no request of this site "+
		"is left in its queue (they expire after 15 minutes), move it aside to start with an empty journal", e.Path, e.Reason)
}

// OpenJournal opens (or creates) the journal file in dir, moving an
// earlier release's JSON-lines journal into it first. A damaged file is a
// *ConnectorJournalDamagedError; one another connector holds is refused.
func OpenJournal(dir string, now func() time.Time) (*Journal, error) {
	if now == nil {
		now = time.Now
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	path := filepath.Join(dir, JournalFile)
	db, err := boltdb.Open(path, boltdb.Options{Check: true})
	if err != nil {
		var damaged *boltdb.DamagedError
		var inUse *boltdb.InUseError
		switch {
		case errors.As(err, &damaged):
			return nil, &ConnectorJournalDamagedError{Path: path, Reason: damaged.Reason}
		case errors.As(err, &inUse):
			return nil, fmt.Errorf("connector journal %s is in use by another connector: stop it, or pass another --state-dir", path)
		}
		return nil, fmt.Errorf("journal: %w", err)
	}
	j := &Journal{db: db, path: path, retention: JournalRetention, now: now, running: map[string]bool{}}
	if err := j.migrate(filepath.Join(dir, legacyJournalFile)); err != nil {
		_ = db.Close()
		return nil, err
	}
	if err := j.prune(); err != nil {
		_ = db.Close()
		return nil, err
	}
	return j, nil
}

// Path is the journal's file.
func (j *Journal) Path() string { return j.path }

// entry reads id's entry; nil when there is none.
func entry(tx *bolt.Tx, id string) (*journalEntry, error) {
	v := tx.Bucket(mutationsBucket).Get([]byte(id))
	if v == nil {
		return nil, nil //nolint:nilnil // no entry
	}
	var e journalEntry
	if err := json.Unmarshal(v, &e); err != nil {
		return nil, fmt.Errorf("journal: the entry of %s is unreadable", id)
	}
	return &e, nil
}

func putEntry(tx *bolt.Tx, e *journalEntry) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	bk, err := tx.CreateBucketIfNotExists(mutationsBucket)
	if err != nil {
		return err
	}
	return bk.Put([]byte(e.ID), b)
}

// Begin records that the mutation id is about to be sent to MAAS, durably,
// before it is sent. See the Begin outcomes.
func (j *Journal) Begin(id string) (int, Response, error) {
	j.mu.Lock()
	if j.running[id] {
		j.mu.Unlock()
		return BeginRunning, Response{}, nil
	}
	j.running[id] = true
	j.mu.Unlock()

	state, reply := BeginNew, Response{}
	err := j.db.Update(func(tx *bolt.Tx) error {
		if _, err := tx.CreateBucketIfNotExists(mutationsBucket); err != nil {
			return err
		}
		e, err := entry(tx, id)
		if err != nil {
			return err
		}
		switch {
		case e == nil:
			state = BeginNew
			return putEntry(tx, &journalEntry{ID: id, At: j.now()})
		case e.Done && e.Reply != nil:
			state, reply = BeginDone, *e.Reply
		default:
			state = BeginInterrupted
		}
		return nil
	})
	if err != nil || state != BeginNew {
		j.mu.Lock()
		delete(j.running, id)
		j.mu.Unlock()
	}
	if err != nil {
		return 0, Response{}, fmt.Errorf("journal: %w", err)
	}
	if state == BeginNew {
		j.wrote()
	}
	return state, reply, nil
}

// Finish records the reply of a mutation begun with Begin.
func (j *Journal) Finish(id string, reply Response) error {
	err := j.db.Update(func(tx *bolt.Tx) error {
		return putEntry(tx, &journalEntry{ID: id, At: j.now(), Done: true, Reply: &reply})
	})
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	j.mu.Lock()
	delete(j.running, id)
	j.mu.Unlock()
	j.wrote()
	return nil
}

// wrote counts a write and drops the expired entries every compactEvery.
func (j *Journal) wrote() {
	j.mu.Lock()
	j.written++
	due := j.written >= compactEvery
	if due {
		j.written = 0
	}
	j.mu.Unlock()
	if due {
		_ = j.prune() // a failed pruning is tried again compactEvery writes on
	}
}

// prune drops the entries older than the retention.
func (j *Journal) prune() error {
	cutoff := j.now().Add(-j.retention)
	err := j.db.Update(func(tx *bolt.Tx) error {
		bk, err := tx.CreateBucketIfNotExists(mutationsBucket)
		if err != nil {
			return err
		}
		var expired [][]byte
		err = bk.ForEach(func(k, v []byte) error {
			var e journalEntry
			if json.Unmarshal(v, &e) == nil && e.At.Before(cutoff) {
				expired = append(expired, k)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, k := range expired {
			if err := bk.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	return nil
}

// migrate moves the entries of an earlier release's JSON-lines journal at
// path into the file in one transaction, then renames it aside. Its last
// line may be cut short by a crash (that release wrote a line, then
// synced): it is left out, and the begin before it still counts. Any other
// line that is not an entry refuses the start. An entry already in the
// file is kept (a crash came between the move and the rename).
func (j *Journal) migrate(path string) error {
	f, err := os.Open(path) //nolint:gosec // G304: the operator's state directory
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	defer func() { _ = f.Close() }() // read-only
	entries := map[string]*journalEntry{}
	r := bufio.NewReader(f)
	for line := 1; ; line++ {
		b, rerr := r.ReadBytes('\n')
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			return fmt.Errorf("journal: %w", rerr)
		}
		if errors.Is(rerr, io.EOF) {
			break // a last line without its newline was never synced
		}
		var e journalEntry
		if json.Unmarshal(b, &e) != nil || e.ID == "" {
			return &ConnectorJournalDamagedError{Path: path, Reason: fmt.Sprintf("line %d is not a journal entry", line)}
		}
		if prev := entries[e.ID]; prev != nil && prev.Done && !e.Done {
			continue
		}
		entries[e.ID] = &e
	}
	err = j.db.Update(func(tx *bolt.Tx) error {
		if _, err := tx.CreateBucketIfNotExists(mutationsBucket); err != nil {
			return err
		}
		for _, e := range entries {
			if cur, err := entry(tx, e.ID); err != nil || cur != nil {
				continue
			}
			if err := putEntry(tx, e); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("journal: move %s into %s: %w", path, j.path, err)
	}
	if err := os.Rename(path, path+migratedSuffix); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	return nil
}

// Close closes the journal file; closing twice is a no-op.
func (j *Journal) Close() error {
	j.closeOnce.Do(func() { j.closeErr = j.db.Close() })
	return j.closeErr
}
