package onboarding

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/logfield"
	"github.com/maasflow/maasflow/shared/maas"
)

// SiteEventReader reads a whole region's event log (maas.Client.SiteEvents).
type SiteEventReader interface {
	SiteEvents(ctx context.Context, q maas.SiteEventQuery) ([]maas.Event, error)
}

// WatchSitesInput is one round of the machine watch
// (statemachines/machine-watch.asl.json).
type WatchSitesInput struct {
	Round int `json:"round"`
}

// WatchSitesOutput is the round, echoed for the state machine's Choice,
// and how many watches are left after it.
type WatchSitesOutput struct {
	Round    int `json:"round"`
	Watching int `json:"watching"`
}

const (
	// watchSitesParallel bounds the sites read at once.
	watchSitesParallel = 8
	// watchPagesPerRound caps the event pages one site reads in a round;
	// a site further behind catches up in the next rounds.
	watchPagesPerRound = 10
	// watchRegistrationSlack: a watch registered since the previous
	// round's listing, less this, reads from its own After rather than
	// the site cursor, so an event between its check's read and its
	// registration (which the previous round may have passed over) is
	// still seen. It covers a check's duration with room to spare.
	watchRegistrationSlack = 60 * time.Second
	// watchSiteReadBudget bounds one site's event reads, well inside the
	// round's 25 s task timeout (machine-watch.asl.json): a slow region
	// costs its own wakes by event this round, not the round, and its due
	// waits still wake.
	watchSiteReadBudget = 15 * time.Second
)

// MAAS logs a DEBUG event of this type on every status change, described
// "From 'Commissioning' to 'Ready'" (docs/maas-behaviour.md §11).
const eventNodeChangedStatus = "Node changed status"

// WatchSites is one round of the machine watch. It lists every watch and
// site cursor (one Query), then reads each watched site's new MAAS events
// in one query per site (at most watchSitesParallel sites at once), and
// wakes the waits whose machine logged a status change or an error after
// the event the wait had seen, and those due a full check. A woken wait's
// watch is deleted (also when its task had ended). Each site's cursor
// moves to the newest event read.
//
// One site's failure (MAAS, credentials) is logged and stops nothing
// else; its due waits still wake, and their checks meet the failure with
// the state machine's retries.
//
// Errors: InvalidInputError for a negative round; store errors listing the
// watches.
func (a *Activities) WatchSites(ctx context.Context, in WatchSitesInput) (out WatchSitesOutput, err error) {
	out.Round = in.Round
	if in.Round < 0 {
		return out, &activities.InvalidInputError{Field: "round", Reason: "must be 0 or more"}
	}
	ctx, cancel := a.bound(ctx)
	defer cancel()
	if a.d.Watches == nil {
		return out, &activities.ActivityFailedError{Activity: "WatchSites", Message: "no watch store configured"}
	}
	if a.d.Completer == nil {
		return out, &activities.ActivityFailedError{Activity: "WatchSites", Message: "no task completer configured"}
	}
	log := a.d.Logger.With(slog.String(logfield.Activity, "WatchSites"), slog.Int("round", in.Round))
	listedAt := a.d.Clock.Now().UTC()
	listed, err := a.d.Watches.ListMachineWatches(ctx)
	if err != nil {
		return out, activities.StoreError("list machine watches", err)
	}
	bySite := map[string][]domain.MachineWatch{}
	for _, w := range listed.Watches {
		bySite[w.SiteID] = append(bySite[w.SiteID], w)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		left  = 0
		slots = make(chan struct{}, watchSitesParallel)
	)
	siteRound := func(siteID string, watches []domain.MachineWatch) int {
		cursor, hasCursor := listed.Cursors[siteID]
		sw := siteWatch{a: a, siteID: siteID, watches: watches, cursor: cursor, hasCursor: hasCursor, listedAt: listedAt,
			log: log.With(slog.String(logfield.SiteID, siteID))}
		return sw.round(ctx)
	}
	for siteID, watches := range bySite {
		if len(bySite) == 1 {
			// A lone site is read here: a goroutine of its own would only
			// grow a fresh stack for the MAAS call, every round.
			left = siteRound(siteID, watches)
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			n := siteRound(siteID, watches)
			mu.Lock()
			left += n
			mu.Unlock()
		}()
	}
	wg.Wait()
	out.Watching = left
	log.DebugContext(ctx, "watch round done", slog.Int("sites", len(bySite)), slog.Int("watches", len(listed.Watches)),
		slog.Int("watching", left))
	return out, nil
}

