package store

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"

	"github.com/maasflow/maasflow/shared/domain"
)

// An admin request's audit entry is written in the same DynamoDB
// transaction as the change it records, or the change is not made
// (docs/decisions.md, "Audit rides the change"). The API puts a
// PendingAudit in the request's context; the first write the store makes
// with that context carries it: a PutItem, UpdateItem or DeleteItem turns
// into a TransactWriteItems with the audit entry added, a transaction gets
// the entry as its last item. The writes after it are plain again.

// PendingAudit is the audit entry of one request, waiting for the write
// that carries it. Safe for concurrent use: of two writes racing for it,
// one carries it and the other goes without.
type PendingAudit struct {
	mu       sync.Mutex
	entry    domain.AuditEntry
	inFlight bool
	written  bool
}

// NewPendingAudit returns e waiting for its write; an empty ID gets a
// fresh one (Time must be set: the entry is written as it is).
func NewPendingAudit(e domain.AuditEntry) *PendingAudit {
	if e.ID == "" {
		e.ID = uuid.NewString()
	}
	return &PendingAudit{entry: e}
}

// SetTarget changes the target of an entry not yet written (a handler that
// learns the id of what it creates refines the target before writing it).
func (p *PendingAudit) SetTarget(target string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.written && !p.inFlight {
		p.entry.Target = target
	}
}

// Written reports whether a committed write carried the entry.
func (p *PendingAudit) Written() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.written
}

// MarkWritten records that the entry was written on its own (AppendAudit),
// ahead of a change made outside DynamoDB, so no later write carries it.
func (p *PendingAudit) MarkWritten() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.written = true
}

// Entry returns the entry as it is (or was) written.
func (p *PendingAudit) Entry() domain.AuditEntry {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.entry
}

// take hands the entry to one write; ok is false when it is written or
// another write carries it right now.
func (p *PendingAudit) take() (domain.AuditEntry, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.written || p.inFlight {
		return domain.AuditEntry{}, false
	}
	p.inFlight = true
	return p.entry, true
}

// settle ends the write that took the entry: committed or not.
func (p *PendingAudit) settle(committed bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.inFlight = false
	p.written = p.written || committed
}

type pendingAuditKey struct{}

// WithPendingAudit returns ctx whose first store write carries p; a nil p
// hides an entry ctx already holds (a write that must go on its own).
func WithPendingAudit(ctx context.Context, p *PendingAudit) context.Context {
	return context.WithValue(ctx, pendingAuditKey{}, p)
}

// withoutPendingAudit hides ctx's pending entry from a write that is not
// the change the entry records.
func withoutPendingAudit(ctx context.Context) context.Context { return WithPendingAudit(ctx, nil) }

func pendingAuditFrom(ctx context.Context) *PendingAudit {
	p, _ := ctx.Value(pendingAuditKey{}).(*PendingAudit)
	return p
}

// AuditWriteError: a write that had to carry its request's audit entry
// failed as a whole, so neither the change nor the entry was written.
type AuditWriteError struct {
	Action string `json:"action"`
	Reason string `json:"reason"`
}

func (e *AuditWriteError) Error() string {
	return fmt.Sprintf("%s: not changed: the change and its audit entry could not be written together: %s", e.Action, e.Reason)
}

// auditingDB passes every call to its database; a write whose context
// holds a pending audit entry is turned into a transaction with the entry.
type auditingDB struct {
	DynamoDB
	table string
}

func (a auditingDB) auditPut(e domain.AuditEntry) (types.TransactWriteItem, error) {
	e.Time = e.Time.UTC()
	item, err := marshalItem(e, key{pkAudit, timeKey(e.Time) + "#" + e.ID}, "audit", nil)
	if err != nil {
		return types.TransactWriteItem{}, err
	}
	return types.TransactWriteItem{Put: &types.Put{TableName: aws.String(a.table), Item: item}}, nil
}

