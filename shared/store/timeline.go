package store

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/maasflow/maasflow/shared/domain"
)

const kindEvent = "onboarding event"

// maxTxItems is DynamoDB's limit of items in one TransactWriteItems.
const maxTxItems = 100

// eventSeq is a timeline row's sort key under the onboarding: time first,
// so the timeline reads in time order. A MAAS event's suffix is its MAAS id,
// so copying the same event again hits the same key; a workflow row's is
// unique per write.
func (s *Store) eventSeq(ev domain.TimelineEntry) string {
	if ev.MAASEventID != 0 {
		return fmt.Sprintf("%s#M%020d", timeKey(ev.Time), ev.MAASEventID)
	}
	return timeKey(ev.Time) + "#" + s.timelineSuffix()
}

// eventItem is the item of a timeline row: the attributes marshalItem
// would give it (an onboarding writes dozens of rows, and attributevalue's
// reflection cost as much as the rest of the write), built directly.
func eventItem(ev domain.TimelineEntry) map[string]types.AttributeValue {
	k := key{pkOnboarding + ev.OnboardingID, skEventPrefix + ev.Seq}
	item := make(map[string]types.AttributeValue, 13)
	item["onboarding_id"] = str(ev.OnboardingID)
	item["seq"] = str(ev.Seq)
	item["time"] = str(ev.Time.Format(time.RFC3339Nano)) // attributevalue's time encoding
	item["attempt"] = &types.AttributeValueMemberN{Value: strconv.Itoa(ev.Attempt)}
	item["kind"] = str(string(ev.Kind))
	// The omitempty fields.
	if ev.Stage != "" {
		item["stage"] = str(string(ev.Stage))
	}
	if ev.Outcome != "" {
		item["outcome"] = str(ev.Outcome)
	}
	if ev.Detail != "" {
		item["detail"] = str(ev.Detail)
	}
	if ev.Source != "" {
		item["source"] = str(ev.Source)
	}
	if ev.MAASEventID != 0 {
		item["maas_event_id"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(ev.MAASEventID, 10)}
	}
	item[AttrPK] = str(k.pk)
	item[AttrSK] = str(k.sk)
	item[entityAttr] = str(entityTimelineRow)
	return item
}

// entityTimelineRow is the entity name of a timeline row.
const entityTimelineRow = "onboarding_event"

// AppendOnboardingEvents adds timeline rows. Rows with a MAASEventID are
// written at most once per onboarding, so copying MAAS events is repeatable
// as long as each keeps its MAAS timestamp in Time. The store sets Seq,
// and Time when zero. The rows of one call are written together, in one
// write (one transaction per 100 rows), or not at all: a poll that copies
// ten MAAS events and records its stage exit costs one database call, not
// eleven.
func (s *Store) AppendOnboardingEvents(ctx context.Context, events ...domain.TimelineEntry) error {
	rows := make([]domain.TimelineEntry, 0, len(events))
	for i, ev := range events {
		if err := checkID(kindEvent, fmt.Sprintf("events[%d].onboarding_id", i), ev.OnboardingID); err != nil {
			return err
		}
		if ev.Time.IsZero() {
			ev.Time = s.now()
		}
		ev.Time = ev.Time.UTC()
		rows = append(rows, ev)
	}
	for start := 0; start < len(rows); start += maxTxItems {
		if err := s.appendRows(ctx, rows[start:min(start+maxTxItems, len(rows))]); err != nil {
			return err
		}
	}
	return nil
}

// timelineItems builds the writes of rows, fresh sort-key suffixes for the
// workflow rows on each call. A workflow row must not exist yet; a MAAS
// row's key is its MAAS time and id, so writing it again rewrites the same
// row and needs no condition (a condition would cancel the whole
// transaction when one of its events was copied before).
func (s *Store) timelineItems(rows []domain.TimelineEntry) []types.TransactWriteItem {
	tx := make([]types.TransactWriteItem, 0, len(rows))
	for _, ev := range rows {
		ev.Seq = s.eventSeq(ev)
		item := eventItem(ev)
		if ev.MAASEventID != 0 {
			tx = append(tx, types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.table), Item: item}})
			continue
		}
		tx = append(tx, s.putIfAbsent(item))
	}
	return tx
}

