// Package journal makes an in-memory DynamoDB survive a restart of local
// mode: it records the outcome of every write in a JSON-lines file in the
// data directory and replays that file at start-up.
package journal

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// File is the journal's name inside the data directory.
const File = "dynamodb.jsonl"

// compactSlack is how many superseded lines the journal tolerates beyond
// twice the live items before it rewrites itself.
const compactSlack = 1000

// Backend is what a Journal wraps: the DynamoDB calls the store makes plus
// Scan, which only compaction uses (never a request path). Both in-memory
// databases local mode can run on satisfy it.
type Backend interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
}

// file is what the journal needs of its open file; tests put a failing
// disk in its place.
type file interface {
	io.Writer
	Truncate(size int64) error
	Sync() error
	Close() error
}

// Journal makes an in-memory DynamoDB (which has no way to dump its tables)
// survive a restart of local mode. It passes every call through and, after
// each write, appends the resulting state of every item the write touched
// to a JSON-lines file: {"n":seq,"t":table,"put":item}, {"n":…,"t":…,"del":key},
// or, for a transaction, one line {"n":…,"tx":[…]} so that it is replayed
// whole or not at all. Recording outcomes rather than requests means a
// replay is plain puts and deletes, with no condition or update expression
// to evaluate again. Open replays the file; when superseded lines outnumber
// live items it rewrites the file from a Scan (compaction).
//
// Writes to different items do not wait for each other: a write locks only
// the items it touches (commit.go), and the file is written by one goroutine
// that takes every record queued meanwhile as one batch, in one write(2) and
// one fsync (a group commit). A write returns once its record is on disk, so
// neither a crash of the process nor one of the machine loses what it
// acknowledged. A write whose batch cannot be written (a full disk) is
// undone in memory and cut from the file, so the database never holds what
// the file lacks. Damage found at Open is refused or, for a torn last line,
// repaired loudly (see Open).
type Journal struct {
	db   Backend
	path string
	log  *slog.Logger

	keysMu sync.RWMutex
	keys   map[string][]string // table → key attribute names

	// gate is held shared by every write from its first read to its
	// durable record, and exclusively by compaction and Close: they must
	// see no write half done (applied in memory, not yet in the file).
	gate   sync.RWMutex
	closed bool // guarded by gate

	// items orders the writes of each item (commit.go).
	items itemLocks

	// broken is set when a failed write could not be cut from the file
	// again, or undone in memory: nothing more is written until a restart
	// repairs the tail.
	broken atomic.Pointer[error]

	// The commit queue (commit.go): writes append their record to the
	// open batch, whose leader writes it once the batch before is on disk.
	queueMu sync.Mutex
	open    *batch
	writing bool // a leader is writing a batch or waiting for its turn

	// The file and what the journal knows of it. A batch's leader holds
	// fileMu while it writes the batch; compaction holds it (with gate held
	// exclusively, so no batch is pending) while it rewrites the file.
	fileMu sync.Mutex
	f      file
	size   int64 // bytes of whole records in the file
	lines  int
	seq    uint64 // number of the last record written
	// live holds the identity of every item the journal says exists, so
	// compaction knows how many lines are superseded.
	live map[string]struct{}
	buf  []byte // the batch being written, reused

	// bloated is set by a batch's leader when superseded lines call for a
	// compaction; the write that sees it runs one after its own.
	bloated    atomic.Bool
	compacting atomic.Bool
}

var _ Backend = (*Journal)(nil)

// errJournalClosed refuses writes after Close, before they reach the
// database, so memory never holds what the file lacks.
var errJournalClosed = errors.New("journal closed")

// replayLine is a record as replay decodes it: in one pass, values typed.
type replayLine struct {
	N     uint64               `json:"n"`
	Table string               `json:"t"`
	Put   map[string]*taggedAV `json:"put"`
	Del   map[string]*taggedAV `json:"del"`
	Tx    []replayLine         `json:"tx"`
}

// Option configures Open.
type Option func(*Journal)

