package store

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/maasflow/maasflow/shared/domain"
)

// The machine watch's records share one partition, so that the watcher
// lists every watch of every site and every site's cursor with one Query:
// a watch under "<site>#<system_id>", a cursor under "#cursor#<site>"
// (site ids hold no '#', so the two never collide).
const (
	kindMachineWatch = "machine watch"
	kindWatchCursor  = "watch cursor"

	pkWatch           = "WATCH"
	skWatchCursorPfx  = "#cursor#"
	watchTokenAttr    = "task_token"
	watchAttemptAttr  = "attempt"
	watchRunAttr      = "run"
	watchCursorAfter  = "after"
	entityMachineWtch = "machine_watch"
	entityWatchCursor = "watch_cursor"
)

// condWatchNotNewer lets a watch replace the stored one unless that one
// belongs to a newer attempt, or a newer run of the same attempt.
const condWatchNotNewer = "attribute_not_exists(#pk) OR #attempt < :attempt OR (#attempt = :attempt AND #run <= :run)"

// condCursorForward keeps a cursor from moving back when two rounds
// overlap.
const condCursorForward = "attribute_not_exists(#pk) OR #after <= :after"

// condWatchToken deletes a watch only while it still holds the token the
// watcher completed: a newer registration stays.
const condWatchToken = "#token = :token" //nolint:gosec // an expression naming the attribute, not a credential

func machineWatchKey(siteID, systemID string) key { return key{pkWatch, siteID + "#" + systemID} }

func watchCursorKey(siteID string) key { return key{pkWatch, skWatchCursorPfx + siteID} }

// MachineWatches is the watcher's view: every watch and every site cursor.
type MachineWatches struct {
	Watches []domain.MachineWatch
	// Cursors are keyed by site id.
	Cursors map[string]domain.WatchCursor
}

// PutMachineWatch writes the machine's watch in one conditional write,
// replacing the one stored unless that belongs to a newer attempt or run:
// then ItemConflictError. RegisteredAt is stamped when zero.
func (s *Store) PutMachineWatch(ctx context.Context, w domain.MachineWatch) error {
	if err := checkID(kindMachineWatch, "site_id", w.SiteID); err != nil {
		return err
	}
	if err := checkID(kindMachineWatch, "system_id", w.SystemID); err != nil {
		return err
	}
	if err := checkID(kindMachineWatch, "onboarding_id", w.OnboardingID); err != nil {
		return err
	}
	if w.TaskToken == "" {
		return &InvalidRecordError{Kind: kindMachineWatch, Field: "task_token", Reason: "is required"}
	}
	if w.RegisteredAt.IsZero() {
		w.RegisteredAt = s.now()
	}
	id := w.SiteID + "/" + w.SystemID
	item, err := marshalItem(w, machineWatchKey(w.SiteID, w.SystemID), entityMachineWtch, nil)
	if err != nil {
		return err
	}
	err = s.write(ctx, types.TransactWriteItem{Put: &types.Put{
		TableName:                aws.String(s.table),
		Item:                     item,
		ConditionExpression:      aws.String(condWatchNotNewer),
		ExpressionAttributeNames: map[string]string{"#pk": AttrPK, "#attempt": watchAttemptAttr, "#run": watchRunAttr},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":attempt": num(int64(w.Attempt)), ":run": num(int64(w.Run)),
		},
	}})
	if codes, ok := txCodes(err); ok && txFailed(codes, 0) {
		return &ItemConflictError{Kind: kindMachineWatch, ID: id, Reason: "a newer attempt or run watches the machine"}
	}
	if err != nil {
		return fmt.Errorf("put %s %s: %w", kindMachineWatch, id, err)
	}
	return nil
}

// ListMachineWatches lists every watch and every site's cursor: one Query
// of the watch partition, paged through.
func (s *Store) ListMachineWatches(ctx context.Context) (MachineWatches, error) {
	out := MachineWatches{Cursors: map[string]domain.WatchCursor{}}
	err := s.queryAll(ctx, &dynamodb.QueryInput{
		KeyConditionExpression:    aws.String(exprPartition),
		ExpressionAttributeNames:  map[string]string{"#pk": AttrPK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(pkWatch)},
		// The watcher acts on what it lists: a watch registered just
		// before must be in it.
		ConsistentRead: aws.Bool(true),
	}, func(item map[string]types.AttributeValue) error {
		entity, _ := item[entityAttr].(*types.AttributeValueMemberS)
		switch {
		case entity != nil && entity.Value == entityWatchCursor:
			c, err := decodeWatchCursor(item)
			if err != nil {
				return fmt.Errorf("decode %s: %w", kindWatchCursor, err)
			}
			out.Cursors[c.SiteID] = c
		default:
			w, err := decodeMachineWatch(item)
			if err != nil {
				return fmt.Errorf("decode %s: %w", kindMachineWatch, err)
			}
			out.Watches = append(out.Watches, w)
		}
		return nil
	})
	if err != nil {
		return MachineWatches{}, fmt.Errorf("list %ses: %w", kindMachineWatch, err)
	}
	return out, nil
}

// DeleteMachineWatch deletes the machine's watch if it still holds token;
// a watch that was replaced (or is gone) is left alone, without error. The
// conditional delete goes through write's transaction: minidyn judges a
// plain DeleteItem's condition against the wrong item (roce.go).
func (s *Store) DeleteMachineWatch(ctx context.Context, siteID, systemID string, token domain.Secret) error {
	err := s.write(ctx, types.TransactWriteItem{Delete: &types.Delete{
		TableName:                 aws.String(s.table),
		Key:                       machineWatchKey(siteID, systemID).av(),
		ConditionExpression:       aws.String(condWatchToken),
		ExpressionAttributeNames:  map[string]string{"#token": watchTokenAttr},
		ExpressionAttributeValues: map[string]types.AttributeValue{":token": str(token.Reveal())},
	}})
	if codes, ok := txCodes(err); ok && txFailed(codes, 0) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete %s %s/%s: %w", kindMachineWatch, siteID, systemID, err)
	}
	return nil
}

// PutWatchCursor writes a site's cursor; a cursor never moves back (a
// slower, overlapping round's write is dropped without error).
func (s *Store) PutWatchCursor(ctx context.Context, c domain.WatchCursor) error {
	if err := checkID(kindWatchCursor, "site_id", c.SiteID); err != nil {
		return err
	}
	item, err := marshalItem(c, watchCursorKey(c.SiteID), entityWatchCursor, nil)
	if err != nil {
		return err
	}
	err = s.write(ctx, types.TransactWriteItem{Put: &types.Put{
		TableName:                 aws.String(s.table),
		Item:                      item,
		ConditionExpression:       aws.String(condCursorForward),
		ExpressionAttributeNames:  map[string]string{"#pk": AttrPK, "#after": watchCursorAfter},
		ExpressionAttributeValues: map[string]types.AttributeValue{":after": num(c.After)},
	}})
	if codes, ok := txCodes(err); ok && txFailed(codes, 0) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("put %s %s: %w", kindWatchCursor, c.SiteID, err)
	}
	return nil
}
