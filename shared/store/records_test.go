package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
)

func roce(host, iface, cidr string) domain.RoCEAssignment {
	return domain.RoCEAssignment{Hostname: host, Interface: iface, IPv4CIDR: cidr}
}

func TestRoCEAssignments(t *testing.T) {
	eachBackend(t, func(t *testing.T, mk func(testing.TB) (*Store, *clockwork.FakeClock)) {
		t.Helper()
		ctx := context.Background()
		s, clk := mk(t)
		mustSite(t, s, "s1", "Paris")

		rows, err := s.UpsertRoCEAssignments(ctx, "s1", []domain.RoCEAssignment{
			roce("gpu01", "ens1f0", "10.1.0.1/31"),
			roce("gpu01", "ens1f1", "10.1.0.3/31"),
			roce("gpu010", "ens1f0", "10.1.1.1/31"),
		})
		require.NoError(t, err)
		require.Len(t, rows, 3)
		assert.Equal(t, "gpu01:ens1f0", rows[0].ID)
		assert.Equal(t, "s1", rows[0].SiteID)
		assert.Equal(t, t0, rows[0].UpdatedAt)

		t.Run("list by host does not match a longer hostname", func(t *testing.T) {
			got, err := s.ListRoCEAssignments(ctx, "s1", "GPU01")
			require.NoError(t, err)
			require.Len(t, got, 2)
			assert.Equal(t, []string{"gpu01:ens1f0", "gpu01:ens1f1"}, []string{got[0].ID, got[1].ID})
			all, err := s.ListRoCEAssignments(ctx, "s1", "")
			require.NoError(t, err)
			assert.Len(t, all, 3)
		})

		t.Run("a repeated upsert updates the row", func(t *testing.T) {
			clk.Advance(time.Minute)
			_, err := s.UpsertRoCEAssignments(ctx, "s1", []domain.RoCEAssignment{roce("GPU01", "ens1f0", "10.9.0.1/31")})
			require.NoError(t, err)
			got, err := s.ListRoCEAssignments(ctx, "s1", "gpu01")
			require.NoError(t, err)
			require.Len(t, got, 2)
			assert.Equal(t, "10.9.0.1/31", got[0].IPv4CIDR)
			assert.Equal(t, t0.Add(time.Minute), got[0].UpdatedAt)
		})

		t.Run("all or nothing", func(t *testing.T) {
			good := roce("gpu02", "ens1f0", "10.2.0.1/31")
			tests := []struct {
				name   string
				site   string
				items  []domain.RoCEAssignment
				target any
				field  string
			}{
				{"bad CIDR", "s1", []domain.RoCEAssignment{good, roce("gpu02", "ens1f1", "10.2.0.300/31")}, new(*InvalidRecordError), "items[1].ipv4_cidr"},
				{"IPv6", "s1", []domain.RoCEAssignment{good, roce("gpu02", "ens1f1", "fd00::1/64")}, new(*InvalidRecordError), "items[1].ipv4_cidr"},
				{"no interface", "s1", []domain.RoCEAssignment{good, roce("gpu02", "", "10.2.0.3/31")}, new(*InvalidRecordError), "items[1].interface"},
				{"colon in hostname", "s1", []domain.RoCEAssignment{roce("a:b", "x", "10.2.0.3/31"), good}, new(*InvalidRecordError), "items[0].hostname"},
				{"duplicate row", "s1", []domain.RoCEAssignment{good, roce("GPU02", "ens1f0", "10.2.0.5/31")}, new(*InvalidRecordError), "items[1]"},
				{"unknown site", "nope", []domain.RoCEAssignment{good}, new(*ItemNotFoundError), ""},
			}
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					_, err := s.UpsertRoCEAssignments(ctx, tc.site, tc.items)
					require.ErrorAs(t, err, tc.target)
					var ie *InvalidRecordError
					if errors.As(err, &ie) {
						assert.Equal(t, tc.field, ie.Field)
					}
					got, err := s.ListRoCEAssignments(ctx, tc.site, "gpu02")
					require.NoError(t, err)
					assert.Empty(t, got, "nothing written")
				})
			}
		})

		t.Run("delete", func(t *testing.T) {
			require.NoError(t, s.DeleteRoCEAssignment(ctx, "s1", "gpu010:ens1f0"))
			require.ErrorAs(t, s.DeleteRoCEAssignment(ctx, "s1", "gpu010:ens1f0"), new(*ItemNotFoundError))
			got, err := s.ListRoCEAssignments(ctx, "s1", "gpu010")
			require.NoError(t, err)
			assert.Empty(t, got)
		})

		t.Run("empty batch", func(t *testing.T) {
			got, err := s.UpsertRoCEAssignments(ctx, "s1", nil)
			require.NoError(t, err)
			assert.Empty(t, got)
		})
	})
}