// WithLogger receives the repairs Open makes (at Error level: an operator
// must know that the file was damaged).
func WithLogger(l *slog.Logger) Option {
	return func(j *Journal) {
		if l != nil {
			j.log = l
		}
	}
}

// DamagedError is a journal Open refuses to replay: a record in the middle
// is unreadable, or records are missing between two others. Serving the
// rest would silently lose acknowledged writes, so the operator decides
// (restore a backup, or move the file aside to start empty).
type DamagedError struct {
	Path   string
	Line   int
	Reason string
}

func (e *DamagedError) Error() string {
	return fmt.Sprintf("journal %s is damaged at line %d: %s; restore it from a backup or move it aside to start with an empty database", e.Path, e.Line, e.Reason)
}

// Open replays dir's journal into db and returns a Journal that records
// every later write there. The tables must exist in db already
// (CreateTable); the journal holds items only. dir is created (0700) when
// missing.
//
// A last line without its newline is a write the machine lost half of: it
// was never acknowledged, so Open cuts it off, keeps a copy of the file as
// it found it next to it, and logs the repair at Error level. Any other
// damage — an unreadable line, a gap in the record numbers — is a
// *DamagedError and nothing is replayed.
func Open(ctx context.Context, db Backend, dir string, opts ...Option) (*Journal, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("journal directory: %w", err)
	}
	j := &Journal{db: db, path: filepath.Join(dir, File), keys: map[string][]string{}, live: map[string]struct{}{},
		log: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(j)
	}
	f, err := os.OpenFile(j.path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open journal: %w", err)
	}
	if err := j.replay(ctx, f); err != nil {
		_ = f.Close()
		return nil, err
	}
	_ = f.Close() // read-only use so far
	// Appends go through O_APPEND, so a record cut after a failed write is
	// followed by the next one with no gap.
	if j.f, err = os.OpenFile(j.path, os.O_WRONLY|os.O_APPEND, 0o600); err != nil {
		return nil, fmt.Errorf("open journal: %w", err)
	}
	if j.tooLong() {
		if err := j.compact(ctx); err != nil {
			_ = j.f.Close()
			return nil, err
		}
	}
	return j, nil
}

func (j *Journal) replay(ctx context.Context, f *os.File) error {
	// Replay allocates a little per record and keeps almost all of it: let
	// the heap grow further between collections meanwhile.
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	r := bufio.NewReaderSize(f, 1<<20)
	for n := 1; ; n++ {
		line, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			if len(line) > 0 {
				return j.cutTornTail(f, n, len(line))
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("read journal: %w", err)
		}
		var l replayLine
		if err := json.Unmarshal(line, &l); err != nil {
			return &DamagedError{Path: j.path, Line: n, Reason: "the line is not a journal record"}
		}
		if l.N != 0 { // files written before records were numbered have none
			if j.seq != 0 && l.N != j.seq+1 {
				return &DamagedError{Path: j.path, Line: n, Reason: fmt.Sprintf("record %d follows record %d: records are missing", l.N, j.seq)}
			}
			j.seq = l.N
		}
		if err := j.apply(ctx, l); err != nil {
			return &DamagedError{Path: j.path, Line: n, Reason: err.Error()}
		}
		j.size += int64(len(line))
		j.lines++
	}
}

// cutTornTail drops a last line that lacks its newline, after keeping a copy
// of the file as it was.
func (j *Journal) cutTornTail(f *os.File, n, torn int) error {
	kept := fmt.Sprintf("%s.damaged-%s", j.path, time.Now().UTC().Format("20060102T150405Z"))
	if err := copyFile(j.path, kept); err != nil {
		return fmt.Errorf("journal %s ends in a torn record (line %d) and a copy could not be kept before repairing it: %w", j.path, n, err)
	}
	if err := f.Truncate(j.size); err != nil {
		return fmt.Errorf("drop torn journal line %d: %w", n, err)
	}
	j.log.Error("journal ended in a torn record, a write the machine lost half of; cut it off",
		"path", j.path, "line", n, "bytes_dropped", torn, "records_kept", j.lines, "damaged_copy", kept)
	return nil
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from) //nolint:gosec // G304: the path is the operator's data directory, never a request value
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o600) //nolint:gosec // G703: to is the journal's own path plus a suffix, in the operator's data directory
}

