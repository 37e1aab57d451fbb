package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/maasflow/maasflow/shared/domain"
)

const kindToken = "enrollment_token"

// expiresAttr is ExpiresAt in Unix milliseconds: the consume condition
// compares it with now as a number, which time strings cannot do safely.
const expiresAttr = "expires_ms"

// tokenTTLGrace keeps a token readable for a while after it expires, so a
// late attempt is still answered "expired" rather than "unknown".
const tokenTTLGrace = 7 * 24 * time.Hour

// consumeAttempts bounds the retries of a consume whose condition failed
// although the token then looked valid (written or changed in between).
const consumeAttempts = 3

func tokenKey(hash string) key { return key{pkToken + hash, "TOKEN"} }

// shortHash names a token in errors without its full hash.
func shortHash(h string) string { return h[:min(len(h), 12)] }

// PutEnrollmentToken stores a token's hash, stamping CreatedAt when zero.
// ItemConflictError when the hash exists. The plain token is never stored.
func (s *Store) PutEnrollmentToken(ctx context.Context, t domain.EnrollmentToken) error {
	if err := checkID(kindToken, "hash", t.Hash); err != nil {
		return err
	}
	if err := checkID(kindToken, "node_id", t.NodeID); err != nil {
		return err
	}
	if t.ExpiresAt.IsZero() {
		return &InvalidRecordError{Kind: kindToken, Field: "expires_at", Reason: "is required"}
	}
	if t.CreatedAt.IsZero() {
		t.CreatedAt = s.now()
	}
	item, err := marshalItem(t, tokenKey(t.Hash), kindToken, nil)
	if err != nil {
		return err
	}
	item[expiresAttr] = num(t.ExpiresAt.UnixMilli())
	item[AttrTTL] = num(t.ExpiresAt.Add(tokenTTLGrace).Unix())
	return s.createOne(ctx, kindToken, shortHash(t.Hash), item)
}

// ConsumeEnrollmentToken marks the token consumed in one conditional write:
// TokenRejectedError with TokenUnknown, TokenConsumed, TokenRevoked,
// TokenExpired (at now) or TokenWrongNode. A token issued for an onboarding
// is consumed only while that onboarding is pending or running and on the
// token's attempt (a token reissued for a stopped run, ForStoppedRun, also
// while it is manual_intervention or failed), checked in the same
// transaction: otherwise
// TokenWorkflowClosed or TokenStaleAttempt, with the onboarding named and
// FirstRefusal set the first time. A second call with the same hash is
// TokenConsumed. When several reasons apply, consumed wins over revoked (a
// token is never both: each write excludes the other), revoked over wrong
// node, and wrong node over expired. It returns the token as stored,
// ConsumedAt set.
func (s *Store) ConsumeEnrollmentToken(ctx context.Context, hash, nodeID string, now time.Time) (domain.EnrollmentToken, error) {
	if hash == "" {
		return domain.EnrollmentToken{}, &TokenRejectedError{Reason: TokenUnknown}
	}
	consumed, err := attributevalue.Marshal(now.UTC())
	if err != nil {
		return domain.EnrollmentToken{}, fmt.Errorf("encode consumed_at: %w", err)
	}
	for range consumeAttempts {
		raw, found, err := s.getRaw(ctx, tokenKey(hash))
		if err != nil {
			return domain.EnrollmentToken{}, fmt.Errorf("read enrollment token %s: %w", shortHash(hash), err)
		}
		if !found {
			return domain.EnrollmentToken{}, &TokenRejectedError{Reason: TokenUnknown}
		}
		var t domain.EnrollmentToken
		if err := attributevalue.UnmarshalMap(raw, &t); err != nil {
			return domain.EnrollmentToken{}, fmt.Errorf("decode enrollment token %s: %w", shortHash(hash), err)
		}
		consume := types.Update{
			TableName:           aws.String(s.table),
			Key:                 tokenKey(hash).av(),
			UpdateExpression:    aws.String(exprConsume),
			ConditionExpression: aws.String("attribute_exists(#pk) AND attribute_not_exists(#consumed) AND attribute_not_exists(#revoked) AND #node = :node AND #exp > :now"),
			ExpressionAttributeNames: map[string]string{
				"#pk": AttrPK, "#consumed": "consumed_at", "#revoked": "revoked_at", "#node": "node_id", "#exp": expiresAttr,
			},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":consumed": consumed, ":node": str(nodeID), ":now": num(now.UnixMilli()),
			},
		}
		tx := []types.TransactWriteItem{{Update: &consume}}
		if t.OnboardingID != "" {
			// The run the token belongs to must still be waiting for it.
			// Onboardings are never deleted: one that does not exist (a
			// token written without it) leaves the token to judge alone.
			statuses := "#status = :pending OR #status = :running"
			values := map[string]types.AttributeValue{
				":pending": str(string(domain.OnboardingPending)), ":running": str(string(domain.OnboardingRunning)), ":attempt": num(int64(t.Attempt)),
			}
			if t.ForStoppedRun {
				// Reissued for a stopped run: also while it stays stopped.
				statuses += " OR #status = :manual OR #status = :failed"
				values[":manual"] = str(string(domain.OnboardingManualIntervention))
				values[":failed"] = str(string(domain.OnboardingFailed))
			}
			tx = append(tx, types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
				TableName:                 aws.String(s.table),
				Key:                       onboardingKey(t.OnboardingID).av(),
				ConditionExpression:       aws.String("attribute_not_exists(#pk) OR ((" + statuses + ") AND #attempt = :attempt)"),
				ExpressionAttributeNames:  map[string]string{"#pk": AttrPK, "#status": "status", "#attempt": "attempt"},
				ExpressionAttributeValues: values,
			}})
		}
		_, err = s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: tx})
		codes, _ := txCodes(err)
		switch {
		case err == nil:
			t.ConsumedAt = ptrTime(now.UTC())
			return t, nil
		case txFailed(codes, 0):
			reason, rerr := s.tokenRejection(ctx, hash, nodeID, now)
			if rerr != nil {
				return domain.EnrollmentToken{}, rerr
			}
			if reason == "" {
				continue // written or changed in between: look again
			}
			if reason == TokenWorkflowClosed {
				// Revoked when its run closed; a later attempt since then
				// superseded it, and the refusal says that instead.
				if st, err := s.runState(ctx, t); err == nil && st == TokenStaleAttempt {
					reason = st
				}
				return domain.EnrollmentToken{}, s.runRefusal(ctx, hash, t, reason, now)
			}
			return domain.EnrollmentToken{}, &TokenRejectedError{Reason: reason}
		case txFailed(codes, 1):
			reason, rerr := s.runState(ctx, t)
			if rerr != nil {
				return domain.EnrollmentToken{}, rerr
			}
			if reason == "" {
				continue
			}
			return domain.EnrollmentToken{}, s.runRefusal(ctx, hash, t, reason, now)
		case txContended(codes):
			continue
		default:
			return domain.EnrollmentToken{}, fmt.Errorf("consume enrollment token %s: %w", shortHash(hash), err)
		}
	}
	return domain.EnrollmentToken{}, &ItemConflictError{Kind: kindToken, ID: shortHash(hash), Reason: "token changed while being consumed"}
}

