// Package boltdb is local mode's database: the part of the DynamoDB API
// maasflow's store uses — tables with string keys and global secondary
// indexes (projection ALL), GetItem, PutItem, UpdateItem (SET), DeleteItem,
// Query, Scan and TransactWriteItems, with condition expressions evaluated
// as DynamoDB does (expr.go lists the grammar) — kept in one file by
// go.etcd.io/bbolt.
//
// A table is a bucket whose keys are the ordered encoding of the item's key
// (keys.go) and whose values are the packed items (pack.go); each global
// secondary index is a bucket of index key + table key → table key. So a
// Query is a cursor seek and a walk over one partition, and a write, a page
// of a listing and a transaction cost the same with 100 records as with
// 100,000. Every write, a TransactWriteItems included, is whole within one
// bbolt transaction: its condition is checked and its items and index rows
// are written, or nothing is; it returns once the transaction is on disk
// (fsync). Writes that arrive while a transaction commits share the next
// one (commit.go). Requests outside the subset (filter or projection expressions,
// non-string keys, REMOVE/ADD updates) fail with a ValidationException
// rather than being half-served.
package boltdb

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// maxItemBytes is DynamoDB's item size limit (names plus values).
const maxItemBytes = 400 * 1024

// maxTransactItems is DynamoDB's limit on one TransactWriteItems.
const maxTransactItems = 100

// DB is the database: safe for concurrent use and for one process at a
// time (the file is locked while it is open). Reads run in parallel with
// each other and with the one write transaction bbolt allows at a time.
type DB struct {
	bolt  *bolt.DB
	group groupCommit
	stamp atomic.Pointer[func() time.Time] // StampWrites

	mu     sync.RWMutex
	tables map[string]*table
}

type tkey struct{ pk, sk string }

type index struct {
	name      string
	hash, rng string // key attribute names; rng is "" without a sort key
	bucket    []byte // the index's rows; the table's items for the primary index
}

type table struct {
	name    string
	desc    types.TableDescription
	primary *index
	gsis    map[string]*index
	items   []byte // the bucket of the items
}

// Buckets of the file besides the tables'.
var (
	metaBucket       = []byte("meta")
	schemaVersionKey = []byte("schema_version")
)

// SchemaVersion is the layout of the file this code writes. A file with a
// higher one was written by a newer release and is refused.
const SchemaVersion = 1

func tablePrefix(name string) string { return "table/" + name }

// Options configures Open.
type Options struct {
	// LockTimeout is how long Open waits for another process to release
	// the file; zero is one second.
	LockTimeout time.Duration
	// NoSync skips fsync: only for throwaway databases (tests).
	NoSync bool
	// Check runs bbolt's consistency check over every page at Open.
	Check bool
}

// InUseError is a file another process holds open.
type InUseError struct{ Path string }

func (e *InUseError) Error() string {
	return fmt.Sprintf("database %s is in use by another process: stop that maasflow local, or pass another --data-dir", e.Path)
}

// DamagedError is a file Open or a read found damaged. Nothing is served
// from it: the operator restores a backup or starts afresh.
type DamagedError struct {
	Path   string
	Reason string
}

func (e *DamagedError) Error() string {
	return fmt.Sprintf("database %s is damaged (%s): restore it from a backup, or start with an empty database with --reset", e.Path, e.Reason)
}

// NewerVersionError is a file a newer release wrote.
type NewerVersionError struct {
	Path          string
	Version, Want int
}

func (e *NewerVersionError) Error() string {
	return fmt.Sprintf("database %s has schema version %d, newer than this release's %d: run the release that wrote it, or restore a backup made by this one", e.Path, e.Version, e.Want)
}