// apply replays one record.
func (j *Journal) apply(ctx context.Context, l replayLine) error {
	switch {
	case l.Tx != nil:
		for _, sub := range l.Tx {
			if err := j.apply(ctx, sub); err != nil {
				return err
			}
		}
		return nil
	case l.Put != nil:
		item, err := taggedItem(l.Put)
		if err != nil {
			return err
		}
		id, err := j.identity(ctx, l.Table, item)
		if err != nil {
			return err
		}
		if _, err := j.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(l.Table), Item: item}); err != nil {
			return err
		}
		j.mark(id, true)
		return nil
	case l.Del != nil:
		k, err := taggedItem(l.Del)
		if err != nil {
			return err
		}
		id, err := j.identity(ctx, l.Table, k)
		if err != nil {
			return err
		}
		if _, err := j.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(l.Table), Key: k}); err != nil {
			return err
		}
		j.mark(id, false)
		return nil
	}
	return errors.New("the record holds neither put, del nor tx")
}

// keyNames returns the table's key attribute names, asking DescribeTable
// once per table.
func (j *Journal) keyNames(ctx context.Context, table string) ([]string, error) {
	j.keysMu.RLock()
	names, ok := j.keys[table]
	j.keysMu.RUnlock()
	if ok {
		return names, nil
	}
	out, err := j.db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		return nil, fmt.Errorf("describe table %s: %w", table, err)
	}
	for _, k := range out.Table.KeySchema {
		names = append(names, aws.ToString(k.AttributeName))
	}
	slices.Sort(names)
	j.keysMu.Lock()
	j.keys[table] = names
	j.keysMu.Unlock()
	return names, nil
}

func (j *Journal) keyOf(ctx context.Context, table string, item map[string]types.AttributeValue) (map[string]types.AttributeValue, error) {
	names, err := j.keyNames(ctx, table)
	if err != nil {
		return nil, err
	}
	k := make(map[string]types.AttributeValue, len(names))
	for _, n := range names {
		v, ok := item[n]
		if !ok {
			return nil, fmt.Errorf("item of table %s lacks key attribute %s", table, n)
		}
		k[n] = v
	}
	return k, nil
}

// identity names an item uniquely within the journal (table and key).
func (j *Journal) identity(ctx context.Context, table string, item map[string]types.AttributeValue) (string, error) {
	names, err := j.keyNames(ctx, table)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString(table)
	for _, n := range names {
		b.WriteByte(0)
		switch v := item[n].(type) {
		case *types.AttributeValueMemberS:
			b.WriteString("S")
			b.WriteString(v.Value)
		case nil:
			return "", fmt.Errorf("item of table %s lacks key attribute %s", table, n)
		default:
			js, err := avToJSON(v)
			if err != nil {
				return "", err
			}
			enc, _ := json.Marshal(js)
			b.Write(enc)
		}
	}
	return b.String(), nil
}

// touched is one item a write may change: its table and any map holding
// its key attributes. A checked item is one a transaction's condition
// reads and does not change: it is locked like the others, so the
// transaction is not recorded on the strength of another write that is
// still on its way to the disk, but not recorded itself.
type touched struct {
	table   string
	item    map[string]types.AttributeValue
	checked bool
}

// image is an item's state before a write, to undo the write in memory
// when it cannot be recorded.
type image struct {
	table string
	key   map[string]types.AttributeValue
	item  map[string]types.AttributeValue // nil: absent
}

// journaled runs a write and records it, then compacts the file when the
// batch that carried it found it bloated.
func (j *Journal) journaled(ctx context.Context, items []touched, write func() error) error {
	err := j.writeAndRecord(ctx, items, write)
	if err == nil && j.bloated.Load() {
		j.compactBloated(context.WithoutCancel(ctx))
	}
	return err
}

