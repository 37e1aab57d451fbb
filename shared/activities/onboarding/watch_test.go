package onboarding_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/activities/onboarding"
	"github.com/maasflow/maasflow/shared/clock"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
	"github.com/maasflow/maasflow/shared/run"
	"github.com/maasflow/maasflow/shared/store"
)

var watchNow = time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)

// fakeRegion is a MAAS region's event log as events/?op=query pages it
// (maas-behaviour §11): without after the limit newest, with after the
// limit oldest after it; either way newest first.
type fakeRegion struct {
	activities.MAAS // only SiteEvents is called

	mu     sync.Mutex
	events []maas.Event // oldest first
	err    error
	afters []int64
}

func (r *fakeRegion) add(e maas.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *fakeRegion) SiteEvents(_ context.Context, q maas.SiteEventQuery) ([]maas.Event, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.afters = append(r.afters, q.After)
	if r.err != nil {
		return nil, r.err
	}
	var page []maas.Event
	if q.After == 0 {
		page = slices.Clone(r.events[max(0, len(r.events)-q.Limit):])
	} else {
		for _, e := range r.events {
			if e.ID > q.After && len(page) < q.Limit {
				page = append(page, e)
			}
		}
	}
	slices.Reverse(page)
	return page, nil
}

type fakeRegions map[string]*fakeRegion

func (f fakeRegions) ForSite(_ context.Context, siteID string) (activities.MAAS, error) {
	r, ok := f[siteID]
	if !ok {
		return nil, &activities.SiteCredentialsError{SiteID: siteID, Reason: "no such site"}
	}
	return r, nil
}

// fakeCompleter records the wakes; ended tokens answer as a task that has
// ended, broken ones as a workflow that cannot be reached.
type fakeCompleter struct {
	mu     sync.Mutex
	woken  map[string]string // token → reason
	ended  map[string]bool
	broken map[string]bool
}

func (c *fakeCompleter) CompleteTask(_ context.Context, token string, output []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended[token] {
		return fmt.Errorf("complete task: %w", &run.TaskEndedError{})
	}
	if c.broken[token] {
		return fmt.Errorf("complete task %s: %w", token, errors.New("connection refused"))
	}
	var out struct {
		Woke string `json:"woke"`
	}
	if err := json.Unmarshal(output, &out); err != nil {
		return err
	}
	if c.woken == nil {
		c.woken = map[string]string{}
	}
	c.woken[token] = out.Woke
	return nil
}

// cursorCounter counts the cursor writes.
type cursorCounter struct {
	*store.Store
	mu   sync.Mutex
	puts []domain.WatchCursor
}

func (c *cursorCounter) PutWatchCursor(ctx context.Context, cur domain.WatchCursor) error {
	c.mu.Lock()
	c.puts = append(c.puts, cur)
	c.mu.Unlock()
	return c.Store.PutWatchCursor(ctx, cur)
}

type watchEnv struct {
	t       *testing.T
	clk     *clockwork.FakeClock
	store   *cursorCounter
	regions fakeRegions
	done    *fakeCompleter
	logs    *bytes.Buffer
	a       *onboarding.Activities
}