// Open opens (creating it when missing) the database file at path and
// takes its lock. A file whose meta pages or (with Check) other pages do
// not hold together is a *DamagedError; one written by a newer release a
// *NewerVersionError; one another process holds an *InUseError.
func Open(path string, o Options) (_ *DB, err error) {
	timeout := o.LockTimeout
	if timeout == 0 {
		timeout = time.Second
	}
	if fi, statErr := os.Stat(path); statErr == nil && fi.Size() == 0 {
		// bbolt would initialise an empty file as a new database: an
		// emptied file is damage, not a fresh install.
		return nil, &DamagedError{Path: path, Reason: "the file is empty"}
	}
	if err := checkFileSize(path); err != nil {
		return nil, err
	}
	bdb, err := openBolt(path, timeout, o.NoSync)
	if err != nil {
		switch {
		case errors.Is(err, berrors.ErrTimeout):
			return nil, &InUseError{Path: path}
		case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrChecksum), errors.Is(err, berrors.ErrVersionMismatch), errors.Is(err, errPanic):
			return nil, &DamagedError{Path: path, Reason: err.Error()}
		}
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			_ = bdb.Close()
		}
	}()
	db := &DB{bolt: bdb, tables: map[string]*table{}}
	if o.Check {
		if err := db.check(path); err != nil {
			return nil, err
		}
	}
	if err := db.loadMeta(path); err != nil {
		return nil, err
	}
	return db, nil
}

var errPanic = errors.New("the file's pages do not hold together")

// openBolt opens the file; bbolt panics on some damage it meets while
// reading the freelist, which is a damaged file here, not a crash.
func openBolt(path string, timeout time.Duration, noSync bool) (db *bolt.DB, err error) {
	defer func() {
		if r := recover(); r != nil {
			db, err = nil, fmt.Errorf("%w: %v", errPanic, r)
		}
	}()
	return bolt.Open(path, 0o600, &bolt.Options{
		Timeout: timeout, NoSync: noSync, FreelistType: bolt.FreelistMapType,
		// The free list is rebuilt from the pages at open instead of being
		// written with every commit (as etcd runs bbolt): each commit
		// writes and syncs less.
		NoFreelistSync: true,
	})
}

// check runs bbolt's page-by-page consistency check.
func (db *DB) check(path string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &DamagedError{Path: path, Reason: fmt.Sprint(r)}
		}
	}()
	return db.bolt.View(func(tx *bolt.Tx) error {
		for cerr := range tx.Check() {
			return &DamagedError{Path: path, Reason: cerr.Error()}
		}
		return nil
	})
}

// loadMeta stamps a new file with SchemaVersion, refuses a newer one and
// loads the tables' schemas.
func (db *DB) loadMeta(path string) error {
	return db.bolt.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(metaBucket)
		if meta == nil {
			if tx.Stats().PageCount > 0 && len(bucketNames(tx)) > 0 {
				return &DamagedError{Path: path, Reason: "the meta bucket is missing"}
			}
			var err error
			if meta, err = tx.CreateBucket(metaBucket); err != nil {
				return err
			}
			return meta.Put(schemaVersionKey, fmt.Appendf(nil, "%d", SchemaVersion))
		}
		var v int
		if _, err := fmt.Sscanf(string(meta.Get(schemaVersionKey)), "%d", &v); err != nil {
			return &DamagedError{Path: path, Reason: "the schema version is unreadable"}
		}
		if v > SchemaVersion {
			return &NewerVersionError{Path: path, Version: v, Want: SchemaVersion}
		}
		c := meta.Cursor()
		prefix := []byte(tablePrefix(""))
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			var in dynamodb.CreateTableInput
			if err := json.Unmarshal(v, &in); err != nil {
				return &DamagedError{Path: path, Reason: fmt.Sprintf("the schema of table %s is unreadable", k[len(prefix):])}
			}
			t, err := newTable(&in)
			if err != nil {
				return &DamagedError{Path: path, Reason: err.Error()}
			}
			db.tables[t.name] = t
		}
		return nil
	})
}

func bucketNames(tx *bolt.Tx) []string {
	var names []string
	_ = tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
		names = append(names, string(name))
		return nil
	})
	return names
}

// SetSchemaVersion writes v as the file's schema version (tests make a
// file from a newer release with it).
func (db *DB) SetSchemaVersion(v int) error {
	return db.bolt.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(metaBucket).Put(schemaVersionKey, fmt.Appendf(nil, "%d", v))
	})
}

// Bolt is the underlying database, for the other local-mode state that
// lives in buckets of its own in the same file (the event bus).
func (db *DB) Bolt() *bolt.DB { return db.bolt }

