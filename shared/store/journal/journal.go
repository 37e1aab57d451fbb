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
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

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

// Journal makes an in-memory DynamoDB (minidyn, which has no way to dump
// its tables) survive a restart of local mode. It passes every call through
// and, after each write, appends the resulting state of every item the
// write touched to a JSON-lines file: {"t":table,"put":item} or
// {"t":table,"del":key}. Recording outcomes rather than requests means a
// replay is plain puts and deletes, with no condition or update expression
// to evaluate again. Open replays the file; when superseded lines
// outnumber live items it rewrites the file from a Scan (compaction).
//
// Writes are serialised so the file's order is the order they took effect.
// Each line reaches the OS before the write returns (a crash of the process
// loses nothing; a crash of the machine may lose the tail). A torn last
// line is dropped at the next open. One process owns a data directory.
type Journal struct {
	db   Backend
	path string

	mu    sync.Mutex
	f     *os.File
	w     *bufio.Writer
	keys  map[string][]string // table → key attribute names
	lines int
	// live holds the identity of every item the journal says exists, so
	// compaction knows how many lines are superseded.
	live   map[string]struct{}
	closed bool
}

var _ Backend = (*Journal)(nil)

// errJournalClosed refuses writes after Close, before they reach the
// database, so memory never holds what the file lacks.
var errJournalClosed = errors.New("journal closed")

type journalLine struct {
	Table string                     `json:"t"`
	Put   map[string]json.RawMessage `json:"put,omitempty"`
	Del   map[string]json.RawMessage `json:"del,omitempty"`
}

// Open replays dir's journal into db and returns a Journal that
// records every later write there. The tables must exist in db already
// (CreateTable); the journal holds items only. dir is created (0700) when
// missing.
func Open(ctx context.Context, db Backend, dir string) (*Journal, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("journal directory: %w", err)
	}
	j := &Journal{db: db, path: filepath.Join(dir, File), keys: map[string][]string{}, live: map[string]struct{}{}}
	f, err := os.OpenFile(j.path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open journal: %w", err)
	}
	if err := j.replay(ctx, f); err != nil {
		_ = f.Close()
		return nil, err
	}
	j.f, j.w = f, bufio.NewWriter(f)
	if j.bloated() {
		j.mu.Lock()
		defer j.mu.Unlock()
		if err := j.compact(ctx); err != nil {
			_ = j.f.Close()
			return nil, err
		}
	}
	return j, nil
}

func (j *Journal) replay(ctx context.Context, f *os.File) error {
	r := bufio.NewReader(f)
	var offset int64
	for n := 1; ; n++ {
		line, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			if len(line) > 0 { // torn write: the process died mid-line
				if err := f.Truncate(offset); err != nil {
					return fmt.Errorf("drop torn journal line %d: %w", n, err)
				}
			}
			break
		}
		if err != nil {
			return fmt.Errorf("read journal: %w", err)
		}
		offset += int64(len(line))
		id, present, err := j.apply(ctx, line)
		if err != nil {
			return fmt.Errorf("replay journal line %d: %w", n, err)
		}
		j.mark(id, present)
		j.lines++
	}
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return fmt.Errorf("seek journal: %w", err)
	}
	return nil
}

// apply replays one line and returns the item's identity and whether it
// exists afterwards.
func (j *Journal) apply(ctx context.Context, line []byte) (string, bool, error) {
	var l journalLine
	if err := json.Unmarshal(line, &l); err != nil {
		return "", false, err
	}
	switch {
	case l.Put != nil:
		item, err := itemFromJSON(l.Put)
		if err != nil {
			return "", false, err
		}
		id, err := j.identity(ctx, l.Table, item)
		if err != nil {
			return "", false, err
		}
		_, err = j.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(l.Table), Item: item})
		return id, true, err
	case l.Del != nil:
		k, err := itemFromJSON(l.Del)
		if err != nil {
			return "", false, err
		}
		id, err := j.identity(ctx, l.Table, k)
		if err != nil {
			return "", false, err
		}
		_, err = j.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(l.Table), Key: k})
		return id, false, err
	}
	return "", false, errors.New("neither put nor del")
}

// keyNames returns the table's key attribute names, asking DescribeTable
// once per table.
func (j *Journal) keyNames(ctx context.Context, table string) ([]string, error) {
	if names, ok := j.keys[table]; ok {
		return names, nil
	}
	out, err := j.db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		return nil, fmt.Errorf("describe table %s: %w", table, err)
	}
	var names []string
	for _, k := range out.Table.KeySchema {
		names = append(names, aws.ToString(k.AttributeName))
	}
	j.keys[table] = names
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
	k, err := j.keyOf(ctx, table, item)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString(table)
	for _, n := range slices.Sorted(maps.Keys(k)) {
		js, err := avToJSON(k[n])
		if err != nil {
			return "", err
		}
		enc, _ := json.Marshal(js)
		b.WriteByte(0)
		b.Write(enc)
	}
	return b.String(), nil
}

