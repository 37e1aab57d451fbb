package localstack

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/maasflow/maasflow/shared/clock"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/store"
	"github.com/maasflow/maasflow/shared/store/boltdb"
)

// interruptedCode is the failure code of an onboarding whose execution died
// with the previous local stack process.
const interruptedCode = "LocalStackRestarted"

// interruptedMessage is the failure message of such an onboarding.
const interruptedMessage = "the local stack stopped while this onboarding ran; start a new onboarding"

// failInterrupted closes the onboardings a previous run left pending or
// running. Their executions lived in that process's memory and are gone;
// leaving them open would hold their servers' locks for ever. Each is
// closed as the workflow would have closed it: status failed with a reason,
// completed_at, its enrollment token revoked (store.CloseOnboarding), a
// timeline note, and its node.onboarding.failed event, owed in the close's
// own transaction through the store's outbox. Starting again is the
// operator's call (discovery adopts whatever state the machine reached).
func failInterrupted(ctx context.Context, st *store.Store, clk clock.Clock) (int, error) {
	n := 0
	for _, status := range []domain.OnboardingStatus{domain.OnboardingPending, domain.OnboardingRunning} {
		cursor := ""
		for {
			page, err := st.ListOnboardings(ctx, store.OnboardingFilter{Status: status, Limit: 200, Cursor: cursor})
			if err != nil {
				return n, fmt.Errorf("list %s onboardings: %w", status, err)
			}
			if err := failAll(ctx, st, clk, page.Items); err != nil {
				return n, err
			}
			n += len(page.Items)
			if page.NextCursor == "" {
				break
			}
			cursor = page.NextCursor
		}
	}
	return n, nil
}

// closers is how many interrupted onboardings are closed at once: their
// writes then share the database's transactions (and fsyncs) instead of
// queueing for one each, which at hundreds of open onboardings was most
// of a restart.
const closers = 16