func newWatchEnv(t *testing.T, sites ...string) *watchEnv {
	t.Helper()
	db, err := store.NewLocalDB(context.Background(), "")
	require.NoError(t, err)
	clk := clock.NewFake(watchNow)
	e := &watchEnv{t: t, clk: clk, store: &cursorCounter{Store: store.New(db, "", clk.Now)}, regions: fakeRegions{},
		done: &fakeCompleter{ended: map[string]bool{}, broken: map[string]bool{}}, logs: &bytes.Buffer{}}
	for _, s := range sites {
		e.regions[s] = &fakeRegion{}
	}
	e.a = onboarding.New(activities.Deps{Watches: e.store, MAAS: e.regions, Completer: e.done, Clock: clk,
		Logger: slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	return e
}

// watch registers a watch as WatchMachine would have, registeredAgo
// before now.
func (e *watchEnv) watch(site, sid string, after int64, wakeIn, registeredAgo time.Duration) string {
	e.t.Helper()
	token := "secret-token-" + site + "-" + sid
	require.NoError(e.t, e.store.PutMachineWatch(context.Background(), domain.MachineWatch{
		SiteID: site, SystemID: sid, OnboardingID: "onb-" + sid, Attempt: 1, Target: "ready",
		TaskToken: domain.Secret(token), After: after, WakeAt: watchNow.Add(wakeIn), RegisteredAt: watchNow.Add(-registeredAgo),
	}))
	return token
}

func (e *watchEnv) cursor(site string, after int64, listedAgo time.Duration) {
	e.t.Helper()
	require.NoError(e.t, e.store.Store.PutWatchCursor(context.Background(), domain.WatchCursor{SiteID: site, After: after, ListedAt: watchNow.Add(-listedAgo)}))
}

func (e *watchEnv) round() onboarding.WatchSitesOutput {
	e.t.Helper()
	out, err := e.a.WatchSites(context.Background(), onboarding.WatchSitesInput{Round: 1})
	require.NoError(e.t, err)
	assert.Equal(e.t, 1, out.Round)
	assert.NotContains(e.t, e.logs.String(), "secret-token", "a task token reached the log")
	return out
}

func (e *watchEnv) left() []string {
	e.t.Helper()
	got, err := e.store.ListMachineWatches(context.Background())
	require.NoError(e.t, err)
	var out []string
	for _, w := range got.Watches {
		out = append(out, w.SystemID)
	}
	return out
}

func ev(id int64, node, level, typ string) maas.Event {
	return maas.Event{ID: id, Node: node, Level: level, Type: typ, Created: watchNow}
}

const changed = "Node changed status"

func TestWatchSitesWakeRules(t *testing.T) {
	e := newWatchEnv(t, "s1")
	e.cursor("s1", 100, 5*time.Minute)
	long := 10 * time.Minute
	status := e.watch("s1", "m-status", 100, long, long)
	info := e.watch("s1", "m-info", 100, long, long)
	failed := e.watch("s1", "m-error", 100, long, long)
	due := e.watch("s1", "m-due", 100, 0, long)
	seen := e.watch("s1", "m-seen", 105, long, long)
	r := e.regions["s1"]
	r.add(ev(99, "m-status", maas.EventLevelDebug, changed)) // before the cursor: read already
	r.add(ev(101, "m-status", maas.EventLevelDebug, changed))
	r.add(ev(102, "m-info", maas.EventLevelInfo, "Performing PXE boot"))
	r.add(ev(103, "m-error", maas.EventLevelError, "Marking node failed"))
	r.add(ev(104, "m-seen", maas.EventLevelDebug, changed)) // the wait saw it (after 105)
	r.add(ev(106, "other", maas.EventLevelDebug, changed))  // a machine nobody watches

	out := e.round()
	assert.Equal(t, map[string]string{status: "event", failed: "event", due: "due"}, e.done.woken)
	assert.NotContains(t, e.done.woken, info, "an INFO progress event does not wake")
	assert.NotContains(t, e.done.woken, seen, "an event the wait saw does not wake it")
	assert.Equal(t, 2, out.Watching)
	assert.ElementsMatch(t, []string{"m-info", "m-seen"}, e.left(), "woken watches are deleted")
	assert.Equal(t, []int64{100}, r.afters, "one query, from the cursor")
	require.Len(t, e.store.puts, 1)
	assert.Equal(t, domain.WatchCursor{SiteID: "s1", After: 106, ListedAt: watchNow}, e.store.puts[0])
}

// A move into a status the wait is still in progress in (Commissioning to
// Testing for the wait for Ready) wakes nothing; a move out of them does,
// and so do a description the watch cannot read and a warning.
func TestWatchSitesSleepsThroughAMoveStillInProgress(t *testing.T) {
	e := newWatchEnv(t, "s1")
	e.cursor("s1", 100, 5*time.Minute)
	long := 10 * time.Minute
	inTesting := e.watch("s1", "m-testing", 100, long, long)
	failed := e.watch("s1", "m-failed", 100, long, long)
	ready := e.watch("s1", "m-ready", 100, long, long)
	odd := e.watch("s1", "m-odd", 100, long, long)
	r := e.regions["s1"]
	move := func(id int64, node, desc string) {
		change := ev(id, node, maas.EventLevelDebug, changed)
		change.Description = desc
		r.add(change)
	}
	move(101, "m-testing", "From 'Commissioning' to 'Testing'")
	move(102, "m-failed", "From 'Commissioning' to 'Testing'")
	move(103, "m-failed", "From 'Testing' to 'Failed testing'")
	move(104, "m-ready", "From 'Testing' to 'Ready'")
	move(105, "m-odd", "status went somewhere")
	warned := e.watch("s1", "m-warned", 100, long, long)
	r.add(ev(106, "m-warned", maas.EventLevelWarning, "Node post-installation failure"))

	e.round()
	assert.Equal(t, map[string]string{failed: "event", ready: "event", odd: "event", warned: "event"}, e.done.woken)
	assert.NotContains(t, e.done.woken, inTesting)
	assert.Equal(t, []string{"m-testing"}, e.left())
}

func TestWatchSitesWritesTheCursorOnlyWhenItMoves(t *testing.T) {
	e := newWatchEnv(t, "s1")
	e.cursor("s1", 10, time.Minute)
	e.watch("s1", "m1", 10, time.Hour, time.Hour)
	r := e.regions["s1"]
	r.add(ev(10, "m1", maas.EventLevelInfo, "Commissioning"))

	assert.Equal(t, 1, e.round().Watching)
	assert.Empty(t, e.store.puts, "nothing new: no write")
	r.add(ev(11, "m1", maas.EventLevelInfo, "Loading ephemeral"))
	assert.Equal(t, 1, e.round().Watching)
	require.Len(t, e.store.puts, 1)
	assert.Equal(t, int64(11), e.store.puts[0].After)
	assert.Equal(t, []int64{10, 10}, r.afters)
}

// TestWatchSitesSeesAnEventFromBeforeTheRegistration: a check read the
// machine's events up to 150, MAAS logged its change as 180, the previous
// round read 180 and moved the cursor to 200, and only then did the wait
// register: it still wakes, because a fresh registration reads from its
// own After.
func TestWatchSitesSeesAnEventFromBeforeTheRegistration(t *testing.T) {
	e := newWatchEnv(t, "s1")
	e.cursor("s1", 200, 30*time.Second)
	token := e.watch("s1", "m1", 150, time.Hour, 10*time.Second)
	r := e.regions["s1"]
	for id := int64(150); id <= 200; id++ {
		typ := "Rebooting"
		if id == 180 {
			typ = changed
		}
		r.add(ev(id, map[bool]string{true: "m1", false: "m2"}[id == 180], maas.EventLevelDebug, typ))
	}

	assert.Zero(t, e.round().Watching)
	assert.Equal(t, "event", e.done.woken[token])
	assert.Equal(t, []int64{150}, r.afters)
	assert.Empty(t, e.store.puts, "the cursor stays where it was")
}

// TestWatchSitesSkipsAStaleCursor: a site idle since its last waits has a
// cursor far behind; its new waits read from what their checks saw, not
// through everything the region logged meanwhile.
func TestWatchSitesSkipsAStaleCursor(t *testing.T) {
	e := newWatchEnv(t, "s1")
	e.cursor("s1", 10, 5*time.Hour)
	token := e.watch("s1", "m1", 5000, time.Hour, time.Minute)
	e.watch("s1", "m2", 5200, time.Hour, time.Minute)
	r := e.regions["s1"]
	r.add(ev(4000, "m1", maas.EventLevelDebug, changed)) // before its check's read
	r.add(ev(5100, "m1", maas.EventLevelDebug, changed))

	assert.Equal(t, 1, e.round().Watching)
	assert.Equal(t, map[string]string{token: "event"}, e.done.woken)
	assert.Equal(t, []int64{5000}, r.afters, "from the oldest fresh watch, not the stale cursor")
	require.Len(t, e.store.puts, 1)
	assert.Equal(t, int64(5100), e.store.puts[0].After)
}

func TestWatchSitesPagesWhilePagesAreFull(t *testing.T) {
	e := newWatchEnv(t, "s1")
	e.cursor("s1", 1, time.Minute)
	token := e.watch("s1", "m1", 1, time.Hour, time.Hour)
	r := e.regions["s1"]
	for id := int64(2); id <= 2500; id++ {
		r.add(ev(id, "busy", maas.EventLevelInfo, "Rebooting"))
	}
	r.add(ev(2501, "m1", maas.EventLevelDebug, changed))

	assert.Zero(t, e.round().Watching)
	assert.Equal(t, "event", e.done.woken[token])
	assert.Equal(t, []int64{1, 1001, 2001}, r.afters)
	require.Len(t, e.store.puts, 1)
	assert.Equal(t, int64(2501), e.store.puts[0].After)
}

// TestWatchSitesCapsThePagesOfARound: a site far behind reads ten pages
// in a round and the rest in the next.
func TestWatchSitesCapsThePagesOfARound(t *testing.T) {
	e := newWatchEnv(t, "s1")
	e.cursor("s1", 1, time.Minute)
	e.watch("s1", "m1", 1, time.Hour, time.Hour)
	r := e.regions["s1"]
	for id := int64(2); id <= 12001; id++ {
		r.add(ev(id, "busy", maas.EventLevelInfo, "Rebooting"))
	}
	e.round()
	assert.Len(t, r.afters, 10)
	require.Len(t, e.store.puts, 1)
	assert.Equal(t, int64(10001), e.store.puts[0].After)
	e.clk.Advance(30 * time.Second)
	e.round()
	assert.Equal(t, int64(10001), r.afters[10], "the next round goes on from there")
	assert.Equal(t, int64(12001), e.store.puts[1].After)
}

func TestWatchSitesStartsASiteWithoutCursor(t *testing.T) {
	e := newWatchEnv(t, "s1", "s2")
	a := e.watch("s1", "m1", 70, time.Hour, time.Minute)
	e.watch("s1", "m2", 50, time.Hour, time.Minute)
	e.watch("s2", "m3", 0, time.Hour, time.Minute)
	e.regions["s1"].add(ev(60, "m1", maas.EventLevelDebug, changed)) // m1 saw it
	e.regions["s1"].add(ev(80, "m1", maas.EventLevelDebug, changed))
	e.regions["s2"].add(ev(5, "m9", maas.EventLevelDebug, changed))

	assert.Equal(t, 2, e.round().Watching)
	assert.Equal(t, map[string]string{a: "event"}, e.done.woken)
	assert.Equal(t, []int64{50}, e.regions["s1"].afters, "from the oldest watch")
	assert.Equal(t, []int64{0}, e.regions["s2"].afters, "nothing seen yet: the newest page places the cursor")
	assert.ElementsMatch(t, []int64{80, 5}, []int64{e.store.puts[0].After, e.store.puts[1].After})
}

func TestWatchSitesDropsTheWatchOfAnEndedTask(t *testing.T) {
	e := newWatchEnv(t, "s1")
	e.cursor("s1", 1, time.Minute)
	ended := e.watch("s1", "m-ended", 1, 0, time.Hour)
	broken := e.watch("s1", "m-broken", 1, 0, time.Hour)
	e.done.ended[ended] = true
	e.done.broken[broken] = true

	assert.Equal(t, 1, e.round().Watching)
	assert.Equal(t, []string{"m-broken"}, e.left(), "an ended task's watch goes; an unreached one stays for the next round")
	assert.Contains(t, e.logs.String(), "machine wait not woken")
}

// TestWatchSitesOneSiteFailingStopsNoOther: a site whose MAAS fails is
// logged by type; its due waits wake (their check meets the failure and
// retries), its others wait; another site is served as usual.
func TestWatchSitesOneSiteFailingStopsNoOther(t *testing.T) {
	e := newWatchEnv(t, "down", "up")
	e.cursor("down", 1, time.Minute)
	e.cursor("up", 1, time.Minute)
	due := e.watch("down", "m1", 1, 0, time.Hour)
	e.watch("down", "m2", 1, time.Hour, time.Hour)
	up := e.watch("up", "m3", 1, time.Hour, time.Hour)
	e.watch("gone", "m4", 1, time.Hour, time.Hour) // a site with no record
	e.regions["down"].err = &maas.MAASUnavailableError{Op: "query site events", StatusCode: 503, Message: "region down"}
	e.regions["up"].add(ev(2, "m3", maas.EventLevelDebug, changed))

	assert.Equal(t, 2, e.round().Watching)
	assert.Equal(t, map[string]string{due: "due", up: "event"}, e.done.woken)
	logs := e.logs.String()
	assert.Contains(t, logs, `"error_type":"*maas.MAASUnavailableError"`)
	assert.Contains(t, logs, `"site_id":"down"`)
	assert.Contains(t, logs, `"error_type":"*activities.SiteCredentialsError"`)
	require.Len(t, e.store.puts, 1, "only the site that was read moves its cursor")
	assert.Equal(t, "up", e.store.puts[0].SiteID)
}

func TestWatchSitesRefusesANegativeRound(t *testing.T) {
	e := newWatchEnv(t)
	_, err := e.a.WatchSites(context.Background(), onboarding.WatchSitesInput{Round: -1})
	var invalid *activities.InvalidInputError
	require.ErrorAs(t, err, &invalid)
	assert.Equal(t, "round", invalid.Field)
}

func watchInput(attempt, run int, token string) onboarding.WatchMachineInput {
	return onboarding.WatchMachineInput{
		OnboardingRef: onboarding.OnboardingRef{OnboardingID: "onb-1", SiteID: "s1", Hostname: "gpu-01", Attempt: attempt, Run: run},
		Target:        activities.TargetReady, SystemID: "abc123", TaskToken: token,
		Poll: activities.Poll{LastEventID: 42, WakeAt: watchNow.Add(10 * time.Minute).Format(time.RFC3339Nano)},
	}
}

func TestWatchMachineParksTheWait(t *testing.T) {
	e := newWatchEnv(t, "s1")
	out, err := e.a.WatchMachine(context.Background(), watchInput(2, 1, "secret-token-a"))
	require.NoError(t, err)
	assert.True(t, out.Registered)
	got, err := e.store.ListMachineWatches(context.Background())
	require.NoError(t, err)
	require.Len(t, got.Watches, 1)
	w := got.Watches[0]
	assert.Equal(t, domain.MachineWatch{SiteID: "s1", SystemID: "abc123", OnboardingID: "onb-1", Attempt: 2, Run: 1, Target: "ready",
		TaskToken: "secret-token-a", After: 42, WakeAt: watchNow.Add(10 * time.Minute), RegisteredAt: watchNow}, w)
	assert.Empty(t, e.done.woken, "parked, not woken")

	t.Run("an older attempt's wait does not replace it and is let go", func(t *testing.T) {
		out, err := e.a.WatchMachine(context.Background(), watchInput(1, 5, "secret-token-old"))
		require.NoError(t, err)
		assert.False(t, out.Registered)
		assert.Equal(t, "superseded", e.done.woken["secret-token-old"])
		got, err := e.store.ListMachineWatches(context.Background())
		require.NoError(t, err)
		assert.Equal(t, domain.Secret("secret-token-a"), got.Watches[0].TaskToken)
	})
	assert.NotContains(t, e.logs.String(), "secret-token")
}

func TestWatchMachineNamesTheBadField(t *testing.T) {
	e := newWatchEnv(t)
	for field, mutate := range map[string]func(*onboarding.WatchMachineInput){
		"onboarding_id":      func(in *onboarding.WatchMachineInput) { in.OnboardingID = "" },
		"site_id":            func(in *onboarding.WatchMachineInput) { in.SiteID = "" },
		"system_id":          func(in *onboarding.WatchMachineInput) { in.SystemID = "" },
		"task_token":         func(in *onboarding.WatchMachineInput) { in.TaskToken = "" },
		"target":             func(in *onboarding.WatchMachineInput) { in.Target = "installed" },
		"poll.wake_at":       func(in *onboarding.WatchMachineInput) { in.Poll.WakeAt = "tomorrow" },
		"poll.last_event_id": func(in *onboarding.WatchMachineInput) { in.Poll.LastEventID = -1 },
	} {
		in := watchInput(1, 0, "secret-token-x")
		mutate(&in)
		_, err := e.a.WatchMachine(context.Background(), in)
		var invalid *activities.InvalidInputError
		require.ErrorAs(t, err, &invalid, field)
		assert.Equal(t, field, invalid.Field)
		assert.NotContains(t, err.Error(), "secret-token")
	}
}

// countingConnector counts the MAAS clients built.
type countingConnector struct {
	activities.Connector
	built atomic.Int32
}

func (c *countingConnector) ForSite(ctx context.Context, siteID string) (activities.MAAS, error) {
	c.built.Add(1)
	return c.Connector.ForSite(ctx, siteID)
}

// The watcher keeps a site's MAAS client across rounds for a few minutes,
// and builds it afresh after that or after a failed query.
func TestWatchSitesKeepsTheSiteClientAcrossRounds(t *testing.T) {
	e := newWatchEnv(t, "s1")
	conn := &countingConnector{Connector: e.regions}
	e.a = onboarding.New(activities.Deps{Watches: e.store, MAAS: conn, Completer: e.done, Clock: e.clk,
		Logger: slog.New(slog.NewJSONHandler(e.logs, nil))})
	e.cursor("s1", 100, time.Minute)
	e.watch("s1", "m1", 100, time.Hour, time.Hour)

	e.round()
	e.round()
	assert.EqualValues(t, 1, conn.built.Load(), "one client for two rounds")

	e.clk.Advance(6 * time.Minute)
	e.round()
	assert.EqualValues(t, 2, conn.built.Load(), "rebuilt once it is five minutes old")

	e.regions["s1"].err = errors.New("401 Unauthorized")
	e.round()
	e.regions["s1"].err = nil
	e.round()
	assert.EqualValues(t, 3, conn.built.Load(), "rebuilt after a failed query")
}
