package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// DefaultTable is the table name when nothing else is configured; infra
// creates it under this name.
const DefaultTable = "maasflow"

// Key attributes of the table and its global secondary indexes. Every key
// attribute is a string (S). docs/data-model.md says which record uses which
// index and with what values.
const (
	AttrPK = "pk"
	AttrSK = "sk"

	// IndexGSI1: every onboarding, newest first (gsi1pk = "ONB").
	IndexGSI1  = "gsi1"
	AttrGSI1PK = "gsi1pk"
	AttrGSI1SK = "gsi1sk"
	// IndexGSI2: onboardings by status, newest first.
	IndexGSI2  = "gsi2"
	AttrGSI2PK = "gsi2pk"
	AttrGSI2SK = "gsi2sk"
	// IndexGSI3: onboardings by site, newest first.
	IndexGSI3  = "gsi3"
	AttrGSI3PK = "gsi3pk"
	AttrGSI3SK = "gsi3sk"
	// IndexGSI4: onboardings by hostname (lower case), newest first.
	IndexGSI4  = "gsi4"
	AttrGSI4PK = "gsi4pk"
	AttrGSI4SK = "gsi4sk"

	// AttrTTL holds an epoch-seconds expiry on records DynamoDB may delete
	// by itself (enrollment tokens). Infra enables TTL on it; CreateTable
	// cannot, and local mode never expires anything.
	AttrTTL = "ttl"
)

// IndexSchema names one global secondary index and its key attributes. All
// indexes project ALL attributes.
type IndexSchema struct {
	Name         string
	PartitionKey string
	SortKey      string
}

// Indexes returns the table's global secondary indexes, for CreateTable and
// for infra.
func Indexes() []IndexSchema {
	return []IndexSchema{
		{Name: IndexGSI1, PartitionKey: AttrGSI1PK, SortKey: AttrGSI1SK},
		{Name: IndexGSI2, PartitionKey: AttrGSI2PK, SortKey: AttrGSI2SK},
		{Name: IndexGSI3, PartitionKey: AttrGSI3PK, SortKey: AttrGSI3SK},
		{Name: IndexGSI4, PartitionKey: AttrGSI4PK, SortKey: AttrGSI4SK},
	}
}

// DynamoDB is the part of the DynamoDB client the store calls; both
// *dynamodb.Client and minidyn's client satisfy it.
type DynamoDB interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
}

var _ DynamoDB = (*dynamodb.Client)(nil)

// updateAttempts bounds the read-mutate-write loop of every UpdateX: past
// it the caller gets a ItemConflictError instead of spinning under contention.
const updateAttempts = 5

// Store is the DynamoDB-backed read-model repository.
type Store struct {
	db    DynamoDB
	table string
	now   func() time.Time
	// seq numbers the timeline rows this Store writes, so rows written with
	// the same timestamp keep their order.
	seq atomic.Uint64
}

// New returns a Store over table, using now for timestamps (the clock's
// Now). An empty table means DefaultTable; a nil now means time.Now.
func New(db DynamoDB, table string, now func() time.Time) *Store {
	if table == "" {
		table = DefaultTable
	}
	if now == nil {
		now = time.Now
	}
	return &Store{db: db, table: table, now: now}
}

// CreateTable creates the table and its indexes (local mode and tests),
// billed PAY_PER_REQUEST, and waits until it is active. Creating a table that
// exists is a no-op: its schema is not compared.
func CreateTable(ctx context.Context, db DynamoDB, table string) error {
	if table == "" {
		table = DefaultTable
	}
	_, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err == nil {
		return nil
	}
	if _, missing := errors.AsType[*types.ResourceNotFoundException](err); !missing {
		return fmt.Errorf("describe table %s: %w", table, err)
	}

	out, err := db.CreateTable(ctx, tableSchema(table))
	if _, exists := errors.AsType[*types.ResourceInUseException](err); exists {
		return nil // created meanwhile by another process
	}
	if err != nil {
		return fmt.Errorf("create table %s: %w", table, err)
	}
	// DynamoDB answers CREATING and refuses writes until ACTIVE; minidyn has
	// no status and is ready at once.
	if out.TableDescription != nil && out.TableDescription.TableStatus == types.TableStatusCreating {
		w := dynamodb.NewTableExistsWaiter(db, func(o *dynamodb.TableExistsWaiterOptions) {
			o.MinDelay = time.Second
			o.MaxDelay = 10 * time.Second
		})
		if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)}, 5*time.Minute); err != nil {
			return fmt.Errorf("wait for table %s: %w", table, err)
		}
	}
	return nil
}

