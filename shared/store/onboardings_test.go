package store

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
)

// onboarding is an onboarding of host; each host name has its own BMC
// address, as each server does.
func onboarding(id, site, host string) domain.Onboarding {
	h := fnv.New32a()
	_, _ = h.Write([]byte(strings.ToLower(host)))
	sum := h.Sum32()
	ip := fmt.Sprintf("10.%d.%d.%d", sum>>16&0xff, sum>>8&0xff, sum&0xff|1)
	return domain.Onboarding{ID: id, SiteID: site, ProfileID: "p1", SKUID: "h100x8", Hostname: host, IPMIIP: ip}
}

func TestCreateOnboarding(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newTestStore(t)
	require.NoError(t, s.CreateOnboarding(ctx, onboarding("o1", "s1", "gpu01")))

	got, err := s.GetOnboarding(ctx, "o1")
	require.NoError(t, err)
	assert.Equal(t, domain.OnboardingPending, got.Status)
	assert.Equal(t, int64(1), got.Version)
	assert.Equal(t, t0, got.CreatedAt)

	holder, open, err := s.FindOpenOnboarding(ctx, "s1", "GPU01")
	require.NoError(t, err)
	assert.True(t, open)
	assert.Equal(t, "o1", holder)

	tests := []struct {
		name   string
		o      domain.Onboarding
		check  func(t *testing.T, err error)
		stored bool
	}{
		{
			name: "same host, same case", o: onboarding("o2", "s1", "gpu01"),
			check: func(t *testing.T, err error) {
				t.Helper()
				var oe *OpenOnboardingExistsError
				require.ErrorAs(t, err, &oe)
				assert.Equal(t, OpenOnboardingExistsError{SiteID: "s1", Hostname: "gpu01", OnboardingID: "o1"}, *oe)
			},
		},
		{
			name: "same host, other case", o: onboarding("o3", "s1", "GPU01"),
			check: func(t *testing.T, err error) { t.Helper(); require.ErrorAs(t, err, new(*OpenOnboardingExistsError)) },
		},
		{
			name: "same id", o: onboarding("o1", "s1", "gpu02"),
			check: func(t *testing.T, err error) { t.Helper(); require.ErrorAs(t, err, new(*ItemConflictError)) },
		},
		{
			name: "no hostname", o: onboarding("o4", "s1", ""),
			check: func(t *testing.T, err error) { t.Helper(); require.ErrorAs(t, err, new(*InvalidRecordError)) },
		},
		{
			name: "same host on another site", o: onboarding("o5", "s2", "gpu01"),
			check: func(t *testing.T, err error) { t.Helper(); require.NoError(t, err) }, stored: true,
		},
		{
			name: "closed on arrival takes no lock", o: func() domain.Onboarding {
				o := onboarding("o6", "s1", "gpu01")
				o.Status = domain.OnboardingCancelled
				return o
			}(),
			check: func(t *testing.T, err error) { t.Helper(); require.NoError(t, err) }, stored: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, s.CreateOnboarding(ctx, tc.o))
			got, err := s.GetOnboarding(ctx, tc.o.ID)
			if tc.stored {
				require.NoError(t, err)
				assert.Equal(t, tc.o.Hostname, got.Hostname)
			} else if tc.o.ID != "o1" {
				require.ErrorAs(t, err, new(*ItemNotFoundError), "a refused create writes nothing")
			}
		})
	}
	holder, _, err = s.FindOpenOnboarding(ctx, "s1", "gpu01")
	require.NoError(t, err)
	assert.Equal(t, "o1", holder, "the lock still names the first onboarding")
}