// Close closes the file and releases its lock.
func (db *DB) Close() error { return db.bolt.Close() }

// NewTemp returns a database on a temporary file that is gone once it is
// closed or the process exits (the file is unlinked at once): for tests
// and for tools that need the store without a data directory.
func NewTemp() (*DB, error) {
	f, err := os.CreateTemp("", "maasflow-*.db")
	if err != nil {
		return nil, fmt.Errorf("temporary database: %w", err)
	}
	path := f.Name()
	_ = f.Close()
	_ = os.Remove(path) // bbolt creates it anew; an empty file is refused
	db, err := Open(path, Options{NoSync: true})
	_ = os.Remove(path)
	return db, err
}

// write runs fn in a write transaction and returns once it is on disk.
// fn returns an error only when the transaction itself must fail (a
// request refused is reported through the caller's variables, with nothing
// written). Concurrent writes share transactions (commit.go); fn may run
// more than once and must be idempotent.
func (db *DB) write(fn func(tx *bolt.Tx) error) error {
	if err := db.group.run(db, fn); err != nil {
		return &WriteError{Err: err}
	}
	return nil
}

// WriteError is a write that did not reach the disk (a full disk, an I/O
// error): nothing of it was kept. It is a server fault, so the store's
// callers answer it as unavailable.
type WriteError struct{ Err error }

func (e *WriteError) Error() string { return "database write failed: " + e.Err.Error() }
func (e *WriteError) Unwrap() error { return e.Err }

// ErrorFault marks the error as the server's, as smithy errors do.
func (e *WriteError) ErrorFault() smithy.ErrorFault { return smithy.FaultServer }

// Unavailable says a retry later may succeed (the disk may be freed): the
// API answers it 503.
func (e *WriteError) Unavailable() bool { return true }

func sAttr(item map[string]types.AttributeValue, name string) (string, bool) {
	v, ok := item[name].(*types.AttributeValueMemberS)
	if !ok {
		return "", false
	}
	return v.Value, true
}

func validation(format string, args ...any) error {
	return &smithy.GenericAPIError{Code: "ValidationException", Message: fmt.Sprintf(format, args...), Fault: smithy.FaultClient}
}

func notFound(name string) error {
	return &types.ResourceNotFoundException{Message: aws.String("Requested resource not found: Table: " + name + " not found")}
}

func (db *DB) table(name *string) (*table, error) {
	db.mu.RLock()
	t, ok := db.tables[aws.ToString(name)]
	db.mu.RUnlock()
	if !ok {
		return nil, notFound(aws.ToString(name))
	}
	return t, nil
}

// keyOf reads the table key out of a Key map (exact: key attributes only)
// or an item (exact false: other attributes allowed).
func (t *table) keyOf(m map[string]types.AttributeValue, exact bool) (tkey, error) {
	var k tkey
	var ok bool
	if k.pk, ok = sAttr(m, t.primary.hash); !ok || k.pk == "" {
		return k, validation("the key attribute %s must be a non-empty string", t.primary.hash)
	}
	want := 1
	if t.primary.rng != "" {
		want = 2
		if k.sk, ok = sAttr(m, t.primary.rng); !ok || k.sk == "" {
			return k, validation("the key attribute %s must be a non-empty string", t.primary.rng)
		}
	}
	if exact && len(m) != want {
		return k, validation("the provided key element does not match the schema")
	}
	return k, nil
}

// itemKey is k's key in the table's bucket.
func (t *table) itemKey(k tkey) []byte {
	b := appendKeyPart(nil, k.pk)
	if t.primary.rng != "" {
		b = appendKeyPart(b, k.sk)
	}
	return b
}

// rowKey is item's row key in ix (index key, then table key); ok is false
// when the item lacks the index's key attributes (sparse index).
func (ix *index) rowKey(itemKey []byte, item map[string]types.AttributeValue) ([]byte, bool) {
	pk, ok := sAttr(item, ix.hash)
	if !ok {
		return nil, false
	}
	b := appendKeyPart(make([]byte, 0, len(pk)+len(itemKey)+16), pk)
	if ix.rng != "" {
		sk, ok := sAttr(item, ix.rng)
		if !ok {
			return nil, false
		}
		b = appendKeyPart(b, sk)
	}
	return append(b, itemKey...), true
}