func tableSchema(table string) *dynamodb.CreateTableInput {
	attrs := []types.AttributeDefinition{
		{AttributeName: aws.String(AttrPK), AttributeType: types.ScalarAttributeTypeS},
		{AttributeName: aws.String(AttrSK), AttributeType: types.ScalarAttributeTypeS},
	}
	var gsis []types.GlobalSecondaryIndex
	for _, ix := range Indexes() {
		attrs = append(attrs,
			types.AttributeDefinition{AttributeName: aws.String(ix.PartitionKey), AttributeType: types.ScalarAttributeTypeS},
			types.AttributeDefinition{AttributeName: aws.String(ix.SortKey), AttributeType: types.ScalarAttributeTypeS})
		gsis = append(gsis, types.GlobalSecondaryIndex{
			IndexName: aws.String(ix.Name),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String(ix.PartitionKey), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String(ix.SortKey), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
		})
	}
	return &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: attrs,
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(AttrPK), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(AttrSK), KeyType: types.KeyTypeRange},
		},
		GlobalSecondaryIndexes: gsis,
	}
}

// --- keys

// Partition and sort key prefixes. IDs may not contain '#', so a prefix plus
// an ID never reads as another record's key.
const (
	entityAttr = "entity"

	pkSites       = "SITES"
	skSitePrefix  = "SITE#"
	pkSiteName    = "SITENAME#"
	pkSitePrefix  = "SITE#"
	skProfile     = "PROFILE#"
	skRoCE        = "ROCE#"
	pkSKUs        = "SKUS"
	skSKUPrefix   = "SKU#"
	pkNodePrefix  = "NODE#"
	pkNodeHost    = "NODEHOST#"
	pkOnboarding  = "ONB#"
	pkOpenLock    = "OPEN#"
	skEventPrefix = "EV#"
	pkToken       = "TOKEN#"
	pkAudit       = "AUDIT"

	gsiAllOnboardings = "ONB"
	gsiOnbStatus      = "ONBSTATUS#"
	gsiOnbSite        = "ONBSITE#"
	gsiOnbHost        = "ONBHOST#"
)

// sortTime is a fixed-width UTC layout: unlike RFC3339Nano it keeps trailing
// zeros, so byte order is time order.
const sortTime = "2006-01-02T15:04:05.000000000Z"

func timeKey(t time.Time) string { return t.UTC().Format(sortTime) }

type key struct{ pk, sk string }

func (k key) av() map[string]types.AttributeValue {
	return map[string]types.AttributeValue{AttrPK: str(k.pk), AttrSK: str(k.sk)}
}

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

func num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: fmt.Sprint(n)}
}

// hostKey is the form of a hostname inside keys: DNS names are
// case-insensitive (RFC 4343), so Gpu01 and gpu01 are one host.
func hostKey(h string) string { return strings.ToLower(h) }

func checkID(kind, field, v string) error {
	switch {
	case v == "":
		return &InvalidRecordError{Kind: kind, Field: field, Reason: "is required"}
	case strings.ContainsAny(v, "#\x00"):
		return &InvalidRecordError{Kind: kind, Field: field, Reason: "must not contain '#'"}
	}
	return nil
}

// --- items

