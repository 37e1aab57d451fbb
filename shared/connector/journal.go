package connector

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Journal remembers which mutations a connector began and the reply of
// each it finished, in a file that survives a restart, so a request the
// transport delivers again (SQS delivers at least once; a connector that
// crashed leaves its message to be received again) is never sent to MAAS
// a second time. Entries older than the retention are dropped when the
// journal opens: by then the request's queue has long expired it.
type Journal struct {
	mu        sync.Mutex
	path      string
	file      *os.File
	entries   map[string]*journalEntry
	retention time.Duration
	now       func() time.Time
	// appended counts lines written since the last compaction.
	appended int
}

// compactEvery is how many appended lines trigger a compaction, so the
// file of a connector running for months stays small.
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

// OpenJournal opens (or creates) the journal file in dir.
func OpenJournal(dir string, now func() time.Time) (*Journal, error) {
	if now == nil {
		now = time.Now
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	j := &Journal{path: filepath.Join(dir, "journal.jsonl"), entries: map[string]*journalEntry{}, retention: JournalRetention, now: now}
	if err := j.load(); err != nil {
		return nil, err
	}
	if err := j.compact(); err != nil {
		return nil, err
	}
	// Entries from the file that were never finished were interrupted.
	for _, e := range j.entries {
		if !e.Done {
			e.Reply = nil
		}
	}
	return j, nil
}

func (j *Journal) load() error {
	f, err := os.Open(j.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 8<<20)
	for sc.Scan() {
		var e journalEntry
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.ID == "" {
			// A line cut short by a crash: the begin before it still counts.
			continue
		}
		prev := j.entries[e.ID]
		if prev != nil && prev.Done && !e.Done {
			continue
		}
		j.entries[e.ID] = &e
	}
	return sc.Err()
}

// compact rewrites the file with the entries still within the retention;
// entries loaded as begun but not done become interrupted for good.
func (j *Journal) compact() error {
	cutoff := j.now().Add(-j.retention)
	tmp := j.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600) //nolint:gosec // G304: the journal in the operator's state directory
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	w := bufio.NewWriter(f)
	for id, e := range j.entries {
		if e.At.Before(cutoff) {
			delete(j.entries, id)
			continue
		}
		stored := *e
		if stored.Reply == runningMarker {
			stored.Reply = nil // begun here and still running: a begin line
		}
		b, err := json.Marshal(&stored)
		if err != nil {
			_ = f.Close()
			return fmt.Errorf("journal: %w", err)
		}
		_, _ = w.Write(append(b, '\n'))
	}
	if err := w.Flush(); err != nil {
		_ = f.Close()
		return fmt.Errorf("journal: %w", err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("journal: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if err := os.Rename(tmp, j.path); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if j.file != nil {
		_ = j.file.Close()
	}
	j.file, err = os.OpenFile(j.path, os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	j.appended = 0
	return nil
}

// running marks entries begun by this process; an entry begun and not
// done that is not running was interrupted by an earlier process.
var runningMarker = &Response{}

// Begin records that the mutation id is about to be sent to MAAS, durably,
// before it is sent. See the Begin outcomes.
func (j *Journal) Begin(id string) (int, Response, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if e, ok := j.entries[id]; ok {
		switch {
		case e.Done && e.Reply != nil:
			return BeginDone, *e.Reply, nil
		case e.Reply == runningMarker:
			return BeginRunning, Response{}, nil
		default:
			return BeginInterrupted, Response{}, nil
		}
	}
	// In the map before the line is written: a compaction the append
	// triggers must keep this begin.
	e := &journalEntry{ID: id, At: j.now(), Reply: runningMarker}
	j.entries[id] = e
	if err := j.append(&journalEntry{ID: id, At: e.At}); err != nil {
		delete(j.entries, id)
		return 0, Response{}, err
	}
	return BeginNew, Response{}, nil
}

// Finish records the reply of a mutation begun with Begin.
func (j *Journal) Finish(id string, reply Response) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	e := &journalEntry{ID: id, At: j.now(), Done: true, Reply: &reply}
	prev := j.entries[id]
	j.entries[id] = e
	if err := j.append(e); err != nil {
		j.entries[id] = prev
		return err
	}
	return nil
}

func (j *Journal) append(e *journalEntry) error {
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if _, err := j.file.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	// The begin must be on disk before MAAS sees the request.
	if err := j.file.Sync(); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if j.appended++; j.appended >= compactEvery {
		return j.compact()
	}
	return nil
}

// Close closes the journal file.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.file == nil {
		return nil
	}
	err := j.file.Close()
	j.file = nil
	return err
}