// get reads the item under key: a fresh map, nil when there is none.
func (t *table) get(tx *bolt.Tx, key []byte) (map[string]types.AttributeValue, error) {
	b := tx.Bucket(t.items)
	if b == nil {
		return nil, notFound(t.name)
	}
	return decode(b.Get(key))
}

// decode unpacks a value read from a page into an item of its own.
func decode(v []byte) (map[string]types.AttributeValue, error) {
	if v == nil {
		return nil, nil //nolint:nilnil // an absent item is nil, as GetItem answers it
	}
	item, err := unpack(bytes.Clone(v))
	if err != nil {
		return nil, &DamagedError{Reason: "an item cannot be decoded"}
	}
	return item, nil
}

// put stores item, packed, under key in place of old (the stored item; nil
// when there is none) and keeps every index in step.
func (t *table) put(tx *bolt.Tx, key []byte, item map[string]types.AttributeValue, packed []byte, old map[string]types.AttributeValue) error {
	if err := t.removeRows(tx, key, old); err != nil {
		return err
	}
	if err := tx.Bucket(t.items).Put(key, packed); err != nil {
		return err
	}
	for _, ix := range t.gsis {
		if row, ok := ix.rowKey(key, item); ok {
			if err := tx.Bucket(ix.bucket).Put(row, key); err != nil {
				return err
			}
		}
	}
	return nil
}

// remove deletes the item under key, old being the stored item.
func (t *table) remove(tx *bolt.Tx, key []byte, old map[string]types.AttributeValue) error {
	if old == nil {
		return nil
	}
	if err := t.removeRows(tx, key, old); err != nil {
		return err
	}
	return tx.Bucket(t.items).Delete(key)
}

func (t *table) removeRows(tx *bolt.Tx, key []byte, old map[string]types.AttributeValue) error {
	if old == nil {
		return nil
	}
	for _, ix := range t.gsis {
		if row, ok := ix.rowKey(key, old); ok {
			if err := tx.Bucket(ix.bucket).Delete(row); err != nil {
				return err
			}
		}
	}
	return nil
}

// check evaluates a ConditionExpression against item (nil: absent).
func check(item map[string]types.AttributeValue, expr *string, b *bindings) (bool, error) {
	if aws.ToString(expr) == "" {
		return true, nil
	}
	c, err := compileCond(aws.ToString(expr))
	if err != nil {
		return false, err
	}
	return c(item, b)
}

func conditionFailed(item map[string]types.AttributeValue, rv types.ReturnValuesOnConditionCheckFailure) error {
	e := &types.ConditionalCheckFailedException{Message: aws.String("The conditional request failed")}
	if rv == types.ReturnValuesOnConditionCheckFailureAllOld && item != nil {
		e.Item = item
	}
	return e
}