func TestRoCEAssignmentsLargeBatch(t *testing.T) {
	ctx := context.Background()
	batch := func(cidrBase int) []domain.RoCEAssignment {
		var items []domain.RoCEAssignment
		for i := range 250 {
			items = append(items, roce(fmt.Sprintf("gpu%03d", i/8), fmt.Sprintf("ens%d", i%8), fmt.Sprintf("10.%d.%d.%d/31", cidrBase, i/100, 2*(i%100))))
		}
		return items
	}

	t.Run("all chunks written", func(t *testing.T) {
		s, _, _ := newTestStore(t)
		mustSite(t, s, "s1", "Paris")
		_, err := s.UpsertRoCEAssignments(ctx, "s1", batch(1))
		require.NoError(t, err)
		all, err := s.ListRoCEAssignments(ctx, "s1", "")
		require.NoError(t, err)
		assert.Len(t, all, 250)
	})

	t.Run("a failing chunk rolls the earlier ones back", func(t *testing.T) {
		s, _, _ := newTestStore(t)
		mustSite(t, s, "s1", "Paris")
		// The first 10 rows exist beforehand with other addresses.
		_, err := s.UpsertRoCEAssignments(ctx, "s1", batch(7)[:10])
		require.NoError(t, err)
		before, err := s.ListRoCEAssignments(ctx, "s1", "")
		require.NoError(t, err)

		// Transactions from here: #1 and #2 are chunks, #3 fails.
		s.db = &failingDB{DynamoDB: s.db, failTx: 3}
		_, err = s.UpsertRoCEAssignments(ctx, "s1", batch(1))
		require.ErrorIs(t, err, errInjected)

		after, err := s.ListRoCEAssignments(ctx, "s1", "")
		require.NoError(t, err)
		assert.Equal(t, before, after, "the site's rows are as they were")
	})

	t.Run("a rolled-back batch leaves no audit entry of success", func(t *testing.T) {
		s, _, _ := newTestStore(t)
		mustSite(t, s, "s1", "Paris")
		// #1 and #2 are chunks, #3 (the last) fails: the batch is rolled
		// back, so its entry must not say it was written.
		s.db = &failingDB{DynamoDB: s.db, failTx: 3}
		p := pendingEntry("roce.upsert", "site:s1")
		_, err := s.UpsertRoCEAssignments(WithPendingAudit(ctx, p), "s1", batch(1))
		require.ErrorIs(t, err, errInjected)
		assert.False(t, p.Written(), "the entry rides only a batch that is written whole")
		assert.Empty(t, auditOf(t, s, "roce.upsert"))
		all, err := s.ListRoCEAssignments(ctx, "s1", "")
		require.NoError(t, err)
		assert.Empty(t, all)

		// Written whole, the batch carries its entry once.
		s.db = s.db.(*failingDB).DynamoDB
		p = pendingEntry("roce.upsert", "site:s1")
		_, err = s.UpsertRoCEAssignments(WithPendingAudit(ctx, p), "s1", batch(1))
		require.NoError(t, err)
		assert.True(t, p.Written())
		assert.Len(t, auditOf(t, s, "roce.upsert"), 1)
	})
}

