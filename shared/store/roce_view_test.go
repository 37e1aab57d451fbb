package store

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/design"
	"github.com/maasflow/maasflow/shared/domain"
)

// railsDesign names each host of rails (hostname → "alias=cidr" rails; a
// host with none is designed without rails).
func railsDesign(rails map[string][]design.RoCERail) design.Design {
	d := design.Design{HostProfiles: []design.HostProfile{{Name: "gpu"}}}
	i := 0
	for host, rs := range rails {
		i++
		d.Nodes = append(d.Nodes, design.NodeAssignment{Hostname: host, BMCAddress: fmt.Sprintf("10.0.0.%d", i), HostProfile: "gpu", RoCERails: rs})
	}
	return d
}

type rowView struct{ ID, CIDR, Source string }

func viewOf(t *testing.T, s *Store, host string) []rowView {
	t.Helper()
	rows, err := s.ListRoCEAssignments(context.Background(), "s1", host)
	require.NoError(t, err)
	out := []rowView{}
	for _, r := range rows {
		assert.Equal(t, "s1", r.SiteID)
		out = append(out, rowView{r.ID, r.IPv4CIDR, r.Source})
	}
	return out
}

func putRails(t *testing.T, s *Store, d design.Design, prev int64) SiteDesign {
	t.Helper()
	put, err := s.PutSiteDesign(context.Background(), SiteDesign{SiteID: "s1", Hash: design.Hash(d), Design: d}, prev)
	require.NoError(t, err)
	return put
}

// The rows of a host the site's design names are its node's roce_rails,
// read from the design; the design's apply supersedes the host's direct
// rows, a change of rails changes the rows, and a host or its rails that
// leave the design take its rows along (the direct rows from before do not
// come back).
func TestRoCERowsOfDesignedHostsAreTheDesignsRails(t *testing.T) {
	eachBackend(t, func(t *testing.T, mk func(testing.TB) (*Store, *clockwork.FakeClock)) {
		t.Helper()
		ctx := context.Background()
		s, clk := mk(t)
		mustSite(t, s, "s1", "Paris")
		_, err := s.UpsertRoCEAssignments(ctx, "s1", []domain.RoCEAssignment{
			roce("gpu-01", "ens1f0", "10.1.0.1/31"), roce("gpu-01", "ens1f1", "10.1.0.3/31"), roce("gpu-02", "ens1f0", "10.1.1.1/31"),
		})
		require.NoError(t, err)
		assert.Equal(t, []rowView{{"gpu-01:ens1f0", "10.1.0.1/31", "direct"}, {"gpu-01:ens1f1", "10.1.0.3/31", "direct"},
			{"gpu-02:ens1f0", "10.1.1.1/31", "direct"}}, viewOf(t, s, ""))

		clk.Advance(time.Minute)
		v1 := putRails(t, s, railsDesign(map[string][]design.RoCERail{"gpu-01": {{Interface: "rail0", IPv4CIDR: "10.20.1.0/31"}}}), 0)
		assert.Equal(t, []rowView{{"gpu-01:rail0", "10.20.1.0/31", "design"}, {"gpu-02:ens1f0", "10.1.1.1/31", "direct"}}, viewOf(t, s, ""))
		assert.Equal(t, []rowView{{"gpu-01:rail0", "10.20.1.0/31", "design"}}, viewOf(t, s, "GPU-01"))
		rows, err := s.ListRoCEAssignments(ctx, "s1", "gpu-01")
		require.NoError(t, err)
		assert.Equal(t, v1.UpdatedAt, rows[0].UpdatedAt, "a design row is as new as the design")
		assert.Equal(t, RoCEAssignmentID("gpu-01", "rail0"), rows[0].ID, "the store's id")
		stored, err := s.listDirectRoCE(ctx, "s1", "gpu-01")
		require.NoError(t, err)
		assert.Empty(t, stored, "the superseded rows are removed")

		t.Run("a designed host's rows are refused", func(t *testing.T) {
			_, err := s.UpsertRoCEAssignments(ctx, "s1", []domain.RoCEAssignment{roce("gpu-03", "ens1f0", "10.1.3.1/31"), roce("GPU-01", "rail0", "10.9.9.1/31")})
			var owned *RoCEOwnedByDesignError
			require.ErrorAs(t, err, &owned)
			assert.Equal(t, "items[1].hostname", owned.Field)
			assert.Contains(t, err.Error(), "belong to site s1's design")
			assert.Empty(t, viewOf(t, s, "gpu-03"), "nothing written")
			err = s.DeleteRoCEAssignment(ctx, "s1", "gpu-01:rail0")
			require.ErrorAs(t, err, &owned)
			assert.Equal(t, "assignment_id", owned.Field)
			assert.Equal(t, []rowView{{"gpu-01:rail0", "10.20.1.0/31", "design"}}, viewOf(t, s, "gpu-01"))
		})

		// gpu-01's rail moves; gpu-02 joins the design without rails.
		v2 := putRails(t, s, railsDesign(map[string][]design.RoCERail{
			"gpu-01": {{Interface: "rail0", IPv4CIDR: "10.20.1.2/31"}}, "gpu-02": nil,
		}), v1.Version)
		assert.Equal(t, []rowView{{"gpu-01:rail0", "10.20.1.2/31", "design"}}, viewOf(t, s, ""))
		assert.Empty(t, viewOf(t, s, "gpu-02"))

		// gpu-01 loses its rails, then leaves the design.
		v3 := putRails(t, s, railsDesign(map[string][]design.RoCERail{"gpu-01": nil, "gpu-02": nil}), v2.Version)
		assert.Empty(t, viewOf(t, s, ""))
		putRails(t, s, railsDesign(map[string][]design.RoCERail{"gpu-02": nil}), v3.Version)
		assert.Empty(t, viewOf(t, s, "gpu-01"), "the rows from before the design do not come back")

		// No longer designed, gpu-01 takes direct rows again.
		_, err = s.UpsertRoCEAssignments(ctx, "s1", []domain.RoCEAssignment{roce("gpu-01", "ens1f0", "10.1.0.5/31")})
		require.NoError(t, err)
		assert.Equal(t, []rowView{{"gpu-01:ens1f0", "10.1.0.5/31", "direct"}}, viewOf(t, s, ""))
	})
}