func TestUpdateOnboardingMovesTheHostLock(t *testing.T) {
	ctx := context.Background()
	s, clk, _ := newTestStore(t)
	require.NoError(t, s.CreateOnboarding(ctx, onboarding("o1", "s1", "gpu01")))

	setStatus := func(st domain.OnboardingStatus) Mutator[domain.Onboarding] {
		return func(o *domain.Onboarding) error { o.Status = st; return nil }
	}

	// open → open keeps the lock.
	clk.Advance(time.Second)
	got, err := s.UpdateOnboarding(ctx, "o1", func(o *domain.Onboarding) error {
		o.Status, o.Stage, o.MAASSystemID = domain.OnboardingRunning, domain.StageDiscover, "abc123"
		o.CreatedAt = time.Time{} // ignored
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, int64(2), got.Version)
	assert.Equal(t, t0, got.CreatedAt)
	assert.Equal(t, t0.Add(time.Second), got.UpdatedAt)
	_, open, err := s.FindOpenOnboarding(ctx, "s1", "gpu01")
	require.NoError(t, err)
	assert.True(t, open)

	// open → closed releases it in the same write.
	_, err = s.UpdateOnboarding(ctx, "o1", setStatus(domain.OnboardingFailed))
	require.NoError(t, err)
	_, open, err = s.FindOpenOnboarding(ctx, "s1", "gpu01")
	require.NoError(t, err)
	assert.False(t, open)

	// A new onboarding may now take the host…
	require.NoError(t, s.CreateOnboarding(ctx, onboarding("o2", "s1", "gpu01")))
	// …so reopening the old one is refused and changes nothing.
	_, err = s.UpdateOnboarding(ctx, "o1", setStatus(domain.OnboardingRunning))
	var oe *OpenOnboardingExistsError
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, "o2", oe.OnboardingID)
	old, err := s.GetOnboarding(ctx, "o1")
	require.NoError(t, err)
	assert.Equal(t, domain.OnboardingFailed, old.Status)

	// Once o2 is done, o1 can be reopened and holds the lock again.
	_, err = s.UpdateOnboarding(ctx, "o2", setStatus(domain.OnboardingCompleted))
	require.NoError(t, err)
	_, err = s.UpdateOnboarding(ctx, "o1", setStatus(domain.OnboardingRunning))
	require.NoError(t, err)
	holder, _, err := s.FindOpenOnboarding(ctx, "s1", "gpu01")
	require.NoError(t, err)
	assert.Equal(t, "o1", holder)

	// closed → closed touches no lock.
	_, err = s.UpdateOnboarding(ctx, "o2", setStatus(domain.OnboardingCancelled))
	require.NoError(t, err)
	holder, _, err = s.FindOpenOnboarding(ctx, "s1", "gpu01")
	require.NoError(t, err)
	assert.Equal(t, "o1", holder)

	_, err = s.UpdateOnboarding(ctx, "nope", setStatus(domain.OnboardingRunning))
	require.ErrorAs(t, err, new(*ItemNotFoundError))
}

func TestConcurrentCreateOnboardingOneWins(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newTestStore(t)
	const n = 20
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = s.CreateOnboarding(ctx, onboarding(fmt.Sprintf("o%02d", i), "s1", "gpu01")) })
	}
	wg.Wait()

	winner := -1
	for i, err := range errs {
		if err == nil {
			require.Equal(t, -1, winner, "two creates succeeded")
			winner = i
		}
	}
	require.NotEqual(t, -1, winner, "no create succeeded")
	for i, err := range errs {
		if i == winner {
			continue
		}
		var oe *OpenOnboardingExistsError
		require.ErrorAs(t, err, &oe)
		assert.Equal(t, fmt.Sprintf("o%02d", winner), oe.OnboardingID)
	}
	page, err := s.ListOnboardings(ctx, OnboardingFilter{Hostname: "gpu01"})
	require.NoError(t, err)
	assert.Len(t, page.Items, 1)
}

func TestConcurrentUpdatesLoseNothing(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newTestStore(t)
	require.NoError(t, s.CreateOnboarding(ctx, onboarding("o1", "s1", "gpu01")))
	const n = 20
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, errs[i] = s.UpdateOnboarding(ctx, "o1", func(o *domain.Onboarding) error { o.DeployAttempts++; return nil })
		})
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		if err == nil {
			ok++
			continue
		}
		require.ErrorAs(t, err, new(*ItemConflictError))
	}
	got, err := s.GetOnboarding(ctx, "o1")
	require.NoError(t, err)
	assert.Equal(t, ok, got.DeployAttempts, "every successful update counted once")
	assert.Equal(t, int64(ok+1), got.Version)
	assert.Positive(t, ok)
}

func TestUpdateRetriesOnVersionConflict(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name      string
		interfere int // how many mutator calls race another writer
		wantCalls int
		wantErr   bool
	}{
		{name: "one lost race, then success", interfere: 1, wantCalls: 2},
		{name: "always losing ends in ItemConflictError", interfere: 1000, wantCalls: updateAttempts, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, _, _ := newTestStore(t)
			require.NoError(t, s.CreateSKU(ctx, domain.SKU{ID: "k"}))
			calls := 0
			got, err := s.UpdateSKU(ctx, "k", func(x *domain.SKU) error {
				calls++
				if calls <= tc.interfere {
					_, err := s.UpdateSKU(ctx, "k", func(y *domain.SKU) error { y.Description += "other;"; return nil })
					require.NoError(t, err)
				}
				x.GPUModel = "H200"
				return nil
			})
			assert.Equal(t, tc.wantCalls, calls)
			if tc.wantErr {
				var ce *ItemConflictError
				require.ErrorAs(t, err, &ce)
				assert.Equal(t, "sku", ce.Kind)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, "H200", got.GPUModel)
			assert.Equal(t, "other;", got.Description, "the mutator ran on the fresh copy")
		})
	}
}