func TestTimeline(t *testing.T) {
	eachBackend(t, func(t *testing.T, mk func(testing.TB) (*Store, *clockwork.FakeClock)) {
		t.Helper()
		ctx := context.Background()
		s, clk := mk(t)

		stage := func(kind domain.TimelineKind, st domain.Stage, outcome string) domain.TimelineEntry {
			return domain.TimelineEntry{OnboardingID: "o1", Attempt: 1, Kind: kind, Stage: st, Outcome: outcome}
		}
		// Same instant (fake clock): write order is kept.
		require.NoError(t, s.AppendOnboardingEvents(ctx,
			stage(domain.TimelineStageEntered, domain.StageDiscover, ""),
			stage(domain.TimelineStageExited, domain.StageDiscover, "ok"),
			stage(domain.TimelineStageEntered, domain.StageCommission, "")))

		maasEvents := []domain.TimelineEntry{
			{OnboardingID: "o1", Kind: domain.TimelineMAASEvent, MAASEventID: 101, Time: t0.Add(30 * time.Second), Detail: "Commissioning"},
			{OnboardingID: "o1", Kind: domain.TimelineMAASEvent, MAASEventID: 100, Time: t0.Add(10 * time.Second), Detail: "Powering on"},
			{OnboardingID: "o1", Kind: domain.TimelineMAASEvent, MAASEventID: 102, Time: t0.Add(30 * time.Second), Detail: "Ready"},
		}
		require.NoError(t, s.AppendOnboardingEvents(ctx, maasEvents...))
		clk.Advance(time.Minute)
		require.NoError(t, s.AppendOnboardingEvents(ctx, stage(domain.TimelineStageExited, domain.StageCommission, "ok")))
		// Copying MAAS events again (another poll) adds nothing, also when
		// the same write records a workflow row.
		require.NoError(t, s.AppendOnboardingEvents(ctx, maasEvents...))
		require.NoError(t, s.AppendOnboardingEvents(ctx, maasEvents[2]))
		clk.Advance(time.Minute)
		require.NoError(t, s.AppendOnboardingEvents(ctx, maasEvents[1], stage(domain.TimelineNote, domain.StageCommission, "")))

		got, err := s.ListOnboardingEvents(ctx, "o1")
		require.NoError(t, err)
		var line []string
		for _, ev := range got {
			line = append(line, fmt.Sprintf("%s %s %s %s%d", ev.Time.Sub(t0), ev.Kind, ev.Stage, ev.Detail, ev.MAASEventID))
			assert.NotEmpty(t, ev.Seq)
		}
		assert.Equal(t, []string{
			"0s stage_entered discover 0",
			"0s stage_exited discover 0",
			"0s stage_entered commission 0",
			"10s maas_event  Powering on100",
			"30s maas_event  Commissioning101",
			"30s maas_event  Ready102",
			"1m0s stage_exited commission 0",
			"2m0s note commission 0",
		}, line)

		other, err := s.ListOnboardingEvents(ctx, "o2")
		require.NoError(t, err)
		assert.Empty(t, other)

		require.ErrorAs(t, s.AppendOnboardingEvents(ctx, domain.TimelineEntry{Kind: "note"}), new(*InvalidRecordError))
	})
}

func TestTimelineConcurrentWriters(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newTestStore(t)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			assert.NoError(t, s.AppendOnboardingEvents(ctx,
				domain.TimelineEntry{OnboardingID: "o1", Kind: domain.TimelineNote, Detail: fmt.Sprint(i)},
				domain.TimelineEntry{OnboardingID: "o1", Kind: domain.TimelineMAASEvent, MAASEventID: int64(1 + i%5), Time: t0}))
		})
	}
	wg.Wait()
	got, err := s.ListOnboardingEvents(ctx, "o1")
	require.NoError(t, err)
	assert.Len(t, got, 20+5, "every note once, each MAAS event once")
}

