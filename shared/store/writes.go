package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// This file holds the conditional writes every record kind is built on.

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
	for attempt := range updateAttempts {
		// The first attempt may start from the item a get just read; a
		// stale one fails the version condition and the next attempt reads.
		raw, cached := s.recent.take(k)
		found := cached
		if attempt > 0 || !cached {
			cached = false
			var err error
			if raw, found, err = s.getRaw(ctx, k); err != nil {
				return zero, fmt.Errorf("get %s %s: %w", kind, id, err)
			}
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
			if cached {
				continue // judged on a guess: judge again on the stored record
			}
			return zero, err
		}
		prepare(&prev, &next)
		err := write(ctx, &prev, &next)
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
