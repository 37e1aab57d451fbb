package store

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// listIndexPage reads one page, newest first, of the records in index
// partition ix that keep returns true for: the listing of decommissions and
// nodes, with ListOnboardings' paging rules (a page may be short with a
// cursor when filters discard many rows; an empty cursor means done).
func listIndexPage[T any](ctx context.Context, s *Store, kind string, ix onboardingIndex, limit int, cursor string,
	keep func(T) bool,
) ([]T, string, error) {
	if limit <= 0 {
		limit = DefaultPageSize
	}
	limit = min(limit, MaxPageSize)
	var start map[string]types.AttributeValue
	if cursor != "" {
		var err error
		if start, err = decodeCursor(cursor, ix); err != nil {
			return nil, "", err
		}
	}
	items := []T{}
	var lastIncluded map[string]types.AttributeValue
	for round := 1; ; round++ {
		out, err := s.db.Query(ctx, &dynamodb.QueryInput{
			TableName:                 aws.String(s.table),
			IndexName:                 aws.String(ix.name),
			KeyConditionExpression:    aws.String(exprIndexPartition(ix.pkAttr)),
			ExpressionAttributeNames:  map[string]string{"#" + ix.pkAttr: ix.pkAttr},
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(ix.pk)},
			ScanIndexForward:          aws.Bool(false),
			Limit:                     aws.Int32(int32(min(4*(limit+1), 1000))),
			ExclusiveStartKey:         start,
		})
		if err != nil {
			return nil, "", fmt.Errorf("list %s: %w", kind, err)
		}
		for _, item := range out.Items {
			var v T
			if err := attributevalue.UnmarshalMap(item, &v); err != nil {
				return nil, "", fmt.Errorf("decode %s: %w", kind, err)
			}
			if !keep(v) {
				continue
			}
			if len(items) == limit {
				return items, encodeCursor(lastIncluded, ix), nil
			}
			items = append(items, v)
			lastIncluded = item
		}
		if len(out.LastEvaluatedKey) == 0 {
			return items, "", nil
		}
		start = out.LastEvaluatedKey
		if round == listRounds {
			return items, encodeCursor(start, ix), nil
		}
	}
}