func TestEnrollmentTokens(t *testing.T) {
	ctx := context.Background()
	expires := t0.Add(time.Hour)
	put := func(t *testing.T, s *Store, hash, node string) {
		t.Helper()
		require.NoError(t, s.PutEnrollmentToken(ctx, domain.EnrollmentToken{Hash: hash, NodeID: node, OnboardingID: "o1", Attempt: 1, ExpiresAt: expires}))
	}

	tests := []struct {
		name   string
		hash   string
		node   string
		at     time.Time
		before func(t *testing.T, s *Store)
		reason string
	}{
		{name: "accepted", hash: "h1", node: "n1", at: t0},
		{name: "accepted just before expiry", hash: "h1", node: "n1", at: expires.Add(-time.Millisecond)},
		{name: "unknown", hash: "nope", node: "n1", at: t0, reason: TokenUnknown},
		{name: "empty", hash: "", node: "n1", at: t0, reason: TokenUnknown},
		{name: "expired at expiry", hash: "h1", node: "n1", at: expires, reason: TokenExpired},
		{name: "expired later", hash: "h1", node: "n1", at: expires.Add(time.Hour), reason: TokenExpired},
		{name: "wrong node", hash: "h1", node: "n2", at: t0, reason: TokenWrongNode},
		{name: "wrong node wins over expired", hash: "h1", node: "n2", at: expires.Add(time.Hour), reason: TokenWrongNode},
		{
			name: "replayed", hash: "h1", node: "n1", at: t0, reason: TokenConsumed,
			before: func(t *testing.T, s *Store) {
				t.Helper()
				_, err := s.ConsumeEnrollmentToken(ctx, "h1", "n1", t0)
				require.NoError(t, err)
			},
		},
		{
			name: "replayed after expiry is still consumed", hash: "h1", node: "n1", at: expires.Add(time.Hour), reason: TokenConsumed,
			before: func(t *testing.T, s *Store) {
				t.Helper()
				_, err := s.ConsumeEnrollmentToken(ctx, "h1", "n1", t0)
				require.NoError(t, err)
			},
		},
		{
			name: "revoked", hash: "h1", node: "n1", at: t0.Add(time.Minute), reason: TokenRevoked,
			before: func(t *testing.T, s *Store) {
				t.Helper()
				require.NoError(t, s.RevokeEnrollmentToken(ctx, "h1", t0))
			},
		},
		{
			name: "revoked wins over wrong node and expired", hash: "h1", node: "n2", at: expires.Add(time.Hour), reason: TokenRevoked,
			before: func(t *testing.T, s *Store) {
				t.Helper()
				require.NoError(t, s.RevokeEnrollmentToken(ctx, "h1", t0))
			},
		},
		{
			name: "a consumed token stays consumed when revoked", hash: "h1", node: "n1", at: t0.Add(time.Minute), reason: TokenConsumed,
			before: func(t *testing.T, s *Store) {
				t.Helper()
				_, err := s.ConsumeEnrollmentToken(ctx, "h1", "n1", t0)
				require.NoError(t, err)
				require.NoError(t, s.RevokeEnrollmentToken(ctx, "h1", t0), "revoking a consumed token is a no-op")
			},
		},
	}
	for _, tc := range tests {
		eachBackend(t, func(t *testing.T, mk func(testing.TB) (*Store, *clockwork.FakeClock)) {
			t.Helper()
			t.Run(tc.name, func(t *testing.T) {
				s, _ := mk(t)
				put(t, s, "h1", "n1")
				if tc.before != nil {
					tc.before(t, s)
				}
				tok, err := s.ConsumeEnrollmentToken(ctx, tc.hash, tc.node, tc.at)
				if tc.reason == "" {
					require.NoError(t, err)
					require.NotNil(t, tok.ConsumedAt)
					assert.True(t, tc.at.Equal(*tok.ConsumedAt))
					assert.Equal(t, "o1", tok.OnboardingID)
					assert.Equal(t, 1, tok.Attempt)
					return
				}
				var re *TokenRejectedError
				require.ErrorAs(t, err, &re)
				assert.Equal(t, tc.reason, re.Reason)
				assert.NotContains(t, err.Error(), "h1", "the token never shows")
			})
		})
	}

	t.Run("get", func(t *testing.T) {
		s, _, _ := newTestStore(t)
		put(t, s, "h1", "n1")
		tok, err := s.GetEnrollmentToken(ctx, "h1")
		require.NoError(t, err)
		assert.Equal(t, "n1", tok.NodeID)
		assert.True(t, expires.Equal(tok.ExpiresAt))
		assert.Nil(t, tok.ConsumedAt)
		_, err = s.GetEnrollmentToken(ctx, "nope")
		require.ErrorAs(t, err, new(*ItemNotFoundError))
	})

	t.Run("put twice", func(t *testing.T) {
		s, _, _ := newTestStore(t)
		put(t, s, "h1", "n1")
		err := s.PutEnrollmentToken(ctx, domain.EnrollmentToken{Hash: "h1", NodeID: "n1", ExpiresAt: expires})
		require.ErrorAs(t, err, new(*ItemConflictError))
		require.ErrorAs(t, s.PutEnrollmentToken(ctx, domain.EnrollmentToken{Hash: "h2", NodeID: "n1"}), new(*InvalidRecordError))
	})

	eachBackend(t, func(t *testing.T, mk func(testing.TB) (*Store, *clockwork.FakeClock)) {
		t.Helper()
		t.Run("revoke", func(t *testing.T) {
			s, _ := mk(t)
			put(t, s, "h1", "n1")
			put(t, s, "h2", "n1")
			_, err := s.ConsumeEnrollmentToken(ctx, "h2", "n1", t0)
			require.NoError(t, err)

			require.NoError(t, s.RevokeEnrollmentToken(ctx, "h1", t0))
			require.NoError(t, s.RevokeEnrollmentToken(ctx, "h1", t0.Add(time.Minute)), "a repeat is a no-op")
			tok, err := s.GetEnrollmentToken(ctx, "h1")
			require.NoError(t, err)
			require.NotNil(t, tok.RevokedAt)
			assert.True(t, t0.Equal(*tok.RevokedAt), "the first revocation's time is kept")
			assert.Nil(t, tok.ConsumedAt)

			require.NoError(t, s.RevokeEnrollmentToken(ctx, "h2", t0.Add(time.Minute)))
			consumed, err := s.GetEnrollmentToken(ctx, "h2")
			require.NoError(t, err)
			assert.Nil(t, consumed.RevokedAt, "a consumed token is left as it is")
			assert.NotNil(t, consumed.ConsumedAt)

			require.NoError(t, s.RevokeEnrollmentToken(ctx, "nope", t0), "unknown: nothing to revoke")
			require.NoError(t, s.RevokeEnrollmentToken(ctx, "", t0))
			_, err = s.GetEnrollmentToken(ctx, "nope")
			require.ErrorAs(t, err, new(*ItemNotFoundError), "a revoke never creates a token")
		})
	})

	t.Run("revoke races consume: exactly one wins", func(t *testing.T) {
		s, _, _ := newTestStore(t)
		const rounds = 20
		wins := map[string]int{}
		for i := range rounds {
			hash := fmt.Sprintf("race-%d", i)
			put(t, s, hash, "n1")
			var (
				consumeErr, revokeErr error
				wg                    sync.WaitGroup
			)
			wg.Go(func() { _, consumeErr = s.ConsumeEnrollmentToken(ctx, hash, "n1", t0) })
			wg.Go(func() { revokeErr = s.RevokeEnrollmentToken(ctx, hash, t0) })
			wg.Wait()
			require.NoError(t, revokeErr, "a revoke that loses is a no-op")
			tok, err := s.GetEnrollmentToken(ctx, hash)
			require.NoError(t, err)
			if consumeErr == nil {
				wins["consumed"]++
				assert.NotNil(t, tok.ConsumedAt)
				assert.Nil(t, tok.RevokedAt, "the revoke after the consume changed nothing")
				continue
			}
			wins["revoked"]++
			var re *TokenRejectedError
			require.ErrorAs(t, consumeErr, &re)
			assert.Equal(t, TokenRevoked, re.Reason)
			assert.NotNil(t, tok.RevokedAt)
			assert.Nil(t, tok.ConsumedAt, "the consume after the revoke changed nothing")
		}
		assert.Equal(t, rounds, wins["consumed"]+wins["revoked"])
		t.Logf("outcomes: %v", wins)
	})

	t.Run("twenty consumers, one winner", func(t *testing.T) {
		s, _, _ := newTestStore(t)
		put(t, s, "h1", "n1")
		const n = 20
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { _, errs[i] = s.ConsumeEnrollmentToken(ctx, "h1", "n1", t0) })
		}
		wg.Wait()
		wins := 0
		for _, err := range errs {
			if err == nil {
				wins++
				continue
			}
			var re *TokenRejectedError
			require.ErrorAs(t, err, &re)
			assert.Equal(t, TokenConsumed, re.Reason)
		}
		assert.Equal(t, 1, wins)
	})
}

