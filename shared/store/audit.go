package store

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"

	"github.com/maasflow/maasflow/shared/domain"
)

const kindAudit = "audit entry"

// Page sizes of ListAudit.
const (
	DefaultAuditLimit = 100
	MaxAuditLimit     = 1000
)

// AppendAudit records one entry, giving it an id and Time (now) when they
// are empty. Entries are never changed afterwards; appending the same id
// and time twice is ItemConflictError.
func (s *Store) AppendAudit(ctx context.Context, e domain.AuditEntry) error {
	if e.ID == "" {
		e.ID = uuid.NewString()
	}
	if err := checkID(kindAudit, "id", e.ID); err != nil {
		return err
	}
	if e.Time.IsZero() {
		e.Time = s.now()
	}
	e.Time = e.Time.UTC()
	item, err := marshalItem(e, key{pkAudit, timeKey(e.Time) + "#" + e.ID}, "audit", nil)
	if err != nil {
		return err
	}
	return s.createOne(ctx, kindAudit, e.ID, item)
}

// ListAudit returns the newest entries first: limit defaults to 100 (max
// 1000).
func (s *Store) ListAudit(ctx context.Context, limit int) ([]domain.AuditEntry, error) {
	if limit <= 0 {
		limit = DefaultAuditLimit
	}
	limit = min(limit, MaxAuditLimit)
	res := make([]domain.AuditEntry, 0, limit)
	q := &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		KeyConditionExpression:    aws.String(exprPartition),
		ExpressionAttributeNames:  map[string]string{"#pk": AttrPK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(pkAudit)},
		ScanIndexForward:          aws.Bool(false),
	}
	for len(res) < limit {
		q.Limit = aws.Int32(int32(limit - len(res))) //nolint:gosec // G115: limit is at most MaxAuditLimit
		out, err := s.db.Query(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("list audit: %w", err)
		}
		for _, item := range out.Items {
			var e domain.AuditEntry
			if err := attributevalue.UnmarshalMap(item, &e); err != nil {
				return nil, fmt.Errorf("decode audit entry: %w", err)
			}
			res = append(res, e)
		}
		if len(out.LastEvaluatedKey) == 0 {
			break
		}
		q.ExclusiveStartKey = out.LastEvaluatedKey
	}
	return res[:min(len(res), limit)], nil
}