// seedOnboardings creates n onboardings one second apart over two sites,
// three statuses and seven hosts, and returns them newest first.
func seedOnboardings(t *testing.T, s *Store, n int) []domain.Onboarding {
	t.Helper()
	ctx := context.Background()
	statuses := []domain.OnboardingStatus{domain.OnboardingCompleted, domain.OnboardingFailed, domain.OnboardingCancelled}
	var all []domain.Onboarding
	for i := range n {
		o := onboarding(fmt.Sprintf("o%03d", i), fmt.Sprintf("s%d", i%2), fmt.Sprintf("gpu%02d", i%7))
		o.Status = statuses[i%3]
		o.CreatedAt = t0.Add(time.Duration(i) * time.Second)
		require.NoError(t, s.CreateOnboarding(ctx, o))
		all = append(all, o)
	}
	slices.Reverse(all)
	return all
}

func TestListOnboardingsPaginates(t *testing.T) {
	eachBackend(t, func(t *testing.T, mk func(testing.TB) (*Store, *clockwork.FakeClock)) {
		t.Helper()
		ctx := context.Background()
		s, _ := mk(t)
		all := seedOnboardings(t, s, 47)

		tests := []struct {
			name  string
			f     OnboardingFilter
			limit int
		}{
			{name: "everything", limit: 10},
			{name: "by status", f: OnboardingFilter{Status: domain.OnboardingFailed}, limit: 4},
			{name: "by site", f: OnboardingFilter{SiteID: "s1"}, limit: 5},
			{name: "by hostname", f: OnboardingFilter{Hostname: "GPU03"}, limit: 2},
			{name: "site and status", f: OnboardingFilter{SiteID: "s0", Status: domain.OnboardingCompleted}, limit: 3},
			{name: "hostname and site", f: OnboardingFilter{Hostname: "gpu03", SiteID: "s1"}, limit: 1},
			{name: "all three", f: OnboardingFilter{Hostname: "gpu01", SiteID: "s1", Status: domain.OnboardingCompleted}, limit: 1},
			{name: "nothing matches", f: OnboardingFilter{Status: domain.OnboardingRunning}, limit: 5},
			{name: "one big page", f: OnboardingFilter{SiteID: "s0"}, limit: 200},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				var want []string
				for _, o := range all {
					if tc.f.matches(o) {
						want = append(want, o.ID)
					}
				}
				var got []string
				f := tc.f
				f.Limit = tc.limit
				for pages := 0; ; pages++ {
					require.Less(t, pages, 100, "pagination does not end")
					page, err := s.ListOnboardings(ctx, f)
					require.NoError(t, err)
					assert.LessOrEqual(t, len(page.Items), tc.limit)
					for _, o := range page.Items {
						got = append(got, o.ID)
					}
					if page.NextCursor == "" {
						break
					}
					f.Cursor = page.NextCursor
				}
				assert.Equal(t, want, got, "every match once, newest first")
			})
		}
	})
}

func TestListOnboardingsLimitsAndCursors(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newTestStore(t)
	seedOnboardings(t, s, 60)

	page, err := s.ListOnboardings(ctx, OnboardingFilter{})
	require.NoError(t, err)
	assert.Len(t, page.Items, DefaultPageSize)
	assert.NotEmpty(t, page.NextCursor)

	exact, err := s.ListOnboardings(ctx, OnboardingFilter{Limit: 60})
	require.NoError(t, err)
	assert.Len(t, exact.Items, 60)
	assert.Empty(t, exact.NextCursor, "no cursor when nothing follows")

	bySite, err := s.ListOnboardings(ctx, OnboardingFilter{SiteID: "s0", Limit: 2})
	require.NoError(t, err)
	require.NotEmpty(t, bySite.NextCursor)

	tests := []struct {
		name   string
		f      OnboardingFilter
		reason string
	}{
		{"garbage", OnboardingFilter{Cursor: "!!!"}, "base64"},
		{"not json", OnboardingFilter{Cursor: "bm90IGpzb24"}, "malformed"},
		{"other index", OnboardingFilter{Status: domain.OnboardingFailed, Cursor: bySite.NextCursor}, "another filter"},
		{"other partition", OnboardingFilter{SiteID: "s1", Cursor: bySite.NextCursor}, "another filter"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.ListOnboardings(ctx, tc.f)
			var ce *InvalidCursorError
			require.ErrorAs(t, err, &ce)
			assert.Contains(t, ce.Reason, tc.reason)
		})
	}

	// The status index follows a status change.
	_, err = s.UpdateOnboarding(ctx, "o000", func(o *domain.Onboarding) error { o.Status = domain.OnboardingRunning; return nil })
	require.NoError(t, err)
	running, err := s.ListOnboardings(ctx, OnboardingFilter{Status: domain.OnboardingRunning})
	require.NoError(t, err)
	require.Len(t, running.Items, 1)
	assert.Equal(t, "o000", running.Items[0].ID)
	completed, err := s.ListOnboardings(ctx, OnboardingFilter{Status: domain.OnboardingCompleted, Limit: 200})
	require.NoError(t, err)
	assert.Len(t, completed.Items, 19, "o000 left the completed partition")
}