// marshalItem turns rec into an item under k, tagged with its entity name,
// plus extra attributes (index keys).
func marshalItem(rec any, k key, entity string, extra map[string]string) (map[string]types.AttributeValue, error) {
	item, err := attributevalue.MarshalMap(rec)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", entity, err)
	}
	pruneEmpty(item)
	item[AttrPK] = str(k.pk)
	item[AttrSK] = str(k.sk)
	item[entityAttr] = str(entity)
	for name, v := range extra {
		if v != "" { // index keys may not be empty; absent means "not indexed"
			item[name] = str(v)
		}
	}
	return item, nil
}

// pruneEmpty drops empty maps and lists (an all-inherit Policy, no
// capabilities): they decode to the same zero values when absent, and
// minidyn's expression evaluator rejects any item that holds one.
func pruneEmpty(m map[string]types.AttributeValue) {
	for name, v := range m {
		switch v := v.(type) {
		case *types.AttributeValueMemberM:
			pruneEmpty(v.Value)
			if len(v.Value) == 0 {
				delete(m, name)
			}
		case *types.AttributeValueMemberL:
			if len(v.Value) == 0 {
				delete(m, name)
			}
		}
	}
}

// getRaw reads the item under k (strongly consistent, as every
// read-modify-write needs); found is false when there is none.
func (s *Store) getRaw(ctx context.Context, k key) (item map[string]types.AttributeValue, found bool, err error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            k.av(),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, false, err
	}
	return out.Item, len(out.Item) > 0, nil
}

// get reads the record under k into out: ItemNotFoundError when absent.
func (s *Store) get(ctx context.Context, kind, id string, k key, out any) error {
	raw, found, err := s.getRaw(ctx, k)
	if err != nil {
		return fmt.Errorf("get %s %s: %w", kind, id, err)
	}
	if !found {
		return &ItemNotFoundError{Kind: kind, ID: id}
	}
	if err := attributevalue.UnmarshalMap(raw, out); err != nil {
		return fmt.Errorf("decode %s %s: %w", kind, id, err)
	}
	return nil
}