// writeAndRecord runs a write and waits until its record is on disk. The
// caller's write runs only when the journal is usable; a write the file
// cannot take is undone.
//
// The touched items stay locked from the read before the write until the
// record is durable. That orders each item's records in the file as its
// writes took effect, and it keeps an undo from putting back a state over
// a later write of the same item: a failed batch only ever holds writes of
// items no other write has touched since.
func (j *Journal) writeAndRecord(ctx context.Context, items []touched, write func() error) error {
	j.gate.RLock()
	defer j.gate.RUnlock()
	if j.closed {
		return errJournalClosed
	}
	if err := j.brokenErr(); err != nil {
		return err
	}
	before := make([]image, 0, len(items))
	ids := make([]string, 0, len(items)) // identity of each written item, as in before
	locked := make([]string, 0, len(items))
	for _, t := range items {
		k, err := j.keyOf(ctx, t.table, t.item)
		if err != nil {
			return err
		}
		id, err := j.identity(ctx, t.table, k)
		if err != nil {
			return err
		}
		locked = append(locked, id)
		if !t.checked {
			before = append(before, image{table: t.table, key: k})
			ids = append(ids, id)
		}
	}
	defer j.items.lock(locked)()
	for i, b := range before {
		out, err := j.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(b.table), Key: b.key, ConsistentRead: aws.Bool(true)})
		if err != nil {
			return fmt.Errorf("journal: read before write: %w", err)
		}
		if len(out.Item) > 0 {
			before[i].item = out.Item
		}
	}
	if err := write(); err != nil {
		return err // a failed write changed nothing
	}
	rec, err := j.readBack(ctx, before, ids)
	if err == nil {
		err = j.commit(rec)
	}
	if err != nil {
		if uerr := j.undo(ctx, before); uerr != nil {
			j.setBroken(fmt.Errorf("undo a write the file refused: %w", uerr))
		}
		return fmt.Errorf("journal %s: the write was not kept: %w", j.path, err)
	}
	return nil
}

func (j *Journal) brokenErr() error {
	if err := j.broken.Load(); err != nil {
		return fmt.Errorf("journal %s refuses writes until a restart after a failed write: %w", j.path, *err)
	}
	return nil
}

func (j *Journal) setBroken(err error) { j.broken.CompareAndSwap(nil, &err) }

// undo puts back the items as they were before a write.
func (j *Journal) undo(ctx context.Context, before []image) error {
	var errs []error
	for _, b := range slices.Backward(before) {
		var err error
		if b.item != nil {
			_, err = j.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(b.table), Item: b.item})
		} else {
			_, err = j.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(b.table), Key: b.key})
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// readBack encodes the current state of every touched item as one record,
// still without its number (its batch's leader numbers records in file order).
// The caller holds the items' locks, so what it reads is its own write's
// outcome.
func (j *Journal) readBack(ctx context.Context, items []image, ids []string) (pending, error) {
	ops := make([]op, len(items))
	rec := pending{ids: ids, live: make([]bool, len(items))}
	for i, t := range items {
		out, err := j.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(t.table), Key: t.key, ConsistentRead: aws.Bool(true)})
		if err != nil {
			return pending{}, fmt.Errorf("read back: %w", err)
		}
		ops[i] = op{table: t.table, item: t.key}
		if len(out.Item) > 0 {
			ops[i].item, ops[i].put, rec.live[i] = out.Item, true, true
		}
	}
	var err error
	rec.body, err = appendRecordBody(nil, ops)
	return rec, err
}

// op is one item's state in a record: a put of the item, or a delete of
// the key.
type op struct {
	table string
	put   bool
	item  map[string]types.AttributeValue
}

