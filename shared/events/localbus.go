package events

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// LocalFileName is the conventional name of the local bus file inside the
// local-mode data directory.
const LocalFileName = "events.jsonl"

// ErrBusClosed is what Publish on a closed LocalBus wraps.
var ErrBusClosed = errors.New("local event bus is closed")

// EventWriteError is a LocalBus append that did not reach the disk. The
// event was not delivered to subscribers; the caller's retry may publish it
// again.
type EventWriteError struct {
	Path       string `json:"path"`
	DetailType string `json:"detail_type"`
	Err        error  `json:"-"`
}

func (e *EventWriteError) Error() string {
	return fmt.Sprintf("local event bus %s: append %s: %v", e.Path, e.DetailType, e.Err)
}

func (e *EventWriteError) Unwrap() error { return e.Err }

// LocalBus is the local-mode event bus: each event is appended as one JSON
// line (an Envelope) to a 0600 file and fsynced, then handed to the
// in-process subscribers. The file is the record; subscribers are a
// convenience, so an event is never delivered without being on disk.
//
// One goroutine writes the file: it takes every event queued while it was
// busy, appends them in one write and fsyncs once (a group commit), then
// wakes their publishers. Publishers never wait on each other's fsync, and
// a thousand executions publishing at once share a few fsyncs instead of
// queueing for one each.
type LocalBus struct {
	path string
	opts options

	// gate is held shared by each Publish until its event is on disk, and
	// exclusively by Close, which so finds no event half written.
	gate   sync.RWMutex
	closed bool // guarded by gate

	// The queue: publishers append their line to open and wake the writer,
	// which takes the whole batch.
	queueMu sync.Mutex
	open    *eventBatch
	wake    chan struct{}
	stop    chan struct{}
	stopped chan struct{}

	f   eventFile // written by the writer goroutine only; closed after it stopped
	buf []byte    // the batch being written, reused

	subMu   sync.RWMutex
	subs    map[uint64]func(Envelope)
	nextSub uint64
}

var _ interface {
	Publish(ctx context.Context, detailType string, detail any) error
} = (*LocalBus)(nil)

// NewLocalBus opens (creating it and its directory when needed) the event
// file at path for appending. The file is made 0600 even if it existed with
// wider permissions: events name hosts and sites of the fleet.
func NewLocalBus(path string, opts ...Option) (*LocalBus, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("local event bus: create directory of %s: %w", path, err)
	}
	o := buildOptions(opts)
	if err := repairTail(path, o.log); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600) //nolint:gosec // G304: the path is the operator's data directory, never a request value
	if err != nil {
		return nil, fmt.Errorf("local event bus: open %s: %w", path, err)
	}
	if err := f.Chmod(0o600); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("local event bus: chmod %s: %w", path, err)
	}
	b := &LocalBus{path: path, opts: o, f: f, subs: map[uint64]func(Envelope){},
		wake: make(chan struct{}, 1), stop: make(chan struct{}), stopped: make(chan struct{})}
	go b.writeBatches()
	return b, nil
}

// tailWindow is how much of the end of the event file NewLocalBus reads to
// find its last whole line: far more than one envelope.
const tailWindow = 1 << 20

// DamagedEventsError is an event file whose last whole line is not an
// envelope: something other than a torn append overwrote it, and appending
// after it would bury the damage.
type DamagedEventsError struct{ Path string }

func (e *DamagedEventsError) Error() string {
	return fmt.Sprintf("local event bus: the last event of %s is not an event envelope; the file is damaged: restore it from a backup or move it aside", e.Path)
}

// repairTail checks the end of an existing event file. A last line without
// its newline is an append the machine lost half of (Publish fsyncs before
// it returns, so no delivered event ends that way): it is moved to a side
// file and cut off, loudly. A last whole line that is not an envelope is a
// *DamagedEventsError. The rest of the file is not read at start-up; it is
// only ever appended to.
func repairTail(path string, log *slog.Logger) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0) //nolint:gosec // G304: the path is the operator's data directory, never a request value
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("local event bus: open %s: %w", path, err)
	}
	defer func() { _ = f.Close() }()
	info, err := f.Stat()
	if err != nil {
		return fmt.Errorf("local event bus: stat %s: %w", path, err)
	}
	size := info.Size()
	if size == 0 {
		return nil
	}
	n := min(size, tailWindow)
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, size-n); err != nil {
		return fmt.Errorf("local event bus: read %s: %w", path, err)
	}
	keep := size
	if buf[n-1] != '\n' {
		cut := bytes.LastIndexByte(buf, '\n')
		if cut < 0 && n < size {
			return &DamagedEventsError{Path: path}
		}
		keep = size - n + int64(cut) + 1
		torn := fmt.Sprintf("%s.torn-%s", path, time.Now().UTC().Format("20060102T150405Z"))
		if err := os.WriteFile(torn, buf[cut+1:], 0o600); err != nil {
			return fmt.Errorf("local event bus: %s ends in a torn event and it could not be set aside: %w", path, err)
		}
		if err := f.Truncate(keep); err != nil {
			return fmt.Errorf("local event bus: cut the torn event of %s: %w", path, err)
		}
		log.Error("event file ended in a torn event, an append the machine lost half of; cut it off",
			"path", path, "bytes_dropped", size-keep, "torn_copy", torn)
		buf = buf[:cut+1]
	}
	lines := bytes.Split(bytes.TrimSuffix(buf, []byte("\n")), []byte("\n"))
	if last := lines[len(lines)-1]; keep > 0 && len(bytes.TrimSpace(last)) > 0 {
		var env Envelope
		if err := json.Unmarshal(last, &env); err != nil || env.ID == "" {
			return &DamagedEventsError{Path: path}
		}
	}
	return nil
}