// newTable validates a CreateTableInput into a table.
func newTable(in *dynamodb.CreateTableInput) (*table, error) {
	name := aws.ToString(in.TableName)
	if name == "" {
		return nil, validation("TableName is required")
	}
	attrTypes := map[string]types.ScalarAttributeType{}
	for _, a := range in.AttributeDefinitions {
		attrTypes[aws.ToString(a.AttributeName)] = a.AttributeType
	}
	mk := func(ixName string, ks []types.KeySchemaElement) (*index, error) {
		ix := &index{name: ixName, bucket: []byte("index/" + name + "/" + ixName)}
		for _, e := range ks {
			attr := aws.ToString(e.AttributeName)
			if attrTypes[attr] != types.ScalarAttributeTypeS {
				return nil, validation("key attribute %s: only string (S) keys are supported", attr)
			}
			if e.KeyType == types.KeyTypeHash {
				ix.hash = attr
			} else {
				ix.rng = attr
			}
		}
		if ix.hash == "" {
			return nil, validation("index %s has no HASH key", ixName)
		}
		return ix, nil
	}
	primary, err := mk("", in.KeySchema)
	if err != nil {
		return nil, err
	}
	t := &table{name: name, primary: primary, gsis: map[string]*index{}, items: []byte("items/" + name)}
	primary.bucket = t.items
	var gsiDescs []types.GlobalSecondaryIndexDescription
	for _, g := range in.GlobalSecondaryIndexes {
		if g.Projection != nil && g.Projection.ProjectionType != "" && g.Projection.ProjectionType != types.ProjectionTypeAll {
			return nil, validation("index %s: only projection ALL is supported", aws.ToString(g.IndexName))
		}
		ix, err := mk(aws.ToString(g.IndexName), g.KeySchema)
		if err != nil {
			return nil, err
		}
		t.gsis[ix.name] = ix
		gsiDescs = append(gsiDescs, types.GlobalSecondaryIndexDescription{
			IndexName: g.IndexName, KeySchema: g.KeySchema, Projection: g.Projection, IndexStatus: types.IndexStatusActive,
		})
	}
	if len(in.LocalSecondaryIndexes) > 0 {
		return nil, validation("local secondary indexes are not supported")
	}
	t.desc = types.TableDescription{
		TableName: aws.String(name), TableStatus: types.TableStatusActive,
		KeySchema: in.KeySchema, AttributeDefinitions: in.AttributeDefinitions,
		GlobalSecondaryIndexes: gsiDescs,
		BillingModeSummary:     &types.BillingModeSummary{BillingMode: in.BillingMode},
	}
	return t, nil
}