// A design write that fails changes neither the design nor any row; one
// that lands but whose clean-up of the superseded rows fails (a crash
// between the two) still shows only the design's rows, and the next apply
// removes the leftovers before they could show again.
func TestRoCEDesignWriteIsAllOrNothing(t *testing.T) {
	ctx := context.Background()
	setup := func(t *testing.T) (*Store, SiteDesign) {
		t.Helper()
		s, _, _ := newTestStore(t)
		mustSite(t, s, "s1", "Paris")
		_, err := s.UpsertRoCEAssignments(ctx, "s1", []domain.RoCEAssignment{roce("gpu-01", "ens1f0", "10.1.0.1/31"), roce("gpu-02", "ens1f0", "10.1.1.1/31")})
		require.NoError(t, err)
		v1 := putRails(t, s, railsDesign(map[string][]design.RoCERail{"gpu-09": nil}), 0)
		return s, v1
	}
	next := railsDesign(map[string][]design.RoCERail{"gpu-09": nil, "gpu-01": {{Interface: "rail0", IPv4CIDR: "10.20.1.0/31"}}})

	t.Run("the design write fails", func(t *testing.T) {
		s, v1 := setup(t)
		before := viewOf(t, s, "")
		s.db = &failingDB{DynamoDB: s.db, failTx: 1} // the design's own write
		_, err := s.PutSiteDesign(ctx, SiteDesign{SiteID: "s1", Design: next}, v1.Version)
		require.ErrorIs(t, err, errInjected)
		assert.Equal(t, before, viewOf(t, s, ""), "rows as they were")
		got, err := s.GetSiteDesign(ctx, "s1")
		require.NoError(t, err)
		assert.Equal(t, v1.Version, got.Version, "design as it was")
	})

	t.Run("a crash after the design write", func(t *testing.T) {
		s, v1 := setup(t)
		s.db = &failingDB{DynamoDB: s.db, failTx: 2} // the clean-up after it
		v2, err := s.PutSiteDesign(ctx, SiteDesign{SiteID: "s1", Design: next}, v1.Version)
		require.NoError(t, err, "the design is stored; the clean-up is not the apply's")
		assert.Equal(t, []rowView{{"gpu-01:rail0", "10.20.1.0/31", "design"}, {"gpu-02:ens1f0", "10.1.1.1/31", "direct"}}, viewOf(t, s, ""))
		left, err := s.listDirectRoCE(ctx, "s1", "gpu-01")
		require.NoError(t, err)
		require.Len(t, left, 1, "the superseded row is left over, hidden")

		putRails(t, s, railsDesign(map[string][]design.RoCERail{"gpu-09": nil}), v2.Version)
		assert.Equal(t, []rowView{{"gpu-02:ens1f0", "10.1.1.1/31", "direct"}}, viewOf(t, s, ""),
			"gpu-01 left the design: its row from before the design does not come back")
	})
}

