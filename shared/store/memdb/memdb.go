// Package memdb is an in-memory database that speaks the part of the
// DynamoDB API maasflow's store uses: tables with string keys and global
// secondary indexes (projection ALL), GetItem, PutItem, UpdateItem (SET),
// DeleteItem, Query, Scan and TransactWriteItems, with condition
// expressions evaluated as DynamoDB does (expr.go lists the grammar).
//
// It exists for local mode, where one process holds every onboarding: the
// base table and each index are B-trees (github.com/google/btree), so a
// write costs O(log n), a Query page costs O(log n + page) and a
// transaction checks and writes only its own items. Nothing in it depends
// on how many other records the table holds. Requests outside the subset
// (filter or projection expressions, non-string keys, REMOVE/ADD updates)
// fail with a ValidationException rather than being half-served.
//
// Items are stored packed into one byte slice each (pack.go), which the
// garbage collector does not scan; a read returns a fresh map whose strings
// and binaries point into the packed slice, so callers must not modify a
// binary value in place (the SDK's decoders never do).
package memdb

import (
	"context"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/google/btree"
)

// maxItemBytes is DynamoDB's item size limit (names plus values).
const maxItemBytes = 400 * 1024

// maxTransactItems is DynamoDB's limit on one TransactWriteItems.
const maxTransactItems = 100

// DB is the database: safe for concurrent use; reads run in parallel,
// writes one at a time.
type DB struct {
	mu     sync.RWMutex
	tables map[string]*table
}

// New returns an empty database.
func New() *DB { return &DB{tables: map[string]*table{}} }

type tkey struct{ pk, sk string }

// entry is one row of an index tree: the index key, then the table key,
// which orders rows that share an index key and finds the item.
type entry struct {
	ipk, isk string
	key      tkey
}

func less(a, b entry) bool {
	switch {
	case a.ipk != b.ipk:
		return a.ipk < b.ipk
	case a.isk != b.isk:
		return a.isk < b.isk
	case a.key.pk != b.key.pk:
		return a.key.pk < b.key.pk
	}
	return a.key.sk < b.key.sk
}

type index struct {
	name       string
	hash, rng  string // key attribute names; rng is "" without a sort key
	tree       *btree.BTreeG[entry]
	projection types.ProjectionType
}

// entryOf returns item's row in ix; ok is false when the item lacks the
// index's key attributes (sparse index).
func (ix *index) entryOf(k tkey, item map[string]types.AttributeValue) (entry, bool) {
	pk, ok := sAttr(item, ix.hash)
	if !ok {
		return entry{}, false
	}
	var sk string
	if ix.rng != "" {
		if sk, ok = sAttr(item, ix.rng); !ok {
			return entry{}, false
		}
	}
	return entry{ipk: pk, isk: sk, key: k}, true
}

type table struct {
	desc    types.TableDescription
	primary *index
	gsis    map[string]*index
	items   map[tkey][]byte // packed (pack.go)
}

// get unpacks the item under k: a fresh map, nil when there is none.
func (t *table) get(k tkey) map[string]types.AttributeValue { return unpack(t.items[k]) }

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
	t, ok := db.tables[aws.ToString(name)]
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

// put stores item, packed, under k in place of old (the stored item,
// unpacked; nil when there is none) and keeps every index in step.
func (t *table) put(k tkey, item map[string]types.AttributeValue, packed []byte, old map[string]types.AttributeValue) {
	t.remove(k, old)
	t.items[k] = packed
	t.primary.tree.ReplaceOrInsert(entry{ipk: k.pk, isk: k.sk, key: k})
	for _, ix := range t.gsis {
		if e, ok := ix.entryOf(k, item); ok {
			ix.tree.ReplaceOrInsert(e)
		}
	}
}

// remove deletes the item under k, old unpacked: every write has read it
// already for its condition, and the indexes need its keys.
func (t *table) remove(k tkey, old map[string]types.AttributeValue) {
	if old == nil {
		return
	}
	delete(t.items, k)
	t.primary.tree.Delete(entry{ipk: k.pk, isk: k.sk, key: k})
	for _, ix := range t.gsis {
		if e, ok := ix.entryOf(k, old); ok {
			ix.tree.Delete(e)
		}
	}
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
		e.Item = item // unpacked for this write alone
	}
	return e
}