func ptrTime(t time.Time) *time.Time { return &t }

// runState says why the token's onboarding refuses an enrollment: closed
// (or waiting for an operator), or on another attempt; "" when it now
// looks acceptable.
func (s *Store) runState(ctx context.Context, t domain.EnrollmentToken) (string, error) {
	o, err := s.GetOnboarding(ctx, t.OnboardingID)
	if _, missing := errors.AsType[*ItemNotFoundError](err); missing {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	switch {
	case o.Attempt != t.Attempt:
		return TokenStaleAttempt, nil
	case t.ForStoppedRun && (o.Status == domain.OnboardingManualIntervention || o.Status == domain.OnboardingFailed):
		return "", nil
	case o.Status != domain.OnboardingPending && o.Status != domain.OnboardingRunning:
		return TokenWorkflowClosed, nil
	}
	return "", nil
}

// runRefusal is the rejection of a token whose run is over, marking the
// token (refused_at) so that only the first such refusal says FirstRefusal.
func (s *Store) runRefusal(ctx context.Context, hash string, t domain.EnrollmentToken, reason string, now time.Time) error {
	e := &TokenRejectedError{Reason: reason, OnboardingID: t.OnboardingID, Attempt: t.Attempt}
	refused, err := attributevalue.Marshal(now.UTC())
	if err != nil {
		return fmt.Errorf("encode refused_at: %w", err)
	}
	// Marking the refusal is not the request's change: a refused request is
	// counted, not audited, so its pending audit entry stays off this write.
	_, err = s.db.UpdateItem(withoutPendingAudit(ctx), &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       tokenKey(hash).av(),
		UpdateExpression:          aws.String(exprRefused),
		ConditionExpression:       aws.String("attribute_exists(#pk) AND attribute_not_exists(#refused)"),
		ExpressionAttributeNames:  map[string]string{"#pk": AttrPK, "#refused": "refused_at"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":refused": refused},
	})
	switch {
	case err == nil:
		e.FirstRefusal = true
	case !isConditionFailed(err):
		return fmt.Errorf("mark enrollment token %s refused: %w", shortHash(hash), err)
	}
	return e
}