func TestListOnboardingsShortPageWhenFiltersDiscardMuch(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newTestStore(t)
	// The site index holds 200 rows; the status filter keeps only the
	// oldest, beyond what one call reads (listRounds Queries of 8 rows).
	for i := range 200 {
		o := onboarding(fmt.Sprintf("o%03d", i), "busy", fmt.Sprintf("h%03d", i))
		o.Status = domain.OnboardingCompleted
		if i == 0 {
			o.Status = domain.OnboardingFailed
		}
		o.CreatedAt = t0.Add(time.Duration(i) * time.Second)
		require.NoError(t, s.CreateOnboarding(ctx, o))
	}
	f := OnboardingFilter{SiteID: "busy", Status: domain.OnboardingFailed, Limit: 1}
	first, err := s.ListOnboardings(ctx, f)
	require.NoError(t, err)
	assert.Empty(t, first.Items, "a short page rather than an unbounded read")
	require.NotEmpty(t, first.NextCursor)

	var got []string
	for pages := 0; ; pages++ {
		require.Less(t, pages, 10)
		page, err := s.ListOnboardings(ctx, f)
		require.NoError(t, err)
		for _, o := range page.Items {
			got = append(got, o.ID)
		}
		if page.NextCursor == "" {
			break
		}
		f.Cursor = page.NextCursor
	}
	assert.Equal(t, []string{"o000"}, got)
}

func TestOnboardingErrorsAreTyped(t *testing.T) {
	// The API maps these by type; their text names the record.
	tests := []struct {
		err  error
		want string
	}{
		{&ItemNotFoundError{Kind: "site", ID: "s1"}, "site s1 not found"},
		{&ItemConflictError{Kind: "sku", ID: "k", Reason: "already exists"}, "sku k: conflict: already exists"},
		{&OpenOnboardingExistsError{SiteID: "s", Hostname: "h", OnboardingID: "o"}, "host h on site s already has open onboarding o"},
		{&TokenRejectedError{Reason: TokenExpired}, "enrollment token rejected: expired"},
		{&InvalidRecordError{Kind: "node", Field: "hostname", Reason: "is required"}, "invalid node: hostname is required"},
		{&InvalidCursorError{Reason: "malformed"}, "invalid cursor: malformed"},
	}
	for _, tc := range tests {
		require.EqualError(t, tc.err, tc.want)
		require.NotErrorIs(t, tc.err, errVersionConflict)
	}
}

func TestReachingATerminalStatusOwesAnEvent(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newTestStore(t)
	require.NoError(t, s.CreateOnboarding(ctx, onboarding("o1", "s1", "gpu01")))
	set := func(status domain.OnboardingStatus) {
		t.Helper()
		_, err := s.UpdateOnboarding(ctx, "o1", func(o *domain.Onboarding) error { o.Status = status; return nil })
		require.NoError(t, err)
	}
	set(domain.OnboardingRunning)
	owed, err := s.ListOutbox(ctx, 10)
	require.NoError(t, err)
	assert.Empty(t, owed, "running owes nothing")

	set(domain.OnboardingManualIntervention) // keeps the host lock: a plain put before
	set(domain.OnboardingFailed)             // releases it
	set(domain.OnboardingFailed)             // no change, no second entry
	owed, err = s.ListOutbox(ctx, 10)
	require.NoError(t, err)
	require.Len(t, owed, 2)
	assert.ElementsMatch(t, []domain.OnboardingStatus{domain.OnboardingManualIntervention, domain.OnboardingFailed}, []domain.OnboardingStatus{owed[0].Status, owed[1].Status})
	assert.Equal(t, "o1", owed[1].OnboardingID)

	require.NoError(t, s.DeleteOutbox(ctx, owed[0]))
	owed, err = s.ListOutbox(ctx, 10)
	require.NoError(t, err)
	assert.Len(t, owed, 1)
	_, found, err := s.FindOpenOnboarding(ctx, "s1", "gpu01")
	require.NoError(t, err)
	assert.False(t, found, "the host lock went with the close")
}