// CreateTable creates a table with string key attributes and global
// secondary indexes; it is ACTIVE at once.
func (db *DB) CreateTable(_ context.Context, in *dynamodb.CreateTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error) {
	name := aws.ToString(in.TableName)
	if name == "" {
		return nil, validation("TableName is required")
	}
	attrTypes := map[string]types.ScalarAttributeType{}
	for _, a := range in.AttributeDefinitions {
		attrTypes[aws.ToString(a.AttributeName)] = a.AttributeType
	}
	mk := func(name string, ks []types.KeySchemaElement, proj types.ProjectionType) (*index, error) {
		ix := &index{name: name, tree: btree.NewG(32, less), projection: proj}
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
			return nil, validation("index %s has no HASH key", name)
		}
		return ix, nil
	}
	primary, err := mk("", in.KeySchema, types.ProjectionTypeAll)
	if err != nil {
		return nil, err
	}
	t := &table{primary: primary, gsis: map[string]*index{}, items: map[tkey][]byte{}}
	var gsiDescs []types.GlobalSecondaryIndexDescription
	for _, g := range in.GlobalSecondaryIndexes {
		proj := types.ProjectionTypeAll
		if g.Projection != nil && g.Projection.ProjectionType != "" {
			proj = g.Projection.ProjectionType
		}
		if proj != types.ProjectionTypeAll {
			return nil, validation("index %s: only projection ALL is supported", aws.ToString(g.IndexName))
		}
		ix, err := mk(aws.ToString(g.IndexName), g.KeySchema, proj)
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

	db.mu.Lock()
	defer db.mu.Unlock()
	if _, exists := db.tables[name]; exists {
		return nil, &types.ResourceInUseException{Message: aws.String("Table already exists: " + name)}
	}
	db.tables[name] = t
	d := t.desc
	return &dynamodb.CreateTableOutput{TableDescription: &d}, nil
}

// DescribeTable returns the table's description with its item count.
func (db *DB) DescribeTable(_ context.Context, in *dynamodb.DescribeTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	db.mu.RLock()
	defer db.mu.RUnlock()
	t, err := db.table(in.TableName)
	if err != nil {
		return nil, err
	}
	d := t.desc
	d.ItemCount = aws.Int64(int64(len(t.items)))
	return &dynamodb.DescribeTableOutput{Table: &d}, nil
}

// GetItem reads one item; every read is strongly consistent.
func (db *DB) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	if in.ProjectionExpression != nil || len(in.AttributesToGet) > 0 {
		return nil, validation("projections are not supported")
	}
	db.mu.RLock()
	defer db.mu.RUnlock()
	t, err := db.table(in.TableName)
	if err != nil {
		return nil, err
	}
	k, err := t.keyOf(in.Key, true)
	if err != nil {
		return nil, err
	}
	return &dynamodb.GetItemOutput{Item: t.get(k)}, nil
}

// checkedWrite is a single-item write whose condition held: the table, the
// item's key, the expression bindings and the item as it was.
type checkedWrite struct {
	t   *table
	k   tkey
	b   *bindings
	old map[string]types.AttributeValue
}

// conditional is the part PutItem, UpdateItem and DeleteItem share: find
// the table and the item's key (exact: the map is the key alone, not a
// whole item) and check the condition expression against the stored item.
// A condition that does not hold is ConditionalCheckFailedException. The
// caller holds db.mu for writing.
func (db *DB) conditional(tableName *string, item map[string]types.AttributeValue, exact bool, cond *string,
	names map[string]string, values map[string]types.AttributeValue, rv types.ReturnValuesOnConditionCheckFailure,
) (checkedWrite, error) {
	t, err := db.table(tableName)
	if err != nil {
		return checkedWrite{}, err
	}
	k, err := t.keyOf(item, exact)
	if err != nil {
		return checkedWrite{}, err
	}
	b := &bindings{names: names, values: values}
	old := t.get(k)
	ok, err := check(old, cond, b)
	if err != nil {
		return checkedWrite{}, err
	}
	if !ok {
		return checkedWrite{}, conditionFailed(old, rv)
	}
	return checkedWrite{t: t, k: k, b: b, old: old}, nil
}

