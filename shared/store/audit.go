package store

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"

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

// AuditPage is one page of the audit trail, newest first; NextCursor is
// empty on the last page.
type AuditPage struct {
	Items      []domain.AuditEntry `json:"items"`
	NextCursor string              `json:"next_cursor,omitempty"`
}

// auditCursorIndex names the audit trail inside its cursors, so a cursor of
// another listing is refused.
const auditCursorIndex = "audit"

// ListAudit returns the newest entries first: limit defaults to 100 (max
// 1000).
func (s *Store) ListAudit(ctx context.Context, limit int) ([]domain.AuditEntry, error) {
	page, err := s.ListAuditPage(ctx, limit, "")
	return page.Items, err
}

// ListAuditPage returns one page of the audit trail, newest first, from
// cursor (a NextCursor of an earlier page; "" for the first). limit
// defaults to 100 (max 1000). InvalidCursorError when cursor is not an
// audit cursor.
func (s *Store) ListAuditPage(ctx context.Context, limit int, cursor string) (AuditPage, error) {
	if limit <= 0 {
		limit = DefaultAuditLimit
	}
	limit = min(limit, MaxAuditLimit)
	page := AuditPage{Items: make([]domain.AuditEntry, 0, limit)}
	q := &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		KeyConditionExpression:    aws.String(exprPartition),
		ExpressionAttributeNames:  map[string]string{"#pk": AttrPK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(pkAudit)},
		ScanIndexForward:          aws.Bool(false),
	}
	if cursor != "" {
		sk, err := decodeAuditCursor(cursor)
		if err != nil {
			return AuditPage{}, err
		}
		q.ExclusiveStartKey = key{pkAudit, sk}.av()
	}
	// One row beyond the page tells whether another page exists.
	var lastSK string
	for {
		q.Limit = aws.Int32(int32(limit + 1 - len(page.Items))) //nolint:gosec // G115: limit is at most MaxAuditLimit
		out, err := s.db.Query(ctx, q)
		if err != nil {
			return AuditPage{}, fmt.Errorf("list audit: %w", err)
		}
		for _, item := range out.Items {
			if len(page.Items) == limit {
				page.NextCursor = encodeAuditCursor(lastSK)
				return page, nil
			}
			var e domain.AuditEntry
			if err := attributevalue.UnmarshalMap(item, &e); err != nil {
				return AuditPage{}, fmt.Errorf("decode audit entry: %w", err)
			}
			page.Items = append(page.Items, e)
			if sk, ok := item[AttrSK].(*types.AttributeValueMemberS); ok {
				lastSK = sk.Value
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			return page, nil
		}
		q.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

func encodeAuditCursor(sk string) string {
	b, _ := json.Marshal(cursor{Index: auditCursorIndex, Key: map[string]string{AttrSK: sk}}) // strings always encode
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeAuditCursor(s string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return "", &InvalidCursorError{Reason: "not base64url"}
	}
	var c cursor
	if err := json.Unmarshal(b, &c); err != nil {
		return "", &InvalidCursorError{Reason: "malformed"}
	}
	if c.Index != auditCursorIndex {
		return "", &InvalidCursorError{Reason: "belongs to another listing"}
	}
	sk := c.Key[AttrSK]
	if sk == "" || len(sk) > 256 {
		return "", &InvalidCursorError{Reason: "malformed"}
	}
	return sk, nil
}

// SystemActor is the audit actor of what the workflow decided on its own.
const SystemActor = "system"

// needsOperator reports whether a workflow outcome waits on an operator.
func needsOperator(status domain.OnboardingStatus) bool {
	return status == domain.OnboardingFailed || status == domain.OnboardingManualIntervention
}

// systemAuditPut is the audit entry of onboarding next reaching a status an
// operator must act on. Its id is derived from the onboarding, attempt and
// status, so a retried write puts the same entry again.
func (s *Store) systemAuditPut(next *domain.Onboarding) (types.TransactWriteItem, error) {
	at := next.UpdatedAt
	if at.IsZero() {
		at = s.now()
	}
	result := string(next.Status)
	if next.Error != nil && next.Error.Code != "" {
		result += ":" + next.Error.Code
	}
	e := domain.AuditEntry{
		ID:            next.ID + "." + strconv.Itoa(next.Attempt) + "." + string(next.Status),
		Time:          at.UTC(),
		Actor:         SystemActor,
		Action:        "onboarding." + string(next.Status),
		Target:        "onboarding:" + next.ID,
		Result:        result,
		CorrelationID: next.CorrelationID,
	}
	item, err := marshalItem(e, key{pkAudit, timeKey(e.Time) + "#" + e.ID}, "audit", nil)
	if err != nil {
		return types.TransactWriteItem{}, err
	}
	return types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.table), Item: item}}, nil
}
