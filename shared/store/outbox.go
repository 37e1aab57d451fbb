package store

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/maasflow/maasflow/shared/domain"
)

// The outbox: an onboarding that reaches a status with a terminal event
// (completed, failed, manual_intervention) gets an outbox row in the same
// write that sets the status. The finishing activity publishes the event
// and marks it on the timeline; whatever that activity did not finish — it
// timed out after the status was written, its process died, a restart
// closed the onboarding — a relay finds in the outbox, so no closed
// workflow goes without its event. Rows expire by TTL after outboxTTL, so
// a deployment without a relay does not accumulate them.

const (
	pkOutbox  = "OUTBOX"
	kindOut   = "outbox entry"
	outboxTTL = 7 * 24 * time.Hour
)

// OutboxEntry is one event the store knows is owed: onboarding OnboardingID
// reached Status in its attempt Attempt at At.
type OutboxEntry struct {
	OnboardingID string                  `dynamodbav:"onboarding_id"`
	Attempt      int                     `dynamodbav:"attempt"`
	Status       domain.OnboardingStatus `dynamodbav:"status"`
	At           time.Time               `dynamodbav:"at"`
	SK           string                  `dynamodbav:"sk"`
}

// owesEvent reports whether reaching status from another status owes a
// terminal event.
func owesEvent(prev, next domain.OnboardingStatus) bool {
	if prev == next {
		return false
	}
	switch next {
	case domain.OnboardingCompleted, domain.OnboardingFailed, domain.OnboardingManualIntervention:
		return true
	}
	return false
}

// outboxPut is the outbox row for next's new status.
func (s *Store) outboxPut(next *domain.Onboarding) (types.TransactWriteItem, error) {
	at := next.UpdatedAt
	if at.IsZero() {
		at = s.now()
	}
	e := OutboxEntry{OnboardingID: next.ID, Attempt: next.Attempt, Status: next.Status, At: at.UTC()}
	e.SK = timeKey(at) + "#" + next.ID + "#" + strconv.Itoa(next.Attempt) + "#" + string(next.Status)
	item, err := marshalItem(e, key{pkOutbox, e.SK}, "outbox", nil)
	if err != nil {
		return types.TransactWriteItem{}, err
	}
	item[AttrTTL] = num(at.Add(outboxTTL).Unix())
	return types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.table), Item: item}}, nil
}

// ListOutbox returns up to limit owed events, oldest first.
func (s *Store) ListOutbox(ctx context.Context, limit int) ([]OutboxEntry, error) {
	out, err := s.db.Query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		KeyConditionExpression:    aws.String(exprPartition),
		ExpressionAttributeNames:  map[string]string{"#pk": AttrPK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(pkOutbox)},
		Limit:                     aws.Int32(int32(max(1, min(limit, MaxPageSize)))),
	})
	if err != nil {
		return nil, fmt.Errorf("list outbox: %w", err)
	}
	entries := make([]OutboxEntry, 0, len(out.Items))
	for _, item := range out.Items {
		var e OutboxEntry
		if err := attributevalue.UnmarshalMap(item, &e); err != nil {
			return nil, fmt.Errorf("decode %s: %w", kindOut, err)
		}
		entries = append(entries, e)
	}
	return entries, nil
}

// DeleteOutbox removes an entry once its event is published.
func (s *Store) DeleteOutbox(ctx context.Context, e OutboxEntry) error {
	if err := checkID(kindOut, "sk", e.SK); err != nil && e.SK == "" {
		return err
	}
	_, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(s.table), Key: key{pkOutbox, e.SK}.av()})
	if err != nil {
		return fmt.Errorf("delete %s: %w", kindOut, err)
	}
	return nil
}
