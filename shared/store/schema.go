package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// This file is the table's schema: its name, key attributes and indexes
// (which infra imports to declare the table) and CreateTable for local
// mode and tests.

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
