package store

import (
	"context"
	"fmt"

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

func (s *Store) eventItem(ev domain.TimelineEntry) (map[string]types.AttributeValue, error) {
	return marshalItem(ev, key{pkOnboarding + ev.OnboardingID, skEventPrefix + ev.Seq}, "onboarding_event", nil)
}

// AppendOnboardingEvents adds timeline rows. Rows with a MAASEventID are
// written at most once per onboarding, so copying MAAS events is repeatable
// as long as each keeps its MAAS timestamp in Time. The store sets Seq,
// and Time when zero. The workflow rows of one call are written together
// (one transaction per 100) or not at all; MAAS rows one by one, each
// idempotent.
func (s *Store) AppendOnboardingEvents(ctx context.Context, events ...domain.TimelineEntry) error {
	var maasRows, workflowRows []domain.TimelineEntry
	for i, ev := range events {
		if err := checkID(kindEvent, fmt.Sprintf("events[%d].onboarding_id", i), ev.OnboardingID); err != nil {
			return err
		}
		if ev.Time.IsZero() {
			ev.Time = s.now()
		}
		ev.Time = ev.Time.UTC()
		if ev.MAASEventID != 0 {
			maasRows = append(maasRows, ev)
		} else {
			workflowRows = append(workflowRows, ev)
		}
	}
	for start := 0; start < len(workflowRows); start += maxTxItems {
		if err := s.appendWorkflowRows(ctx, workflowRows[start:min(start+maxTxItems, len(workflowRows))]); err != nil {
			return err
		}
	}
	for _, ev := range maasRows {
		ev.Seq = s.eventSeq(ev)
		item, err := s.eventItem(ev)
		if err != nil {
			return err
		}
		err = s.write(ctx, s.putIfAbsent(item))
		if codes, ok := txCodes(err); ok && txFailed(codes, 0) {
			continue // already on the timeline
		}
		if err != nil {
			return fmt.Errorf("append MAAS event %d to onboarding %s: %w", ev.MAASEventID, ev.OnboardingID, err)
		}
	}
	return nil
}

func (s *Store) appendWorkflowRows(ctx context.Context, rows []domain.TimelineEntry) error {
	// A sort-key collision needs two writers with the same clock reading,
	// counter and random suffix; new suffixes settle it.
	var err error
	for range updateAttempts {
		tx := make([]types.TransactWriteItem, 0, len(rows))
		for _, ev := range rows {
			ev.Seq = s.eventSeq(ev)
			item, ierr := s.eventItem(ev)
			if ierr != nil {
				return ierr
			}
			tx = append(tx, s.putIfAbsent(item))
		}
		err = s.write(ctx, tx...)
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
	return queryPrefix[domain.TimelineEntry](ctx, s, "timeline", pkOnboarding+onboardingID, skEventPrefix)
}