// appendRecord appends one journal record and its newline:
// {"n":seq,"t":…,"put"|"del":…} for one item, {"n":seq,"tx":[…]} for more.
func appendRecord(b []byte, seq uint64, ops []op) ([]byte, error) {
	b = appendRecordNumber(b, seq)
	return appendRecordBody(b, ops)
}

// appendRecordNumber opens a record: {"n":seq,
func appendRecordNumber(b []byte, seq uint64) []byte {
	b = append(b, `{"n":`...)
	b = strconv.AppendUint(b, seq, 10)
	return append(b, ',')
}

// appendRecordBody appends the rest of a record after its number.
func appendRecordBody(b []byte, ops []op) ([]byte, error) {
	if len(ops) == 1 {
		return appendOp(b, ops[0], "}\n")
	}
	b = append(b, `"tx":[`...)
	for i, o := range ops {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '{')
		var err error
		if b, err = appendOp(b, o, "}"); err != nil {
			return nil, err
		}
	}
	return append(b, "]}\n"...), nil
}

func appendOp(b []byte, o op, end string) ([]byte, error) {
	b = append(b, `"t":`...)
	b = appendString(b, o.table)
	if o.put {
		b = append(b, `,"put":`...)
	} else {
		b = append(b, `,"del":`...)
	}
	b, err := appendItem(b, o.item)
	if err != nil {
		return nil, err
	}
	return append(b, end...), nil
}

func (j *Journal) mark(id string, present bool) {
	if present {
		j.live[id] = struct{}{}
	} else {
		delete(j.live, id)
	}
}

// tooLong reports whether superseded lines outweigh live ones enough to
// rewrite the file. The caller holds fileMu (or is Open).
func (j *Journal) tooLong() bool { return j.lines > 2*len(j.live)+compactSlack }

// Compact rewrites the journal as one put per live item.
func (j *Journal) Compact(ctx context.Context) error {
	j.gate.Lock()
	defer j.gate.Unlock()
	if j.closed {
		return errJournalClosed
	}
	j.fileMu.Lock()
	defer j.fileMu.Unlock()
	return j.compact(ctx)
}

// compactBloated compacts the file once for all the writes that saw it
// bloated: the first one runs it, the others go on (and wait at the gate
// only if they write again meanwhile).
func (j *Journal) compactBloated(ctx context.Context) {
	if !j.compacting.CompareAndSwap(false, true) {
		return
	}
	defer j.compacting.Store(false)
	j.gate.Lock()
	defer j.gate.Unlock()
	if j.closed || !j.bloated.Load() {
		return
	}
	j.fileMu.Lock()
	defer j.fileMu.Unlock()
	// The writes are on disk already: a failed compaction only leaves the
	// file longer, and is tried again after a later write.
	if err := j.compact(ctx); err != nil {
		j.log.Error("journal compaction failed", "path", j.path, "error", err.Error())
	}
}

// compact rewrites the file from a Scan. The caller excludes every write
// (gate held exclusively, or Open before any write) and holds
// fileMu.
func (j *Journal) compact(ctx context.Context) error {
	tmp := j.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600) //nolint:gosec // G304: the path is the operator's data directory, never a request value
	if err != nil {
		return fmt.Errorf("compact journal: %w", err)
	}
	defer func() { _ = os.Remove(tmp) }() // gone after the rename; cleans up after a failure
	w := bufio.NewWriter(f)
	var seq uint64
	var rec []byte
	j.keysMu.RLock()
	tables := slices.Sorted(maps.Keys(j.keys))
	j.keysMu.RUnlock()
	for _, table := range tables {
		in := &dynamodb.ScanInput{TableName: aws.String(table)}
		for {
			out, err := j.db.Scan(ctx, in)
			if err != nil {
				_ = f.Close()
				return fmt.Errorf("compact journal: scan %s: %w", table, err)
			}
			for _, item := range out.Items {
				seq++
				if rec, err = appendRecord(rec[:0], seq, []op{{table: table, put: true, item: item}}); err != nil {
					_ = f.Close()
					return err
				}
				_, _ = w.Write(rec) // a bufio error resurfaces at Flush
			}
			if len(out.LastEvaluatedKey) == 0 {
				break
			}
			in.ExclusiveStartKey = out.LastEvaluatedKey
		}
	}
	if err := errors.Join(w.Flush(), f.Sync(), f.Close()); err != nil {
		return fmt.Errorf("compact journal: %w", err)
	}
	info, err := os.Stat(tmp)
	if err != nil {
		return fmt.Errorf("compact journal: %w", err)
	}
	if err := os.Rename(tmp, j.path); err != nil {
		return fmt.Errorf("compact journal: %w", err)
	}
	if d, err := os.Open(filepath.Dir(j.path)); err == nil {
		_ = d.Sync() // make the rename durable where the OS allows it
		_ = d.Close()
	}
	nf, err := os.OpenFile(j.path, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("reopen journal: %w", err)
	}
	if j.f != nil {
		_ = j.f.Close()
	}
	j.f = nf
	j.lines, j.seq, j.size = int(seq), seq, info.Size()
	j.bloated.Store(false)
	return nil
}

