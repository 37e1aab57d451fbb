package store

import (
	"context"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// OpCounts is how many calls of each kind reached the database
// (docs/benchmarks.md turns them into DynamoDB request units).
type OpCounts struct {
	GetItem, PutItem, UpdateItem, DeleteItem, Query, TransactWriteItems int64
	// TransactItems is the number of items the transactions wrote or checked.
	TransactItems int64
}

// Total is the number of calls.
func (c OpCounts) Total() int64 {
	return c.GetItem + c.PutItem + c.UpdateItem + c.DeleteItem + c.Query + c.TransactWriteItems
}

// Counting passes every call to its database and counts it, so a benchmark
// can report the DynamoDB operations an onboarding costs.
type Counting struct {
	DynamoDB
	get, put, update, del, query, tx, txItems atomic.Int64
}

// NewCounting wraps db.
func NewCounting(db DynamoDB) *Counting { return &Counting{DynamoDB: db} }

// Counts returns the calls counted so far.
func (c *Counting) Counts() OpCounts {
	return OpCounts{
		GetItem: c.get.Load(), PutItem: c.put.Load(), UpdateItem: c.update.Load(), DeleteItem: c.del.Load(),
		Query: c.query.Load(), TransactWriteItems: c.tx.Load(), TransactItems: c.txItems.Load(),
	}
}

func (c *Counting) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c.get.Add(1)
	return c.DynamoDB.GetItem(ctx, in, opts...)
}

func (c *Counting) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	c.put.Add(1)
	return c.DynamoDB.PutItem(ctx, in, opts...)
}

func (c *Counting) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c.update.Add(1)
	return c.DynamoDB.UpdateItem(ctx, in, opts...)
}

func (c *Counting) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	c.del.Add(1)
	return c.DynamoDB.DeleteItem(ctx, in, opts...)
}

func (c *Counting) Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	c.query.Add(1)
	return c.DynamoDB.Query(ctx, in, opts...)
}

func (c *Counting) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	c.tx.Add(1)
	c.txItems.Add(int64(len(in.TransactItems)))
	return c.DynamoDB.TransactWriteItems(ctx, in, opts...)
}