// CreateTable creates a table with string key attributes and global
// secondary indexes; it is ACTIVE at once, and kept in the file with its
// schema.
func (db *DB) CreateTable(_ context.Context, in *dynamodb.CreateTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error) {
	t, err := newTable(in)
	if err != nil {
		return nil, err
	}
	schema, err := json.Marshal(&dynamodb.CreateTableInput{
		TableName: in.TableName, AttributeDefinitions: in.AttributeDefinitions, KeySchema: in.KeySchema,
		GlobalSecondaryIndexes: in.GlobalSecondaryIndexes, BillingMode: in.BillingMode,
	})
	if err != nil {
		return nil, fmt.Errorf("encode the table schema: %w", err)
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	if _, exists := db.tables[t.name]; exists {
		return nil, &types.ResourceInUseException{Message: aws.String("Table already exists: " + t.name)}
	}
	err = db.bolt.Update(func(tx *bolt.Tx) error {
		if _, err := tx.CreateBucketIfNotExists(t.items); err != nil {
			return err
		}
		for _, ix := range t.gsis {
			if _, err := tx.CreateBucketIfNotExists(ix.bucket); err != nil {
				return err
			}
		}
		return tx.Bucket(metaBucket).Put([]byte(tablePrefix(t.name)), schema)
	})
	if err != nil {
		return nil, &WriteError{Err: err}
	}
	db.tables[t.name] = t
	d := t.desc
	return &dynamodb.CreateTableOutput{TableDescription: &d}, nil
}

// DescribeTable returns the table's description with its item count.
func (db *DB) DescribeTable(_ context.Context, in *dynamodb.DescribeTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	t, err := db.table(in.TableName)
	if err != nil {
		return nil, err
	}
	d := t.desc
	err = db.bolt.View(func(tx *bolt.Tx) error {
		d.ItemCount = aws.Int64(int64(tx.Bucket(t.items).Stats().KeyN))
		return nil
	})
	return &dynamodb.DescribeTableOutput{Table: &d}, err
}

// GetItem reads one item; every read is strongly consistent.
func (db *DB) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	if in.ProjectionExpression != nil || len(in.AttributesToGet) > 0 {
		return nil, validation("projections are not supported")
	}
	t, err := db.table(in.TableName)
	if err != nil {
		return nil, err
	}
	k, err := t.keyOf(in.Key, true)
	if err != nil {
		return nil, err
	}
	out := &dynamodb.GetItemOutput{}
	err = db.bolt.View(func(tx *bolt.Tx) error {
		out.Item, err = t.get(tx, t.itemKey(k))
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// conditional is the part PutItem, UpdateItem and DeleteItem share: read
// the stored item under key and check the condition expression against it.
// A condition that does not hold is ConditionalCheckFailedException.
func conditional(tx *bolt.Tx, t *table, key []byte, cond *string, b *bindings,
	rv types.ReturnValuesOnConditionCheckFailure,
) (map[string]types.AttributeValue, error) {
	old, err := t.get(tx, key)
	if err != nil {
		return nil, err
	}
	ok, err := check(old, cond, b)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, conditionFailed(old, rv)
	}
	return old, nil
}

// runWrite carries a request's refusal (a condition that does not hold, a
// bad update) out of a write transaction that must not fail for it: the
// writes that share the transaction go on. fn refuses before it writes
// anything, so a refused request leaves nothing behind.
func runWrite(db *DB, fn func(tx *bolt.Tx) (refusal error, fault error)) error {
	var refusal error
	err := db.write(func(tx *bolt.Tx) error {
		var fault error
		refusal, fault = fn(tx)
		return fault
	})
	if err != nil {
		return err
	}
	return refusal
}

// PutItem writes an item when its condition holds.
func (db *DB) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if rv := in.ReturnValues; rv != "" && rv != types.ReturnValueNone && rv != types.ReturnValueAllOld {
		return nil, validation("PutItem ReturnValues %s is not supported", rv)
	}
	if err := checkSize(in.Item); err != nil {
		return nil, err
	}
	t, err := db.table(in.TableName)
	if err != nil {
		return nil, err
	}
	k, err := t.keyOf(in.Item, false)
	if err != nil {
		return nil, err
	}
	packed, err := pack(in.Item)
	if err != nil {
		return nil, err
	}
	key := t.itemKey(k)
	b := &bindings{names: in.ExpressionAttributeNames, values: in.ExpressionAttributeValues}
	out := &dynamodb.PutItemOutput{}
	err = runWrite(db, func(tx *bolt.Tx) (error, error) {
		old, err := conditional(tx, t, key, in.ConditionExpression, b, in.ReturnValuesOnConditionCheckFailure)
		if err != nil {
			return err, nil
		}
		if in.ReturnValues == types.ReturnValueAllOld {
			out.Attributes = old
		}
		return nil, t.put(tx, key, in.Item, packed, old)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// UpdateItem applies a SET update expression to an item (creating it when
// absent, as DynamoDB does) when its condition holds.
func (db *DB) UpdateItem(_ context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	switch in.ReturnValues {
	case "", types.ReturnValueNone, types.ReturnValueAllNew, types.ReturnValueAllOld:
	default:
		return nil, validation("UpdateItem ReturnValues %s is not supported", in.ReturnValues)
	}
	as, err := compileUpdate(aws.ToString(in.UpdateExpression))
	if err != nil {
		return nil, err
	}
	t, err := db.table(in.TableName)
	if err != nil {
		return nil, err
	}
	k, err := t.keyOf(in.Key, true)
	if err != nil {
		return nil, err
	}
	key := t.itemKey(k)
	b := &bindings{names: in.ExpressionAttributeNames, values: in.ExpressionAttributeValues}
	out := &dynamodb.UpdateItemOutput{}
	err = runWrite(db, func(tx *bolt.Tx) (error, error) {
		old, err := conditional(tx, t, key, in.ConditionExpression, b, in.ReturnValuesOnConditionCheckFailure)
		if err != nil {
			return err, nil
		}
		next, err := t.apply(old, in.Key, as, b)
		if err != nil {
			return err, nil
		}
		packed, err := pack(next)
		if err != nil {
			return err, nil
		}
		switch in.ReturnValues {
		case types.ReturnValueAllNew:
			out.Attributes = next
		case types.ReturnValueAllOld:
			out.Attributes = old
		}
		return nil, t.put(tx, key, next, packed, old)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// apply returns a new item: old (or the bare key) with the assignments
// made. old is left as it was (it may be returned as the item before).
func (t *table) apply(old, key map[string]types.AttributeValue, as []assignment, b *bindings) (map[string]types.AttributeValue, error) {
	next := shallow(old)
	if next == nil {
		next = shallow(key)
	}
	for _, a := range as {
		name, err := b.name(a.path)
		if err != nil {
			return nil, err
		}
		if name == t.primary.hash || name == t.primary.rng {
			return nil, validation("cannot update key attribute %s", name)
		}
		v, err := b.operand(a.operand, old)
		if err != nil {
			return nil, err
		}
		if v == nil {
			return nil, validation("the operand %s refers to an absent attribute", a.operand)
		}
		next[name] = v
	}
	if err := checkSize(next); err != nil {
		return nil, err
	}
	return next, nil
}

// DeleteItem removes an item when its condition holds; deleting an absent
// item is not an error.
func (db *DB) DeleteItem(_ context.Context, in *dynamodb.DeleteItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	if rv := in.ReturnValues; rv != "" && rv != types.ReturnValueNone && rv != types.ReturnValueAllOld {
		return nil, validation("DeleteItem ReturnValues %s is not supported", rv)
	}
	t, err := db.table(in.TableName)
	if err != nil {
		return nil, err
	}
	k, err := t.keyOf(in.Key, true)
	if err != nil {
		return nil, err
	}
	key := t.itemKey(k)
	b := &bindings{names: in.ExpressionAttributeNames, values: in.ExpressionAttributeValues}
	out := &dynamodb.DeleteItemOutput{}
	err = runWrite(db, func(tx *bolt.Tx) (error, error) {
		old, err := conditional(tx, t, key, in.ConditionExpression, b, in.ReturnValuesOnConditionCheckFailure)
		if err != nil {
			return err, nil
		}
		if in.ReturnValues == types.ReturnValueAllOld {
			out.Attributes = old
		}
		return nil, t.remove(tx, key, old)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// TransactWriteItems checks every item's condition first and writes all of
// them, in one bbolt transaction, only when all hold; otherwise it writes
// nothing and reports each item's outcome in a
// TransactionCanceledException, as DynamoDB does.
func (db *DB) TransactWriteItems(_ context.Context, in *dynamodb.TransactWriteItemsInput, _ ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	n := len(in.TransactItems)
	if n == 0 || n > maxTransactItems {
		return nil, validation("a transaction holds 1 to %d items, got %d", maxTransactItems, n)
	}
	ops := make([]txOp, n)
	seen := map[string]bool{}
	for i, ti := range in.TransactItems {
		op, err := newTxOp(ti)
		if err != nil {
			return nil, err
		}
		if op.t, err = db.table(aws.String(op.table)); err != nil {
			return nil, err
		}
		k, err := op.t.keyOf(op.key, op.item == nil)
		if err != nil {
			return nil, err
		}
		op.k = op.t.itemKey(k)
		id := op.table + "\x00" + string(op.k)
		if seen[id] {
			return nil, validation("transaction request cannot include multiple operations on one item")
		}
		seen[id] = true
		ops[i] = op
	}
	err := runWrite(db, func(tx *bolt.Tx) (error, error) {
		reasons := make([]types.CancellationReason, n)
		failed := false
		olds := make([]map[string]types.AttributeValue, n)
		for i := range ops {
			op := &ops[i]
			old, err := op.t.get(tx, op.k)
			if err != nil {
				return err, nil
			}
			olds[i] = old
			ok, err := check(old, op.cond, op.b)
			if err != nil {
				return err, nil
			}
			reasons[i].Code = aws.String("None")
			if !ok {
				failed = true
				reasons[i].Code = aws.String("ConditionalCheckFailed")
				reasons[i].Message = aws.String("The conditional request failed")
			}
		}
		if failed {
			return &types.TransactionCanceledException{
				Message:             aws.String("Transaction cancelled, please refer cancellation reasons for specific reasons"),
				CancellationReasons: reasons,
			}, nil
		}
		// Updates are computed before anything is written, so a refused
		// update leaves the transaction unapplied.
		items := make([]map[string]types.AttributeValue, n)
		packed := make([][]byte, n)
		for i := range ops {
			op := &ops[i]
			items[i], packed[i] = op.item, op.packed
			if op.update != nil {
				next, err := op.t.apply(olds[i], op.key, op.update, op.b)
				if err != nil {
					return err, nil
				}
				if packed[i], err = pack(next); err != nil {
					return err, nil
				}
				items[i] = next
			}
		}
		for i, op := range ops {
			var err error
			switch {
			case op.delete:
				err = op.t.remove(tx, op.k, olds[i])
			case items[i] != nil:
				err = op.t.put(tx, op.k, items[i], packed[i], olds[i])
			}
			if err != nil {
				return nil, err
			}
		}
		return nil, nil //nolint:nilnil // neither refused nor failed
	})
	if err != nil {
		return nil, err
	}
	return &dynamodb.TransactWriteItemsOutput{}, nil
}

// txOp is one transaction item, normalised.
type txOp struct {
	table  string
	key    map[string]types.AttributeValue // the Key, or the Put's item
	item   map[string]types.AttributeValue // what to store (Put)
	packed []byte                          // item, packed
	update []assignment
	delete bool
	cond   *string
	b      *bindings

	t *table
	k []byte
}

func newTxOp(ti types.TransactWriteItem) (txOp, error) {
	switch {
	case ti.Put != nil:
		p := ti.Put
		if err := checkSize(p.Item); err != nil {
			return txOp{}, err
		}
		packed, err := pack(p.Item)
		if err != nil {
			return txOp{}, err
		}
		return txOp{table: aws.ToString(p.TableName), key: p.Item, item: p.Item, packed: packed, cond: p.ConditionExpression,
			b: &bindings{names: p.ExpressionAttributeNames, values: p.ExpressionAttributeValues}}, nil
	case ti.Delete != nil:
		d := ti.Delete
		return txOp{table: aws.ToString(d.TableName), key: d.Key, delete: true, cond: d.ConditionExpression,
			b: &bindings{names: d.ExpressionAttributeNames, values: d.ExpressionAttributeValues}}, nil
	case ti.Update != nil:
		u := ti.Update
		as, err := compileUpdate(aws.ToString(u.UpdateExpression))
		if err != nil {
			return txOp{}, err
		}
		return txOp{table: aws.ToString(u.TableName), key: u.Key, update: as, cond: u.ConditionExpression,
			b: &bindings{names: u.ExpressionAttributeNames, values: u.ExpressionAttributeValues}}, nil
	case ti.ConditionCheck != nil:
		c := ti.ConditionCheck
		if aws.ToString(c.ConditionExpression) == "" {
			return txOp{}, validation("a ConditionCheck needs a ConditionExpression")
		}
		return txOp{table: aws.ToString(c.TableName), key: c.Key, cond: c.ConditionExpression,
			b: &bindings{names: c.ExpressionAttributeNames, values: c.ExpressionAttributeValues}}, nil
	}
	return txOp{}, validation("a transaction item needs one of Put, Update, Delete or ConditionCheck")
}

func checkSize(item map[string]types.AttributeValue) error {
	if n := itemSize(item); n > maxItemBytes {
		return validation("Item size has exceeded the maximum allowed size (%d bytes > %d)", n, maxItemBytes)
	}
	return nil
}

// Import writes items and deletes keys in one transaction, with no
// condition: it loads state kept elsewhere (a data directory of an earlier
// release) and is never a request path. fill calls put and del for each
// change in order; when it fails nothing is kept.
func (db *DB) Import(fill func(put, del func(table string, item map[string]types.AttributeValue) error) error) error {
	return db.bolt.Update(func(tx *bolt.Tx) error {
		write := func(table string, item map[string]types.AttributeValue, remove bool) error {
			t, err := db.table(&table)
			if err != nil {
				return err
			}
			k, err := t.keyOf(item, remove)
			if err != nil {
				return err
			}
			key := t.itemKey(k)
			old, err := t.get(tx, key)
			if err != nil {
				return err
			}
			if remove {
				return t.remove(tx, key, old)
			}
			packed, err := pack(item)
			if err != nil {
				return err
			}
			return t.put(tx, key, item, packed, old)
		}
		return fill(
			func(table string, item map[string]types.AttributeValue) error { return write(table, item, false) },
			func(table string, key map[string]types.AttributeValue) error { return write(table, key, true) },
		)
	})
}