// Close waits for the writes under way and closes the file; writes
// afterwards fail.
func (j *Journal) Close() error {
	j.gate.Lock()
	defer j.gate.Unlock()
	if j.closed {
		return nil
	}
	j.closed = true // no batch is pending: every write holds the gate until its record is on disk
	j.fileMu.Lock()
	defer j.fileMu.Unlock()
	return errors.Join(j.f.Sync(), j.f.Close())
}

// --- writes: run, then record what they left behind.

func (j *Journal) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (out *dynamodb.PutItemOutput, err error) {
	err = j.journaled(ctx, []touched{{table: aws.ToString(in.TableName), item: in.Item}}, func() error {
		out, err = j.db.PutItem(ctx, in, opts...)
		return err
	})
	return out, err
}

func (j *Journal) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (out *dynamodb.UpdateItemOutput, err error) {
	err = j.journaled(ctx, []touched{{table: aws.ToString(in.TableName), item: in.Key}}, func() error {
		out, err = j.db.UpdateItem(ctx, in, opts...)
		return err
	})
	return out, err
}

func (j *Journal) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (out *dynamodb.DeleteItemOutput, err error) {
	err = j.journaled(ctx, []touched{{table: aws.ToString(in.TableName), item: in.Key}}, func() error {
		out, err = j.db.DeleteItem(ctx, in, opts...)
		return err
	})
	return out, err
}

func (j *Journal) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (out *dynamodb.TransactWriteItemsOutput, err error) {
	var items []touched
	writes := 0
	for _, ti := range in.TransactItems {
		switch {
		case ti.Put != nil:
			items = append(items, touched{table: aws.ToString(ti.Put.TableName), item: ti.Put.Item})
		case ti.Update != nil:
			items = append(items, touched{table: aws.ToString(ti.Update.TableName), item: ti.Update.Key})
		case ti.Delete != nil:
			items = append(items, touched{table: aws.ToString(ti.Delete.TableName), item: ti.Delete.Key})
		case ti.ConditionCheck != nil:
			items = append(items, touched{table: aws.ToString(ti.ConditionCheck.TableName), item: ti.ConditionCheck.Key, checked: true})
			continue
		}
		writes++
	}
	if writes == 0 { // condition checks only: nothing to record
		return j.db.TransactWriteItems(ctx, in, opts...)
	}
	err = j.journaled(ctx, items, func() error {
		out, err = j.db.TransactWriteItems(ctx, in, opts...)
		return err
	})
	return out, err
}

// --- reads and table calls pass through.

func (j *Journal) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return j.db.GetItem(ctx, in, opts...)
}

func (j *Journal) Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	return j.db.Query(ctx, in, opts...)
}

func (j *Journal) Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	return j.db.Scan(ctx, in, opts...)
}

func (j *Journal) CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error) {
	return j.db.CreateTable(ctx, in, opts...)
}

func (j *Journal) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	return j.db.DescribeTable(ctx, in, opts...)
}
