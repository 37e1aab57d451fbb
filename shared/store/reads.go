package store

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

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
	s.recent.put(k, raw)
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
	return queryPrefixWith(ctx, s, kind, pk, prefix, func(item map[string]types.AttributeValue) (T, error) {
		var v T
		err := attributevalue.UnmarshalMap(item, &v)
		return v, err
	})
}

// queryPrefixWith is queryPrefix with its own item decoder.
func queryPrefixWith[T any](ctx context.Context, s *Store, kind, pk, prefix string,
	decode func(map[string]types.AttributeValue) (T, error),
) ([]T, error) {
	res := []T{}
	err := s.queryAll(ctx, &dynamodb.QueryInput{
		KeyConditionExpression:    aws.String(exprPrefix),
		ExpressionAttributeNames:  map[string]string{"#pk": AttrPK, "#sk": AttrSK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(pk), ":prefix": str(prefix)},
	}, func(item map[string]types.AttributeValue) error {
		v, err := decode(item)
		if err != nil {
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