// Path is the event file.
func (b *LocalBus) Path() string { return b.path }

// Publish validates the detail against its schema (an invalid detail is an
// error and nothing is written), appends the event and fsyncs, then calls
// every subscriber in the publishing goroutine. A write or sync failure is
// an *EventWriteError; the partial line, if any, is cut off so the file
// stays readable. Publishing the same detail twice writes two events with
// different ids: consumers de-duplicate on onboarding_id, attempt and type.
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
	line, err := json.Marshal(env)
	if err != nil {
		return fmt.Errorf("publish %s: marshal envelope: %w", detailType, err)
	}
	line = append(line, '\n')
	if err := b.append(line); err != nil {
		return &EventWriteError{Path: b.path, DetailType: detailType, Err: err}
	}

	b.subMu.RLock()
	subs := make([]func(Envelope), 0, len(b.subs))
	for _, fn := range b.subs {
		subs = append(subs, fn)
	}
	b.subMu.RUnlock()
	// No lock is held here, so a subscriber may publish in turn. Across
	// concurrent publishers subscribers may see events in a different
	// order than the file holds them.
	for _, fn := range subs {
		fn(env)
	}
	return nil
}

// eventFile is what the bus needs of its open file; tests put a failing
// disk in its place.
type eventFile interface {
	io.Writer
	Stat() (os.FileInfo, error)
	Truncate(size int64) error
	Sync() error
	Close() error
}

// eventBatch is the events the writer takes at once, and their outcome.
type eventBatch struct {
	lines [][]byte
	done  chan struct{} // closed when err is set
	err   error
}

// append queues line and waits until the batch holding it is on disk, or
// has failed.
func (b *LocalBus) append(line []byte) error {
	b.gate.RLock()
	defer b.gate.RUnlock()
	if b.closed {
		return ErrBusClosed
	}
	b.queueMu.Lock()
	batch := b.open
	if batch == nil {
		batch = &eventBatch{done: make(chan struct{})}
		b.open = batch
	}
	batch.lines = append(batch.lines, line)
	b.queueMu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default: // the writer has been woken already and will take this batch
	}
	<-batch.done
	return batch.err
}

// writeBatches is the writer goroutine: it writes each batch queued until
// Close stops it.
func (b *LocalBus) writeBatches() {
	defer close(b.stopped)
	for {
		select {
		case <-b.wake:
		case <-b.stop:
			return
		}
		b.queueMu.Lock()
		batch := b.open
		b.open = nil
		b.queueMu.Unlock()
		if batch != nil {
			batch.err = b.writeBatch(batch.lines)
			close(batch.done)
		}
	}
}

// writeBatch appends the lines in one write and syncs the file. A failed
// write is cut off, so the next event starts on a fresh line; every event
// of the batch fails with it.
func (b *LocalBus) writeBatch(lines [][]byte) error {
	info, err := b.f.Stat()
	if err != nil {
		return fmt.Errorf("stat: %w", err)
	}
	b.buf = b.buf[:0]
	for _, l := range lines {
		b.buf = append(b.buf, l...)
	}
	if _, err := b.f.Write(b.buf); err != nil {
		_ = b.f.Truncate(info.Size())
		return fmt.Errorf("write: %w", err)
	}
	if err := b.f.Sync(); err != nil {
		return fmt.Errorf("sync: %w", err)
	}
	return nil
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

// Close closes the file; later Publish calls fail with ErrBusClosed inside
// an *EventWriteError. Closing twice is a no-op.
func (b *LocalBus) Close() error {
	b.gate.Lock()
	defer b.gate.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	close(b.stop) // no event is queued: every publisher holds the gate until its batch is written
	<-b.stopped
	if err := b.f.Close(); err != nil {
		return fmt.Errorf("local event bus: close %s: %w", b.path, err)
	}
	return nil
}

// ReadAll reads every event of a LocalBus file, in file order. A line that is
// not an envelope is an error naming its line number (not its content).
func ReadAll(path string) ([]Envelope, error) {
	f, err := os.Open(path) //nolint:gosec // G304: the path is the operator's data directory, never a request value
	if err != nil {
		return nil, fmt.Errorf("read events: %w", err)
	}
	defer func() { _ = f.Close() }() // read-only: nothing to flush

	var out []Envelope
	r := bufio.NewReader(f)
	for n := 1; ; n++ {
		line, err := r.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var env Envelope
			if jerr := json.Unmarshal(line, &env); jerr != nil {
				return nil, fmt.Errorf("read events %s: line %d is not an event envelope", path, n)
			}
			out = append(out, env)
		}
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read events %s: %w", path, err)
		}
	}
}