// carry writes items plus the pending entry in one transaction. handled
// is false when ctx has no entry waiting: the caller writes as usual.
func (a auditingDB) carry(ctx context.Context, items []types.TransactWriteItem, opts []func(*dynamodb.Options)) (handled bool, err error) {
	p := pendingAuditFrom(ctx)
	if p == nil {
		return false, nil
	}
	e, ok := p.take()
	if !ok {
		return false, nil
	}
	committed := false
	defer func() { p.settle(committed) }()
	if len(items) >= maxTxItems {
		return true, &AuditWriteError{Action: e.Action, Reason: "the transaction has no room for the audit entry"}
	}
	put, err := a.auditPut(e)
	if err != nil {
		return true, &AuditWriteError{Action: e.Action, Reason: err.Error()}
	}
	tx := append(append(make([]types.TransactWriteItem, 0, len(items)+1), items...), put)
	_, err = a.DynamoDB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: tx}, opts...)
	if err == nil {
		committed = true
		return true, nil
	}
	if codes, ok := txCodes(err); ok {
		if txContended(codes) {
			return true, err // the caller's retry loop writes again, entry included
		}
		for i := range items {
			if txFailed(codes, i) {
				// The change's own condition refused it: the caller's
				// answer (conflict, not found), not an audit failure.
				return true, err
			}
		}
	}
	return true, &AuditWriteError{Action: e.Action, Reason: err.Error()}
}

// conditionFailed reports whether a carried single write failed its own
// condition, which the plain call reports as ConditionalCheckFailedException.
func conditionFailed(err error) error {
	if codes, ok := txCodes(err); ok && txFailed(codes, 0) {
		return &types.ConditionalCheckFailedException{Message: aws.String("The conditional request failed")}
	}
	return err
}

func (a auditingDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if in.ReturnValues == "" || in.ReturnValues == types.ReturnValueNone {
		handled, err := a.carry(ctx, []types.TransactWriteItem{{Put: &types.Put{
			TableName: in.TableName, Item: in.Item, ConditionExpression: in.ConditionExpression,
			ExpressionAttributeNames: in.ExpressionAttributeNames, ExpressionAttributeValues: in.ExpressionAttributeValues,
		}}}, opts)
		if handled {
			return &dynamodb.PutItemOutput{}, conditionFailed(err)
		}
	}
	return a.DynamoDB.PutItem(ctx, in, opts...)
}

func (a auditingDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if in.ReturnValues == "" || in.ReturnValues == types.ReturnValueNone {
		handled, err := a.carry(ctx, []types.TransactWriteItem{{Update: &types.Update{
			TableName: in.TableName, Key: in.Key, UpdateExpression: in.UpdateExpression, ConditionExpression: in.ConditionExpression,
			ExpressionAttributeNames: in.ExpressionAttributeNames, ExpressionAttributeValues: in.ExpressionAttributeValues,
		}}}, opts)
		if handled {
			return &dynamodb.UpdateItemOutput{}, conditionFailed(err)
		}
	}
	return a.DynamoDB.UpdateItem(ctx, in, opts...)
}

// DeleteItem of a request with a pending entry runs in a transaction, which
// returns no old image: a delete that asks for one (ALL_OLD, to tell an
// absent item) is made conditional on the item existing, and a success
// returns the key as its old image.
func (a auditingDB) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	del := &types.Delete{
		TableName: in.TableName, Key: in.Key, ConditionExpression: in.ConditionExpression,
		ExpressionAttributeNames: in.ExpressionAttributeNames, ExpressionAttributeValues: in.ExpressionAttributeValues,
	}
	wantsOld := in.ReturnValues == types.ReturnValueAllOld
	if wantsOld {
		if in.ConditionExpression != nil {
			return a.DynamoDB.DeleteItem(ctx, in, opts...) // no such caller; keep the plain call's meaning
		}
		del.ConditionExpression = aws.String("attribute_exists(#pk)")
		del.ExpressionAttributeNames = map[string]string{"#pk": AttrPK}
	}
	handled, err := a.carry(ctx, []types.TransactWriteItem{{Delete: del}}, opts)
	switch {
	case !handled:
		return a.DynamoDB.DeleteItem(ctx, in, opts...)
	case wantsOld && err != nil && errors.As(conditionFailed(err), new(*types.ConditionalCheckFailedException)):
		return &dynamodb.DeleteItemOutput{}, nil // nothing to delete
	case err != nil:
		return &dynamodb.DeleteItemOutput{}, conditionFailed(err)
	case wantsOld:
		return &dynamodb.DeleteItemOutput{Attributes: in.Key}, nil
	}
	return &dynamodb.DeleteItemOutput{}, nil
}

func (a auditingDB) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	if in.ClientRequestToken == nil && in.ReturnConsumedCapacity == "" && in.ReturnItemCollectionMetrics == "" {
		if handled, err := a.carry(ctx, in.TransactItems, opts); handled {
			return &dynamodb.TransactWriteItemsOutput{}, err
		}
	}
	return a.DynamoDB.TransactWriteItems(ctx, in, opts...)
}
