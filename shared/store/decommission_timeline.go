package store

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/maasflow/maasflow/shared/domain"
)

const kindDecomEvent = "decommission event"

func (s *Store) decomEventItem(ev domain.DecommissionEvent) (map[string]types.AttributeValue, error) {
	return marshalItem(ev, key{pkDecommission + ev.DecommissionID, skEventPrefix + ev.Seq}, "decommission_event", nil)
}

func (s *Store) decomEventSeq(ev domain.DecommissionEvent) string {
	if ev.MAASEventID != 0 {
		return fmt.Sprintf("%s#M%020d", timeKey(ev.Time), ev.MAASEventID)
	}
	return timeKey(ev.Time) + "#" + s.timelineSuffix()
}

// AppendDecommissionEvents adds timeline rows to decommissions with the
// onboarding timeline's rules: each MAAS event (MAASEventID) is written at
// most once, workflow rows of one call are written together or not at all.
func (s *Store) AppendDecommissionEvents(ctx context.Context, events ...domain.DecommissionEvent) error {
	var workflow []types.TransactWriteItem
	for i, ev := range events {
		if err := checkID(kindDecomEvent, fmt.Sprintf("events[%d].decommission_id", i), ev.DecommissionID); err != nil {
			return err
		}
		if ev.Time.IsZero() {
			ev.Time = s.now()
		}
		ev.Time = ev.Time.UTC()
		ev.Seq = s.decomEventSeq(ev)
		item, err := s.decomEventItem(ev)
		if err != nil {
			return err
		}
		if ev.MAASEventID == 0 {
			workflow = append(workflow, s.putIfAbsent(item))
			continue
		}
		err = s.write(ctx, s.putIfAbsent(item))
		if codes, ok := txCodes(err); ok && txFailed(codes, 0) {
			continue // already on the timeline
		}
		if err != nil {
			return fmt.Errorf("append MAAS event %d to decommission %s: %w", ev.MAASEventID, ev.DecommissionID, err)
		}
	}
	for start := 0; start < len(workflow); start += maxTxItems {
		if err := s.write(ctx, workflow[start:min(start+maxTxItems, len(workflow))]...); err != nil {
			return fmt.Errorf("append decommission timeline: %w", err)
		}
	}
	return nil
}

// ListDecommissionEvents returns a decommission's timeline in order.
func (s *Store) ListDecommissionEvents(ctx context.Context, decommissionID string) ([]domain.DecommissionEvent, error) {
	return queryPrefix[domain.DecommissionEvent](ctx, s, "decommission timeline", pkDecommission+decommissionID, skEventPrefix)
}