// queryAll runs q page by page and hands every item to each.
func (s *Store) queryAll(ctx context.Context, q *dynamodb.QueryInput, each func(map[string]types.AttributeValue) error) error {
	q.TableName = aws.String(s.table)
	for {
		out, err := s.db.Query(ctx, q)
		if err != nil {
			return err
		}
		for _, item := range out.Items {
			if err := each(item); err != nil {
				return err
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			return nil
		}
		q.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// queryPrefix lists the records of partition pk whose sort key starts with
// prefix, in sort-key order.
func queryPrefix[T any](ctx context.Context, s *Store, kind, pk, prefix string) ([]T, error) {
	res := []T{}
	err := s.queryAll(ctx, &dynamodb.QueryInput{
		KeyConditionExpression:    aws.String(exprPrefix),
		ExpressionAttributeNames:  map[string]string{"#pk": AttrPK, "#sk": AttrSK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(pk), ":prefix": str(prefix)},
	}, func(item map[string]types.AttributeValue) error {
		var v T
		if err := attributevalue.UnmarshalMap(item, &v); err != nil {
			return fmt.Errorf("decode %s: %w", kind, err)
		}
		res = append(res, v)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", kind, err)
	}
	return res, nil
}

// --- query expressions: constants, so local mode can register a native
// matcher for each (local.go). Every alias names the attribute it stands
// for, which lets a matcher know the attribute from the expression alone.

const (
	exprPartition = "#pk = :pk"
	exprPrefix    = "#pk = :pk AND begins_with(#sk, :prefix)"
	exprConsume   = "SET #consumed = :consumed"
	exprRevoke    = "SET #revoked = :revoked"
	// exprRevokeClosed revokes the token of a run being closed, saying so.
	exprRevokeClosed = "SET #revoked = :revoked, #reason = :reason"
	// exprRefused marks the first refused enrollment of a closed run.
	exprRefused = "SET #refused = :refused"
)

// exprIndexPartition is the key condition on an index's partition key.
func exprIndexPartition(attr string) string { return "#" + attr + " = :pk" }

// --- conditional writes

const (
	condAbsent  = "attribute_not_exists(#pk)"
	condVersion = "#version = :version"
)

var errVersionConflict = errors.New("version conflict")

func isConditionFailed(err error) bool {
	_, ok := errors.AsType[*types.ConditionalCheckFailedException](err)
	return ok
}

// txCodes returns the per-item cancellation codes of a cancelled
// transaction ("None", "ConditionalCheckFailed", "TransactionConflict", …).
func txCodes(err error) ([]string, bool) {
	tc, ok := errors.AsType[*types.TransactionCanceledException](err)
	if !ok {
		return nil, false
	}
	codes := make([]string, len(tc.CancellationReasons))
	for i, r := range tc.CancellationReasons {
		codes[i] = aws.ToString(r.Code)
	}
	return codes, true
}

// txFailed reports whether transaction item i failed its condition.
func txFailed(codes []string, i int) bool {
	return i < len(codes) && codes[i] == "ConditionalCheckFailed"
}

// txContended reports whether DynamoDB cancelled the transaction because of
// a concurrent transaction on the same items (worth a retry).
func txContended(codes []string) bool {
	for _, c := range codes {
		if c == "TransactionConflict" {
			return true
		}
	}
	return false
}

func (s *Store) putIfAbsent(item map[string]types.AttributeValue) types.TransactWriteItem {
	return types.TransactWriteItem{Put: &types.Put{
		TableName:                aws.String(s.table),
		Item:                     item,
		ConditionExpression:      aws.String(condAbsent),
		ExpressionAttributeNames: map[string]string{"#pk": AttrPK},
	}}
}

func (s *Store) putIfVersion(item map[string]types.AttributeValue, version int64) types.TransactWriteItem {
	return types.TransactWriteItem{Put: &types.Put{
		TableName:                 aws.String(s.table),
		Item:                      item,
		ConditionExpression:       aws.String(condVersion),
		ExpressionAttributeNames:  map[string]string{"#version": "version"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":version": num(version)},
	}}
}

// ownedBy puts or deletes a lock item only when it is free or already held
// by owner (attribute ownerAttr), so a repeated write is harmless.
const condOwned = "attribute_not_exists(#pk) OR #owner = :owner"

func (s *Store) putLock(item map[string]types.AttributeValue, ownerAttr, owner string) types.TransactWriteItem {
	return types.TransactWriteItem{Put: &types.Put{
		TableName:                 aws.String(s.table),
		Item:                      item,
		ConditionExpression:       aws.String(condOwned),
		ExpressionAttributeNames:  map[string]string{"#pk": AttrPK, "#owner": ownerAttr},
		ExpressionAttributeValues: map[string]types.AttributeValue{":owner": str(owner)},
	}}
}

func (s *Store) deleteLock(k key, ownerAttr, owner string) types.TransactWriteItem {
	return types.TransactWriteItem{Delete: &types.Delete{
		TableName:                 aws.String(s.table),
		Key:                       k.av(),
		ConditionExpression:       aws.String(condOwned),
		ExpressionAttributeNames:  map[string]string{"#pk": AttrPK, "#owner": ownerAttr},
		ExpressionAttributeValues: map[string]types.AttributeValue{":owner": str(owner)},
	}}
}

func (s *Store) exists(k key) types.TransactWriteItem {
	return types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
		TableName:                aws.String(s.table),
		Key:                      k.av(),
		ConditionExpression:      aws.String("attribute_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#pk": AttrPK},
	}}
}

// write runs one conditional write: a single item goes through PutItem or
// DeleteItem (cheaper than a transaction, and minidyn snapshots the whole
// table per transaction); more go through one TransactWriteItems. A failed
// condition comes back as a TransactionCanceledException in both cases so
// callers inspect one shape.
func (s *Store) write(ctx context.Context, items ...types.TransactWriteItem) error {
	if len(items) == 1 && items[0].Put != nil {
		p := items[0].Put
		_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: p.TableName, Item: p.Item, ConditionExpression: p.ConditionExpression,
			ExpressionAttributeNames: p.ExpressionAttributeNames, ExpressionAttributeValues: p.ExpressionAttributeValues,
		})
		if isConditionFailed(err) {
			return &types.TransactionCanceledException{
				Message:             aws.String("conditional check failed"),
				CancellationReasons: []types.CancellationReason{{Code: aws.String("ConditionalCheckFailed")}},
			}
		}
		return err
	}
	_, err := s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	return err
}