// PutItem writes an item when its condition holds.
func (db *DB) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if rv := in.ReturnValues; rv != "" && rv != types.ReturnValueNone && rv != types.ReturnValueAllOld {
		return nil, validation("PutItem ReturnValues %s is not supported", rv)
	}
	if err := checkSize(in.Item); err != nil {
		return nil, err
	}
	item := in.Item // read only: what is stored is the packed copy
	packed, err := pack(item)
	if err != nil {
		return nil, err
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	w, err := db.conditional(in.TableName, item, false, in.ConditionExpression,
		in.ExpressionAttributeNames, in.ExpressionAttributeValues, in.ReturnValuesOnConditionCheckFailure)
	if err != nil {
		return nil, err
	}
	old := w.old
	w.t.put(w.k, item, packed, old)
	out := &dynamodb.PutItemOutput{}
	if in.ReturnValues == types.ReturnValueAllOld {
		out.Attributes = old
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
	db.mu.Lock()
	defer db.mu.Unlock()
	w, err := db.conditional(in.TableName, in.Key, true, in.ConditionExpression,
		in.ExpressionAttributeNames, in.ExpressionAttributeValues, in.ReturnValuesOnConditionCheckFailure)
	if err != nil {
		return nil, err
	}
	old := w.old
	next, err := w.t.apply(old, in.Key, as, w.b)
	if err != nil {
		return nil, err
	}
	packed, err := pack(next)
	if err != nil {
		return nil, err
	}
	w.t.put(w.k, next, packed, old)
	out := &dynamodb.UpdateItemOutput{}
	switch in.ReturnValues {
	case types.ReturnValueAllNew:
		out.Attributes = next // what is stored is its packed copy
	case types.ReturnValueAllOld:
		out.Attributes = old
	}
	return out, nil
}

// apply returns a new item: old (or the bare key) with the assignments
// made. old is left as it was (it may be returned as the item before); the
// caller packs the new item, which copies it.
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
	db.mu.Lock()
	defer db.mu.Unlock()
	w, err := db.conditional(in.TableName, in.Key, true, in.ConditionExpression,
		in.ExpressionAttributeNames, in.ExpressionAttributeValues, in.ReturnValuesOnConditionCheckFailure)
	if err != nil {
		return nil, err
	}
	old := w.old
	w.t.remove(w.k, old)
	out := &dynamodb.DeleteItemOutput{}
	if in.ReturnValues == types.ReturnValueAllOld {
		out.Attributes = old
	}
	return out, nil
}

// TransactWriteItems checks every item's condition first and writes all of
// them only when all hold; otherwise it writes nothing and reports each
// item's outcome in a TransactionCanceledException, as DynamoDB does.
func (db *DB) TransactWriteItems(_ context.Context, in *dynamodb.TransactWriteItemsInput, _ ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	n := len(in.TransactItems)
	if n == 0 || n > maxTransactItems {
		return nil, validation("a transaction holds 1 to %d items, got %d", maxTransactItems, n)
	}
	ops := make([]txOp, n)
	for i, ti := range in.TransactItems {
		op, err := newTxOp(ti)
		if err != nil {
			return nil, err
		}
		ops[i] = op
	}

	db.mu.Lock()
	defer db.mu.Unlock()
	seen := map[string]map[tkey]bool{}
	for i := range ops {
		op := &ops[i]
		t, err := db.table(aws.String(op.table))
		if err != nil {
			return nil, err
		}
		op.t = t
		if op.k, err = t.keyOf(op.key, op.item == nil); err != nil {
			return nil, err
		}
		if seen[op.table] == nil {
			seen[op.table] = map[tkey]bool{}
		}
		if seen[op.table][op.k] {
			return nil, validation("transaction request cannot include multiple operations on one item")
		}
		seen[op.table][op.k] = true
	}
	reasons := make([]types.CancellationReason, n)
	failed := false
	for i := range ops {
		op := &ops[i]
		op.old = op.t.get(op.k)
		ok, err := check(op.old, op.cond, op.b)
		if err != nil {
			return nil, err
		}
		reasons[i].Code = aws.String("None")
		if !ok {
			failed = true
			reasons[i].Code = aws.String("ConditionalCheckFailed")
			reasons[i].Message = aws.String("The conditional request failed")
		}
	}
	if failed {
		return nil, &types.TransactionCanceledException{
			Message:             aws.String("Transaction cancelled, please refer cancellation reasons for specific reasons"),
			CancellationReasons: reasons,
		}
	}
	// Updates are computed before anything is written, so a refused update
	// leaves the transaction unapplied.
	for i := range ops {
		op := &ops[i]
		if op.update != nil {
			next, err := op.t.apply(op.old, op.key, op.update, op.b)
			if err != nil {
				return nil, err
			}
			if op.packed, err = pack(next); err != nil {
				return nil, err
			}
			op.item = next
		}
	}
	for _, op := range ops {
		switch {
		case op.delete:
			op.t.remove(op.k, op.old)
		case op.item != nil:
			op.t.put(op.k, op.item, op.packed, op.old)
		}
	}
	return &dynamodb.TransactWriteItemsOutput{}, nil
}

// txOp is one transaction item, normalised.
type txOp struct {
	table  string
	key    map[string]types.AttributeValue // the Key, or the Put's item
	item   map[string]types.AttributeValue // what to store (Put, Update)
	packed []byte                          // item, packed
	update []assignment
	delete bool
	cond   *string
	b      *bindings

	t   *table
	k   tkey
	old map[string]types.AttributeValue // the stored item, unpacked for its condition
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
		item := p.Item // read only: what is stored is the packed copy
		return txOp{table: aws.ToString(p.TableName), key: item, item: item, packed: packed, cond: p.ConditionExpression,
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