// siteWatch is one site's part of a round.
type siteWatch struct {
	a         *Activities
	siteID    string
	watches   []domain.MachineWatch
	cursor    domain.WatchCursor
	hasCursor bool
	listedAt  time.Time
	log       *slog.Logger
}

// round reads the site's new events, wakes its waits and moves its
// cursor; it returns how many watches are left.
func (s siteWatch) round(ctx context.Context) int {
	now := s.a.d.Clock.Now().UTC()
	readCtx, cancel := context.WithTimeout(ctx, watchSiteReadBudget)
	events, newest, readErr := s.readEvents(readCtx)
	cancel()
	if readErr != nil {
		// The type only: a MAAS or credentials error names the site, never
		// its key, but the watcher's log need not repeat any of it.
		s.log.WarnContext(ctx, "site events not read; waking only the due waits", slog.String("error_type", fmt.Sprintf("%T", activities.RootError(readErr))))
	}
	woken := s.wakeReasons(events, now)
	left := len(s.watches)
	for _, w := range s.watches {
		reason, ok := woken[w.SystemID]
		if !ok {
			continue
		}
		if s.wake(ctx, w, reason) {
			left--
		}
	}
	if newest > s.cursor.After || (!s.hasCursor && newest > 0) {
		err := s.a.d.Watches.PutWatchCursor(ctx, domain.WatchCursor{SiteID: s.siteID, After: newest, ListedAt: s.listedAt})
		if err != nil {
			s.log.WarnContext(ctx, "site watch cursor not written", slog.String("error_type", fmt.Sprintf("%T", activities.RootError(err))))
		}
	}
	return left
}

// from is the event id the round reads after. A watch the previous round
// listed (registered before that listing, less watchRegistrationSlack)
// has had every event up to the site cursor judged for it; a watch
// registered since has seen only what its check read (its After), and an
// event between that read and its registration may be behind the cursor.
// So from is the lowest of the cursor (when any watch is older than it)
// and the fresh watches' After; a cursor no current watch is older than
// (a site idle since its last waits) is not read from at all.
func (s siteWatch) from() int64 {
	since := s.cursor.ListedAt.Add(-watchRegistrationSlack)
	after := int64(-1)
	for _, w := range s.watches {
		own := w.After
		if s.hasCursor && w.RegisteredAt.Before(since) {
			own = s.cursor.After
		}
		if after < 0 || own < after {
			after = own
		}
	}
	return max(after, 0)
}

// readEvents reads the site's events after from(), page by page while
// pages come back full (at most watchPagesPerRound), and returns them with
// the newest id read. From 0 it reads the newest page only, which places
// the cursor.
func (s siteWatch) readEvents(ctx context.Context) ([]maas.Event, int64, error) {
	newest := s.cursor.After
	client, err := s.a.watchClients.get(ctx, s.a.d.MAAS, s.siteID, s.a.d.Clock.Now())
	if err != nil {
		return nil, newest, err
	}
	reader, ok := client.(SiteEventReader)
	if !ok {
		return nil, newest, &activities.ActivityFailedError{Activity: "WatchSites", Message: "the site's MAAS client cannot read the region's events"}
	}
	after := s.from()
	var all []maas.Event
	for range watchPagesPerRound {
		page, err := reader.SiteEvents(ctx, maas.SiteEventQuery{After: after, Limit: activities.MaxEventsPerPoll})
		if err != nil {
			// The next round builds the client afresh: the site's key or
			// address may have changed.
			s.a.watchClients.drop(s.siteID)
			return all, newest, err
		}
		all = append(all, page...)
		for _, e := range page {
			newest = max(newest, e.ID)
		}
		if after == 0 || len(page) < activities.MaxEventsPerPoll {
			break
		}
		after = page[0].ID
	}
	return all, newest, nil
}

// wakeReasons says which machines' waits wake and why: an event of the
// machine newer than what its wait saw that can end the wait (wakesWait),
// or the wait being due.
func (s siteWatch) wakeReasons(events []maas.Event, now time.Time) map[string]string {
	byMachine := map[string]domain.MachineWatch{}
	for _, w := range s.watches {
		byMachine[w.SystemID] = w
	}
	out := map[string]string{}
	for _, e := range events {
		w, watched := byMachine[e.Node]
		if !watched || e.ID <= w.After {
			continue
		}
		if wakesWait(e, activities.PollTarget(w.Target)) {
			out[e.Node] = wokeEvent
		}
	}
	for _, w := range s.watches {
		if _, ok := out[w.SystemID]; !ok && !now.Before(w.WakeAt) {
			out[w.SystemID] = wokeDue
		}
	}
	return out
}