// failAll closes the onboardings of one page, closers at a time, and
// returns the first error.
func failAll(ctx context.Context, st *store.Store, clk clock.Clock, page []domain.Onboarding) error {
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	sem := make(chan struct{}, closers)
	for _, o := range page {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := failOne(ctx, st, clk, o); err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return firstErr
}

// failOne closes one interrupted onboarding. The close writes the outbox
// row of its node.onboarding.failed event in the same transaction, and the
// outbox relay publishes it (outbox.go), so a crash right after the close
// still publishes the event once.
func failOne(ctx context.Context, st *store.Store, clk clock.Clock, o domain.Onboarding) error {
	now := clk.Now().UTC()
	updated, err := st.CloseOnboarding(ctx, o.ID, func(cur *domain.Onboarding) error {
		if cur.Status == domain.OnboardingPending || cur.Status == domain.OnboardingRunning {
			cur.Status = domain.OnboardingFailed
			cur.Error = &domain.Failure{Code: interruptedCode, Message: interruptedMessage, Stage: cur.Stage}
			cur.EnrollmentTaskToken = ""
		}
		if cur.CompletedAt == nil && !domain.IsOpenStatus(cur.Status) {
			cur.CompletedAt = &now
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("close interrupted onboarding %s: %w", o.ID, err)
	}
	return st.AppendOnboardingEvents(ctx, domain.TimelineEntry{
		OnboardingID: o.ID, Time: now, Attempt: updated.Attempt, Kind: domain.TimelineNote,
		Stage: updated.Stage, Outcome: "failed", Source: "restart", Detail: interruptedMessage,
	})
}

// resumeClock is the stack's scaled clock, moved forward at start past the
// latest time the data directory holds. Under --time-scale the previous
// process's clock ran ahead of the wall clock; starting again from the wall
// clock would stamp new writes (the close of an interrupted onboarding
// first) before older ones. Only Now moves: timers take durations.
type resumeClock struct {
	clock.Clock
	offset atomic.Int64 // nanoseconds
}

func (c *resumeClock) Now() time.Time                  { return c.Clock.Now().Add(time.Duration(c.offset.Load())) }
func (c *resumeClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }
func (c *resumeClock) Until(t time.Time) time.Duration { return t.Sub(c.Now()) }

// resumeAfter moves the clock just past t when t is not already past.
// SetBacklog passes the engine's throttling backlog on to a clock that
// governs its speed by it (asl.LoadClock), which embedding would hide.
func (c *resumeClock) SetBacklog(n int64) {
	if lc, ok := c.Clock.(interface{ SetBacklog(n int64) }); ok {
		lc.SetBacklog(n)
	}
}

func (c *resumeClock) resumeAfter(t time.Time) {
	if d := t.Sub(c.Now()); d >= 0 {
		c.offset.Add(int64(d + time.Millisecond))
	}
}

// resumeFromDatabase moves clk past the latest time the database holds and
// has every write stamp the file with clk's time from now on. The stamp is
// read back in one look-up; a file without one (migrated from a journal)
// is read through once with highWater.
func resumeFromDatabase(ctx context.Context, db *boltdb.DB, st *store.Store, clk *resumeClock) error {
	hw, ok, err := db.HighWater()
	if err != nil {
		return fmt.Errorf("open local database: %w", err)
	}
	if !ok {
		if hw, err = highWater(ctx, st); err != nil {
			return err
		}
	}
	clk.resumeAfter(hw)
	db.StampWrites(clk.Now)
	return nil
}

// highWater is the latest time the records hold: every onboarding's and
// decommission's created, updated and completed times, the timelines of
// the open ones (the restart's close appends to them) and the newest audit
// entry.
func highWater(ctx context.Context, st *store.Store) (time.Time, error) {
	var hw time.Time
	later := func(t time.Time) {
		if t.After(hw) {
			hw = t
		}
	}
	cursor := ""
	for {
		page, err := st.ListOnboardings(ctx, store.OnboardingFilter{Limit: store.MaxPageSize, Cursor: cursor})
		if err != nil {
			return hw, fmt.Errorf("list onboardings: %w", err)
		}
		for _, o := range page.Items {
			later(o.CreatedAt)
			later(o.UpdatedAt)
			if o.CompletedAt != nil {
				later(*o.CompletedAt)
			}
			if !domain.IsOpenStatus(o.Status) {
				continue
			}
			rows, err := st.ListOnboardingEvents(ctx, o.ID)
			if err != nil {
				return hw, fmt.Errorf("read timeline of onboarding %s: %w", o.ID, err)
			}
			for _, r := range rows {
				later(r.Time)
			}
		}
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	if err := decommissionsHighWater(ctx, st, later); err != nil {
		return hw, err
	}
	audit, err := st.ListAuditPage(ctx, 1, "")
	if err != nil {
		return hw, fmt.Errorf("read the audit trail: %w", err)
	}
	for _, e := range audit.Items {
		later(e.Time)
	}
	return hw, nil
}

// decommissionsHighWater passes later every decommission's times and the
// timeline times of the open ones.
func decommissionsHighWater(ctx context.Context, st *store.Store, later func(time.Time)) error {
	cursor := ""
	for {
		page, err := st.ListDecommissions(ctx, store.DecommissionFilter{Limit: store.MaxPageSize, Cursor: cursor})
		if err != nil {
			return fmt.Errorf("list decommissions: %w", err)
		}
		for _, d := range page.Items {
			later(d.CreatedAt)
			later(d.UpdatedAt)
			if d.CompletedAt != nil {
				later(*d.CompletedAt)
			}
			if !domain.IsOpenStatus(d.Status) {
				continue
			}
			rows, err := st.ListDecommissionEvents(ctx, d.ID)
			if err != nil {
				return fmt.Errorf("read timeline of decommission %s: %w", d.ID, err)
			}
			for _, r := range rows {
				later(r.Time)
			}
		}
		if page.NextCursor == "" {
			return nil
		}
		cursor = page.NextCursor
	}
}