// designRacingDB applies a design just before the first transaction it
// sees, as another request would between a RoCE upsert's design read and
// its write.
type designRacingDB struct {
	DynamoDB
	fired  atomic.Bool
	before func()
}

func (d *designRacingDB) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	if d.fired.CompareAndSwap(false, true) {
		d.before()
	}
	return d.DynamoDB.TransactWriteItems(ctx, in, opts...)
}

// An upsert checked against the design before another request applied a
// design naming its host does not land: its transaction checks the
// design's version, and the upsert, read again, is refused.
func TestRoCEUpsertRacingADesignIsRefused(t *testing.T) {
	eachBackend(t, func(t *testing.T, mk func(testing.TB) (*Store, *clockwork.FakeClock)) {
		t.Helper()
		ctx := context.Background()
		s, _ := mk(t)
		mustSite(t, s, "s1", "Paris")
		s.db = &designRacingDB{DynamoDB: s.db, before: func() {
			putRails(t, s, railsDesign(map[string][]design.RoCERail{"gpu-05": {{Interface: "rail0", IPv4CIDR: "10.20.5.0/31"}}}), 0)
		}}
		_, err := s.UpsertRoCEAssignments(ctx, "s1", []domain.RoCEAssignment{roce("gpu-05", "ens1f0", "10.1.5.1/31"), roce("gpu-05", "ens1f1", "10.1.5.3/31")})
		var owned *RoCEOwnedByDesignError
		require.ErrorAs(t, err, &owned)
		assert.Equal(t, "items[0].hostname", owned.Field)
		assert.Equal(t, []rowView{{"gpu-05:rail0", "10.20.5.0/31", "design"}}, viewOf(t, s, ""))
		stored, err := s.listDirectRoCE(ctx, "s1", "")
		require.NoError(t, err)
		assert.Empty(t, stored)
	})
}

// queryRacingDB runs before ahead of the first Query it passes on.
type queryRacingDB struct {
	DynamoDB
	fired  atomic.Bool
	before func()
}

func (d *queryRacingDB) Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	if d.fired.CompareAndSwap(false, true) {
		d.before()
	}
	return d.DynamoDB.Query(ctx, in, opts...)
}

// A read racing the apply that first names a host (the design read before
// it, the direct rows after its clean-up) shows the host's rows of one
// side or the other, never none: the onboarding's RoCE step would fail on
// a host with no rows.
func TestRoCEReadRacingADesignSeesTheHostsRows(t *testing.T) {
	eachBackend(t, func(t *testing.T, mk func(testing.TB) (*Store, *clockwork.FakeClock)) {
		t.Helper()
		ctx := context.Background()
		for _, host := range []string{"gpu-05", ""} {
			s, _ := mk(t)
			mustSite(t, s, "s1", "Paris")
			_, err := s.UpsertRoCEAssignments(ctx, "s1", []domain.RoCEAssignment{roce("gpu-05", "ens1f0", "10.1.5.1/31")})
			require.NoError(t, err)
			s.db = &queryRacingDB{DynamoDB: s.db, before: func() {
				putRails(t, s, railsDesign(map[string][]design.RoCERail{"gpu-05": {{Interface: "rail0", IPv4CIDR: "10.20.5.0/31"}}}), 0)
			}}
			assert.Equal(t, []rowView{{"gpu-05:rail0", "10.20.5.0/31", "design"}}, viewOf(t, s, host), "host %q", host)
		}
	})
}