// wake completes the wait's task token and deletes its watch; false when
// the workflow could not be reached (the watch stays for the next round).
func (s siteWatch) wake(ctx context.Context, w domain.MachineWatch, reason string) bool {
	log := s.log.With(slog.String(logfield.MAASSystemID, w.SystemID), slog.String(logfield.OnboardingID, w.OnboardingID),
		slog.String("woke", reason))
	err := s.a.d.Completer.CompleteTask(ctx, w.TaskToken.Reveal(), wakeOutput(reason))
	switch {
	case err == nil:
		log.InfoContext(ctx, "machine wait woken")
	case taskEnded(err):
		log.InfoContext(ctx, "machine wait had ended; watch dropped")
	default:
		log.WarnContext(ctx, "machine wait not woken", slog.String("error_type", fmt.Sprintf("%T", activities.RootError(err))))
		return false
	}
	if err := s.a.d.Watches.DeleteMachineWatch(ctx, w.SiteID, w.SystemID, w.TaskToken); err != nil {
		// The task is completed; a watch left behind only wakes an ended
		// task next round, which deletes it then.
		log.WarnContext(ctx, "machine watch not deleted", slog.String("error_type", fmt.Sprintf("%T", activities.RootError(err))))
	}
	return true
}

// wakesWait says whether a MAAS event of the machine can end a wait for
// target: a warning or worse (a deploy whose OS cannot reach the metadata
// service shows only there, while the machine stays Deploying — the
// levels domain.IsDatasourceFailureEvent reads), or a status change —
// except a move to a status the wait is still in progress in (Commissioning
// to Testing for the wait for Ready), which the check would only answer
// with in_progress. A status change whose new status cannot be read from
// its description wakes.
func wakesWait(e maas.Event, target activities.PollTarget) bool {
	switch e.Level {
	case maas.EventLevelWarning, maas.EventLevelError, maas.EventLevelCritical:
		return true
	}
	if e.Type != eventNodeChangedStatus {
		return false
	}
	to, ok := changedStatusTo(e.Description)
	if !ok {
		return true
	}
	for _, st := range inProgressStatuses[target] {
		if st.String() == to {
			return false
		}
	}
	return true
}

// changedStatusTo reads the new status's display name from a "Node changed
// status" description: "From 'Commissioning' to 'Testing'", with
// " (to <owner>)" after it for Allocated (maas-behaviour §11).
func changedStatusTo(desc string) (string, bool) {
	const sep = "' to '"
	i := strings.Index(desc, sep)
	if !strings.HasPrefix(desc, "From '") || i < 0 {
		return "", false
	}
	rest := desc[i+len(sep):]
	end := strings.IndexByte(rest, '\'')
	if end < 0 {
		return "", false
	}
	return rest[:end], true
}

// watchClientTTL is how long WatchSites keeps a site's MAAS client: its
// rounds come twice a minute, and reading the site's record and key for
// each (Secrets Manager on AWS) would cost more than the events query
// itself. A changed key is picked up within this, or at once after a
// failed query.
const watchClientTTL = 5 * time.Minute

// siteClients is a small cache of MAAS clients by site, kept by a warm
// Lambda container (or the local stack) between rounds.
type siteClients struct {
	mu      sync.Mutex
	clients map[string]cachedClient
}

type cachedClient struct {
	client activities.MAAS
	until  time.Time
}

func (c *siteClients) get(ctx context.Context, conn activities.Connector, siteID string, now time.Time) (activities.MAAS, error) {
	c.mu.Lock()
	cached, ok := c.clients[siteID]
	c.mu.Unlock()
	if ok && now.Before(cached.until) {
		return cached.client, nil
	}
	client, err := conn.ForSite(ctx, siteID)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.clients == nil {
		c.clients = map[string]cachedClient{}
	}
	c.clients[siteID] = cachedClient{client: client, until: now.Add(watchClientTTL)}
	return client, nil
}

func (c *siteClients) drop(siteID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.clients, siteID)
}