func (s *Store) appendRows(ctx context.Context, rows []domain.TimelineEntry) error {
	// A sort-key collision needs two writers with the same clock reading,
	// counter and random suffix; new suffixes settle it.
	var err error
	for range updateAttempts {
		err = s.write(ctx, s.timelineItems(rows)...)
		if codes, ok := txCodes(err); ok && (txContended(codes) || anyFailed(codes)) {
			continue
		}
		if err != nil {
			return fmt.Errorf("append timeline of onboarding %s: %w", rows[0].OnboardingID, err)
		}
		return nil
	}
	return fmt.Errorf("append timeline of onboarding %s: %w", rows[0].OnboardingID, err)
}

func anyFailed(codes []string) bool {
	for i := range codes {
		if txFailed(codes, i) {
			return true
		}
	}
	return false
}

// ListOnboardingEvents returns the timeline in order: by time, then, at
// the same instant, MAAS events by MAAS id before workflow rows in write
// order. An unknown onboarding has an empty timeline.
func (s *Store) ListOnboardingEvents(ctx context.Context, onboardingID string) ([]domain.TimelineEntry, error) {
	return queryPrefixWith(ctx, s, "timeline", pkOnboarding+onboardingID, skEventPrefix, decodeTimelineEntry)
}

// decodeTimelineEntry decodes a timeline row: directly when it holds the
// attributes eventItem writes (an activity reads the whole timeline to
// see whether it already published an event), through attributevalue
// otherwise, to the same value either way.
func decodeTimelineEntry(item map[string]types.AttributeValue) (domain.TimelineEntry, error) {
	return decodeDirect(item, readTimelineEntry)
}

// readTimelineEntry is decodeTimelineEntry's direct path.
func readTimelineEntry(item map[string]types.AttributeValue) (domain.TimelineEntry, bool) {
	r := attrReader{item: item, ok: true}
	ev := domain.TimelineEntry{
		OnboardingID: r.str("onboarding_id"),
		Seq:          r.str("seq"),
		Time:         r.time("time"),
		Attempt:      r.int("attempt"),
		Kind:         domain.TimelineKind(r.str("kind")),
		Stage:        domain.Stage(r.str("stage")),
		Outcome:      r.str("outcome"),
		Detail:       r.str("detail"),
		Source:       r.str("source"),
		MAASEventID:  r.int64("maas_event_id"),
	}
	return ev, r.ok
}

// UpdateOnboardingWithTimeline is UpdateOnboarding that also appends the
// timeline rows rows returns for the change, in the same write: a stage
// change and its stage_entered row are stored together or not at all, in
// one database call. rows sees the record before and after mutate; rows
// are stamped like AppendOnboardingEvents' (at most 90, leaving room for
// the record and its locks in one transaction).
func (s *Store) UpdateOnboardingWithTimeline(ctx context.Context, id string, mutate Mutator[domain.Onboarding],
	rows func(prev, next domain.Onboarding) []domain.TimelineEntry,
) (domain.Onboarding, error) {
	return updateLoop(ctx, s, kindOnboarding, id, onboardingKey(id), mutate, s.bumpOnboarding,
		func(ctx context.Context, prev, next *domain.Onboarding) error {
			var add []domain.TimelineEntry
			if rows != nil {
				add = rows(*prev, *next)
			}
			if len(add) > maxRowsWithRecord {
				return &InvalidRecordError{Kind: kindEvent, Field: "rows", Reason: fmt.Sprintf("at most %d rows go with a record", maxRowsWithRecord)}
			}
			for i := range add {
				add[i].OnboardingID = next.ID
				if add[i].Time.IsZero() {
					add[i].Time = s.now()
				}
				add[i].Time = add[i].Time.UTC()
			}
			return s.writeOnboardingWith(ctx, prev, next, add)
		})
}

// maxRowsWithRecord leaves room in one transaction for the record, its
// server locks, the token revocation and the outbox and audit rows.
const maxRowsWithRecord = 90