// TestUpdateOnboardingWithTimeline: the change and the rows it records are
// one write; a change that fails writes no row, a failed write changes
// nothing, and too many rows for one transaction are refused.
func TestUpdateOnboardingWithTimeline(t *testing.T) {
	ctx := context.Background()
	s, _, db := newTestStore(t)
	require.NoError(t, s.CreateOnboarding(ctx, onboarding("o1", "s1", "gpu01")))

	entered := func(prev, next domain.Onboarding) []domain.TimelineEntry {
		return []domain.TimelineEntry{{Kind: domain.TimelineStageEntered, Stage: next.Stage, Attempt: 1, Detail: "from " + string(prev.Stage)}}
	}
	got, err := s.UpdateOnboardingWithTimeline(ctx, "o1", func(o *domain.Onboarding) error {
		o.Stage = domain.StageDiscover
		return nil
	}, entered)
	require.NoError(t, err)
	assert.Equal(t, domain.StageDiscover, got.Stage)
	rows, err := s.ListOnboardingEvents(ctx, "o1")
	require.NoError(t, err)
	require.Len(t, rows, 1)
	assert.Equal(t, "o1", rows[0].OnboardingID, "the store stamps the onboarding")
	assert.Equal(t, domain.StageDiscover, rows[0].Stage)

	_, err = s.UpdateOnboardingWithTimeline(ctx, "o1", func(*domain.Onboarding) error { return errInjected }, entered)
	require.ErrorIs(t, err, errInjected)

	// A transaction the database refuses leaves record and timeline as they were.
	failing := &failingDB{DynamoDB: db, failTx: 1}
	fs := New(failing, "", s.now)
	_, err = fs.UpdateOnboardingWithTimeline(ctx, "o1", func(o *domain.Onboarding) error {
		o.Stage = domain.StageCommission
		return nil
	}, entered)
	require.ErrorIs(t, err, errInjected)
	after, err := s.GetOnboarding(ctx, "o1")
	require.NoError(t, err)
	assert.Equal(t, domain.StageDiscover, after.Stage)
	rows, err = s.ListOnboardingEvents(ctx, "o1")
	require.NoError(t, err)
	assert.Len(t, rows, 1, "no row without its change")

	many := func(_, _ domain.Onboarding) []domain.TimelineEntry {
		return make([]domain.TimelineEntry, maxRowsWithRecord+1)
	}
	_, err = s.UpdateOnboardingWithTimeline(ctx, "o1", func(*domain.Onboarding) error { return nil }, many)
	require.ErrorAs(t, err, new(*InvalidRecordError))
}
