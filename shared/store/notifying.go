package store

import (
	"context"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// Notifying passes every call to its database and, after each write that
// succeeded, wakes whoever waits on Changed. Local mode runs every writer of
// the table in its own process, so this is where a reader learns of a
// change without re-reading: the API's streams wait on it instead of
// polling the store. It says only that something changed, not what; a
// reader re-reads what it shows. A failed write wakes no one: the local
// engine writes nothing when it answers an error.
type Notifying struct {
	DynamoDB
	mu   sync.Mutex
	next chan struct{} // closed at the next write; nil until someone waits
}

// NewNotifying wraps db.
func NewNotifying(db DynamoDB) *Notifying { return &Notifying{DynamoDB: db} }

// Changed returns a channel closed at the next successful write. Take it
// before reading, so a write during the read is not missed.
func (n *Notifying) Changed() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.next == nil {
		n.next = make(chan struct{})
	}
	return n.next
}

// notify wakes every waiter once; no waiter, no work.
func (n *Notifying) notify(err error) {
	if err != nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.next != nil {
		close(n.next)
		n.next = nil
	}
}

func (n *Notifying) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	out, err := n.DynamoDB.PutItem(ctx, in, opts...)
	n.notify(err)
	return out, err
}

func (n *Notifying) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	out, err := n.DynamoDB.UpdateItem(ctx, in, opts...)
	n.notify(err)
	return out, err
}

func (n *Notifying) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	out, err := n.DynamoDB.DeleteItem(ctx, in, opts...)
	n.notify(err)
	return out, err
}

func (n *Notifying) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	out, err := n.DynamoDB.TransactWriteItems(ctx, in, opts...)
	n.notify(err)
	return out, err
}