// touched is one item a write may have changed: its table and any map
// holding its key attributes.
type touched struct {
	table string
	item  map[string]types.AttributeValue
}

// record appends the current state of every touched item. The caller holds
// j.mu, so no other write slips in between the write and its lines.
func (j *Journal) record(ctx context.Context, items ...touched) error {
	for _, t := range items {
		k, err := j.keyOf(ctx, t.table, t.item)
		if err != nil {
			return err
		}
		out, err := j.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(t.table), Key: k, ConsistentRead: aws.Bool(true)})
		if err != nil {
			return fmt.Errorf("read back: %w", err)
		}
		id, err := j.identity(ctx, t.table, k)
		if err != nil {
			return err
		}
		l := map[string]any{"t": t.table}
		if len(out.Item) > 0 {
			if l["put"], err = itemToJSON(out.Item); err != nil {
				return err
			}
		} else if l["del"], err = itemToJSON(k); err != nil {
			return err
		}
		j.mark(id, len(out.Item) > 0)
		b, err := json.Marshal(l)
		if err != nil {
			return err
		}
		if _, err := j.w.Write(append(b, '\n')); err != nil {
			return err
		}
		j.lines++
	}
	if err := j.w.Flush(); err != nil {
		return err
	}
	if j.bloated() {
		return j.compact(ctx)
	}
	return nil
}

func (j *Journal) mark(id string, present bool) {
	if present {
		j.live[id] = struct{}{}
	} else {
		delete(j.live, id)
	}
}

// bloated reports whether superseded lines outweigh live ones enough to
// rewrite the file.
func (j *Journal) bloated() bool { return j.lines > 2*len(j.live)+compactSlack }

func (j *Journal) recorded(ctx context.Context, err error, items ...touched) error {
	if err != nil {
		return err // a failed write changed nothing
	}
	if rerr := j.record(ctx, items...); rerr != nil {
		return fmt.Errorf("journal %s: %w", j.path, rerr)
	}
	return nil
}

// Compact rewrites the journal as one put per live item.
func (j *Journal) Compact(ctx context.Context) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return errJournalClosed
	}
	return j.compact(ctx)
}

func (j *Journal) compact(ctx context.Context) error {
	tmp := j.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600) //nolint:gosec // G304: the path is the operator's data directory, never a request value
	if err != nil {
		return fmt.Errorf("compact journal: %w", err)
	}
	defer func() { _ = os.Remove(tmp) }() // gone after the rename; cleans up after a failure
	w := bufio.NewWriter(f)
	lines := 0
	for _, table := range slices.Sorted(maps.Keys(j.keys)) {
		in := &dynamodb.ScanInput{TableName: aws.String(table)}
		for {
			out, err := j.db.Scan(ctx, in)
			if err != nil {
				_ = f.Close()
				return fmt.Errorf("compact journal: scan %s: %w", table, err)
			}
			for _, item := range out.Items {
				put, err := itemToJSON(item)
				if err != nil {
					_ = f.Close()
					return err
				}
				b, err := json.Marshal(map[string]any{"t": table, "put": put})
				if err != nil {
					_ = f.Close()
					return err
				}
				_, _ = w.Write(append(b, '\n')) // a bufio error resurfaces at Flush
				lines++
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
	_ = j.f.Close()
	j.f, j.w = nf, bufio.NewWriter(nf)
	j.lines = lines
	return nil
}

// Close flushes and syncs the journal; writes afterwards fail.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return nil
	}
	j.closed = true
	return errors.Join(j.w.Flush(), j.f.Sync(), j.f.Close())
}

// --- writes: run, then record what they left behind.

func (j *Journal) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return nil, errJournalClosed
	}
	out, err := j.db.PutItem(ctx, in, opts...)
	return out, j.recorded(ctx, err, touched{aws.ToString(in.TableName), in.Item})
}

func (j *Journal) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return nil, errJournalClosed
	}
	out, err := j.db.UpdateItem(ctx, in, opts...)
	return out, j.recorded(ctx, err, touched{aws.ToString(in.TableName), in.Key})
}

func (j *Journal) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return nil, errJournalClosed
	}
	out, err := j.db.DeleteItem(ctx, in, opts...)
	return out, j.recorded(ctx, err, touched{aws.ToString(in.TableName), in.Key})
}

func (j *Journal) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return nil, errJournalClosed
	}
	out, err := j.db.TransactWriteItems(ctx, in, opts...)
	var items []touched
	for _, ti := range in.TransactItems {
		switch {
		case ti.Put != nil:
			items = append(items, touched{aws.ToString(ti.Put.TableName), ti.Put.Item})
		case ti.Update != nil:
			items = append(items, touched{aws.ToString(ti.Update.TableName), ti.Update.Key})
		case ti.Delete != nil:
			items = append(items, touched{aws.ToString(ti.Delete.TableName), ti.Delete.Key})
		}
	}
	return out, j.recorded(ctx, err, items...)
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
