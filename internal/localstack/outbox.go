package localstack

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/maasflow/maasflow/shared/clock"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/events"
	"github.com/maasflow/maasflow/shared/store"
)

// outboxRelay publishes the terminal events the store's outbox says are
// owed and nobody published: FinishOnboarding timed out between writing
// the status and publishing, its process died, or a restart closed the
// onboarding. It gives the finishing activity relayGrace of wall time to
// publish first, then publishes (unless the timeline shows the activity
// did), marks the event on the timeline the way the activity does, and
// drops the entry. So every closed workflow gets its terminal event, at
// least once; consumers de-duplicate on onboarding_id, attempt and type.
type outboxRelay struct {
	store *store.Store
	bus   *events.LocalBus
	clock clock.Clock
	log   *slog.Logger

	seen map[string]time.Time // entry → when the relay first saw it (wall)
}

const (
	relayGrace  = 5 * time.Second
	relayPeriod = time.Second
	// eventMarkerSource is the timeline note's source the finishing
	// activity writes after publishing an event.
	eventMarkerSource = "event"
)

var terminalDetailTypes = map[domain.OnboardingStatus]string{
	domain.OnboardingCompleted:          events.OnboardingCompleted,
	domain.OnboardingFailed:             events.OnboardingFailed,
	domain.OnboardingManualIntervention: events.OnboardingManualInterventionRequired,
}

// start runs the relay until the returned stop is called.
func (r *outboxRelay) start() (stop func() error) {
	r.seen = map[string]time.Time{}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(relayPeriod)
		defer t.Stop()
		for {
			if _, err := r.once(ctx, time.Now()); err != nil && ctx.Err() == nil {
				r.log.Warn("outbox relay", "error", err.Error())
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	})
	return func() error { cancel(); wg.Wait(); return nil }
}

// once handles the entries older than the grace; it returns how many
// events it published.
func (r *outboxRelay) once(ctx context.Context, now time.Time) (int, error) {
	entries, err := r.store.ListOutbox(ctx, store.MaxPageSize)
	if err != nil {
		return 0, err
	}
	published := 0
	for _, e := range entries {
		first, ok := r.seen[e.SK]
		if !ok {
			r.seen[e.SK] = now
			first = now
		}
		if now.Sub(first) < relayGrace {
			continue
		}
		done, err := r.relay(ctx, e)
		if err != nil {
			return published, err
		}
		if done {
			published++
		}
		if err := r.store.DeleteOutbox(ctx, e); err != nil {
			return published, err
		}
		delete(r.seen, e.SK)
	}
	return published, nil
}

// relay publishes e's event unless the timeline shows it was.
func (r *outboxRelay) relay(ctx context.Context, e store.OutboxEntry) (bool, error) {
	detailType, ok := terminalDetailTypes[e.Status]
	if !ok {
		return false, nil
	}
	rows, err := r.store.ListOnboardingEvents(ctx, e.OnboardingID)
	if err != nil {
		return false, err
	}
	if domain.PublishedInRun(rows, e.Attempt, eventMarkerSource, detailType) {
		return false, nil // the activity published it
	}
	ob, err := r.store.GetOnboarding(ctx, e.OnboardingID)
	if err != nil {
		return false, err
	}
	detail := events.OnboardingDetail{
		SiteID: ob.SiteID, OnboardingID: ob.ID, NodeID: ob.NodeID, MAASSystemID: ob.MAASSystemID,
		Hostname: ob.Hostname, CorrelationID: ob.CorrelationID, Attempt: e.Attempt,
		Status: string(e.Status), Stage: string(ob.Stage), OccurredAt: e.At,
	}
	if detail.CorrelationID == "" {
		detail.CorrelationID = ob.ID
	}
	if ob.Error != nil && e.Status != domain.OnboardingCompleted {
		detail.Error = &events.ErrorDetail{Code: ob.Error.Code, Message: ob.Error.Message}
	}
	if err := r.bus.Publish(ctx, detailType, detail); err != nil {
		if events.IsInvalidDetail(err) { // never publishable: say so once and drop it
			r.log.Error("owed terminal event cannot be published", "onboarding_id", ob.ID, "detail_type", detailType, "error", err.Error())
			return false, nil
		}
		return false, err
	}
	r.log.Warn("published a terminal event the workflow had not", "onboarding_id", ob.ID, "attempt", e.Attempt, "detail_type", detailType)
	return true, r.store.AppendOnboardingEvents(ctx, domain.TimelineEntry{
		OnboardingID: ob.ID, Attempt: e.Attempt, Kind: domain.TimelineNote, Stage: ob.Stage,
		Source: eventMarkerSource, Detail: detailType, Time: r.clock.Now(),
	})
}