// tokenRejection reads the token once to say why the consume condition
// failed; "" means it now looks acceptable.
func (s *Store) tokenRejection(ctx context.Context, hash, nodeID string, now time.Time) (string, error) {
	raw, found, err := s.getRaw(ctx, tokenKey(hash))
	if err != nil {
		return "", fmt.Errorf("read enrollment token %s: %w", shortHash(hash), err)
	}
	if !found {
		return TokenUnknown, nil
	}
	var t domain.EnrollmentToken
	if err := attributevalue.UnmarshalMap(raw, &t); err != nil {
		return "", fmt.Errorf("decode enrollment token %s: %w", shortHash(hash), err)
	}
	switch {
	case t.ConsumedAt != nil:
		return TokenConsumed, nil
	case t.RevokedAt != nil:
		if r, ok := raw[revokedReasonAttr].(*types.AttributeValueMemberS); ok && r.Value == TokenWorkflowClosed {
			return TokenWorkflowClosed, nil
		}
		return TokenRevoked, nil
	case t.NodeID != nodeID:
		return TokenWrongNode, nil
	case !now.Before(t.ExpiresAt):
		return TokenExpired, nil
	}
	return "", nil
}

// revokedReasonAttr says why a token was revoked: TokenWorkflowClosed when
// its run was closed; absent when a newer token superseded it.
const revokedReasonAttr = "revoked_reason"

// revokeForClose is the transaction item that revokes the token of a run
// being closed; ok is false when there is nothing to revoke (unknown,
// consumed or already revoked). Its condition fails if a node consumes the token
// before the transaction commits; the caller then reads everything again.
func (s *Store) revokeForClose(ctx context.Context, hash string) (item types.TransactWriteItem, ok bool, err error) {
	raw, found, err := s.getRaw(ctx, tokenKey(hash))
	if err != nil {
		return item, false, fmt.Errorf("read enrollment token %s: %w", shortHash(hash), err)
	}
	if !found {
		return item, false, nil
	}
	if _, consumed := raw["consumed_at"]; consumed {
		return item, false, nil
	}
	if _, revoked := raw["revoked_at"]; revoked {
		return item, false, nil
	}
	revoked, err := attributevalue.Marshal(s.now().UTC())
	if err != nil {
		return item, false, fmt.Errorf("encode revoked_at: %w", err)
	}
	return types.TransactWriteItem{Update: &types.Update{
		TableName:           aws.String(s.table),
		Key:                 tokenKey(hash).av(),
		UpdateExpression:    aws.String(exprRevokeClosed),
		ConditionExpression: aws.String("attribute_exists(#pk) AND attribute_not_exists(#consumed) AND attribute_not_exists(#revoked)"),
		ExpressionAttributeNames: map[string]string{
			"#pk": AttrPK, "#consumed": "consumed_at", "#revoked": "revoked_at", "#reason": revokedReasonAttr,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{":revoked": revoked, ":reason": str(TokenWorkflowClosed)},
	}}, true, nil
}

// RevokeEnrollmentToken makes an unconsumed token unusable, in one
// conditional write that sets revoked_at (at now) only on a token that
// exists and is neither consumed nor revoked. Every other case is a no-op
// that returns nil: a revoked token keeps its first revoked_at, a consumed
// one stays consumed (the node it enrolled stays enrolled), and an unknown
// hash (never stored, or gone with its TTL) has nothing to revoke. So a
// repeated call, or one that races a consume, is safe: exactly one of the
// two writes takes effect, and ConsumeEnrollmentToken reports TokenRevoked
// when the revoke won.
func (s *Store) RevokeEnrollmentToken(ctx context.Context, hash string, now time.Time) error {
	if hash == "" {
		return nil
	}
	revoked, err := attributevalue.Marshal(now.UTC())
	if err != nil {
		return fmt.Errorf("encode revoked_at: %w", err)
	}
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(s.table),
		Key:                 tokenKey(hash).av(),
		UpdateExpression:    aws.String(exprRevoke),
		ConditionExpression: aws.String("attribute_exists(#pk) AND attribute_not_exists(#consumed) AND attribute_not_exists(#revoked)"),
		ExpressionAttributeNames: map[string]string{
			"#pk": AttrPK, "#consumed": "consumed_at", "#revoked": "revoked_at",
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{":revoked": revoked},
	})
	if err != nil && !isConditionFailed(err) {
		return fmt.Errorf("revoke enrollment token %s: %w", shortHash(hash), err)
	}
	return nil
}