// updateLoop is the optimistic-concurrency cycle of every UpdateX: read the
// record, let mutate change a private copy, let prepare restore what may
// not change and bump the version, and write it back on condition that the
// version is still the one read. write returns errVersionConflict when
// that condition failed, and the cycle starts again; mutate must therefore
// be safe to call more than once.
func updateLoop[T any](ctx context.Context, s *Store, kind, id string, k key, mutate Mutator[T],
	prepare func(prev, next *T), write func(ctx context.Context, prev, next *T) error,
) (T, error) {
	var zero T
	for range updateAttempts {
		raw, found, err := s.getRaw(ctx, k)
		if err != nil {
			return zero, fmt.Errorf("get %s %s: %w", kind, id, err)
		}
		if !found {
			return zero, &ItemNotFoundError{Kind: kind, ID: id}
		}
		// Two decodes, so that mutate cannot reach prev through shared
		// pointers (policy fields, error, timestamps).
		var prev, next T
		if err := attributevalue.UnmarshalMap(raw, &prev); err != nil {
			return zero, fmt.Errorf("decode %s %s: %w", kind, id, err)
		}
		if err := attributevalue.UnmarshalMap(raw, &next); err != nil {
			return zero, fmt.Errorf("decode %s %s: %w", kind, id, err)
		}
		if err := mutate(&next); err != nil {
			return zero, err
		}
		prepare(&prev, &next)
		err = write(ctx, &prev, &next)
		if errors.Is(err, errVersionConflict) {
			continue
		}
		if err != nil {
			return zero, err
		}
		return next, nil
	}
	return zero, &ItemConflictError{Kind: kind, ID: id, Reason: fmt.Sprintf("concurrent updates, gave up after %d attempts", updateAttempts)}
}

// putVersioned writes item over the record whose version was prev.
func (s *Store) putVersioned(ctx context.Context, kind, id string, item map[string]types.AttributeValue, prev int64) error {
	err := s.write(ctx, s.putIfVersion(item, prev))
	if codes, ok := txCodes(err); ok && (txFailed(codes, 0) || txContended(codes)) {
		return errVersionConflict
	}
	if err != nil {
		return fmt.Errorf("update %s %s: %w", kind, id, err)
	}
	return nil
}

// createOne writes a record that must not exist yet.
func (s *Store) createOne(ctx context.Context, kind, id string, item map[string]types.AttributeValue) error {
	err := s.write(ctx, s.putIfAbsent(item))
	if codes, ok := txCodes(err); ok && txFailed(codes, 0) {
		return &ItemConflictError{Kind: kind, ID: id, Reason: "already exists"}
	}
	if err != nil {
		return fmt.Errorf("create %s %s: %w", kind, id, err)
	}
	return nil
}

// stamp fills the bookkeeping fields of a record being created.
func stamp(now time.Time, created, updated *time.Time, version *int64) {
	if created.IsZero() {
		*created = now
	}
	if updated.IsZero() {
		*updated = *created
	}
	*version = 1
}

// timelineSuffix makes a workflow row's sort key unique: a per-Store counter
// keeps same-instant rows in write order, the random part separates writers.
func (s *Store) timelineSuffix() string {
	return fmt.Sprintf("W%012d%08x", s.seq.Add(1), rand.Uint32()) //nolint:gosec // G404: separates writers, guesses gain nothing
}
