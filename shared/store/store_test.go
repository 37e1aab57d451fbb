package store

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/truora/minidyn/aws-v2/client"

	"github.com/maasflow/maasflow/shared/clock"
	"github.com/maasflow/maasflow/shared/domain"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// engine names the database the package's tests run on; TestMain runs
// them all once per engine.
var engine = "minidyn"

// TestMain runs every test of the package twice: on minidyn, an
// independent implementation of DynamoDB's API (so the store's conditional
// writes are held to DynamoDB's semantics), and on memdb, the engine local
// mode runs on (so it behaves as minidyn does wherever the store looks).
func TestMain(m *testing.M) {
	if code := m.Run(); code != 0 || benchmarking() {
		os.Exit(code) // benchmarks pick their engine themselves
	}
	engine = "memdb"
	fmt.Fprintln(os.Stderr, "store: the same tests on memdb")
	os.Exit(m.Run())
}

func benchmarking() bool {
	f := flag.Lookup("test.bench")
	return f != nil && f.Value.String() != ""
}

// newTestStore returns a Store over a fresh table of the engine under test
// and the fake clock it reads.
func newTestStore(t testing.TB) (*Store, *clockwork.FakeClock, DynamoDB) {
	t.Helper()
	var db DynamoDB
	var err error
	if engine == "memdb" {
		db, err = NewLocalDB(context.Background(), "")
	} else {
		db, err = NewMinidyn(context.Background(), "")
	}
	require.NoError(t, err)
	clk := clock.NewFake(t0)
	return New(db, "", clk.Now), clk, db
}

// newPlainStore runs the store on minidyn without the native matchers, to
// check that they answer as minidyn's own evaluator does.
func newPlainStore(t testing.TB) (*Store, *clockwork.FakeClock) {
	t.Helper()
	db := client.NewClient()
	require.NoError(t, CreateTable(context.Background(), db, ""))
	clk := clock.NewFake(t0)
	return New(db, "", clk.Now), clk
}

func mustSite(t *testing.T, s *Store, id, name string) domain.Site {
	t.Helper()
	site := domain.Site{ID: id, Name: name, MAASURL: "http://maas.example/MAAS"}
	require.NoError(t, s.CreateSite(context.Background(), site))
	got, err := s.GetSite(context.Background(), id)
	require.NoError(t, err)
	return got
}

// eachBackend runs body against the store over the native matchers and
// over minidyn's own expression evaluator.
func eachBackend(t *testing.T, body func(t *testing.T, mk func(testing.TB) (*Store, *clockwork.FakeClock))) {
	t.Helper()
	t.Run("native", func(t *testing.T) {
		body(t, func(tb testing.TB) (*Store, *clockwork.FakeClock) {
			tb.Helper()
			s, c, _ := newTestStore(tb)
			return s, c
		})
	})
	t.Run("evaluator", func(t *testing.T) { body(t, newPlainStore) })
}

// failingDB fails the n-th TransactWriteItems call (1-based).
type failingDB struct {
	DynamoDB
	failTx int32
	calls  atomic.Int32
}

var errInjected = errors.New("injected failure")

func (f *failingDB) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	if f.calls.Add(1) == f.failTx {
		return nil, errInjected
	}
	return f.DynamoDB.TransactWriteItems(ctx, in, opts...)
}

func TestCreateTable(t *testing.T) {
	ctx := context.Background()
	db := client.NewClient()
	require.NoError(t, CreateTable(ctx, db, "t1"))
	require.NoError(t, CreateTable(ctx, db, "t1"), "second create is a no-op")

	out, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("t1")})
	require.NoError(t, err)
	var names []string
	for _, g := range out.Table.GlobalSecondaryIndexes {
		names = append(names, aws.ToString(g.IndexName))
	}
	assert.ElementsMatch(t, []string{IndexGSI1, IndexGSI2, IndexGSI3, IndexGSI4}, names)
	assert.Len(t, Indexes(), 4)
}

func TestNewDefaults(t *testing.T) {
	s := New(client.NewClient(), "", nil)
	assert.Equal(t, DefaultTable, s.table)
	assert.WithinDuration(t, time.Now(), s.now(), time.Minute)
}

func TestSites(t *testing.T) {
	eachBackend(t, func(t *testing.T, mk func(testing.TB) (*Store, *clockwork.FakeClock)) {
		t.Helper()
		ctx := context.Background()
		s, clk := mk(t)
		a := mustSite(t, s, "s1", "Paris")
		assert.Equal(t, int64(1), a.Version)
		assert.Equal(t, domain.StatusActive, a.Status)
		assert.Equal(t, t0, a.CreatedAt)
		mustSite(t, s, "s0", "Lyon")

		t.Run("create rejects", func(t *testing.T) {
			tests := []struct {
				name   string
				site   domain.Site
				target any
				reason string
			}{
				{"same id", domain.Site{ID: "s1", Name: "Other"}, new(*ItemConflictError), "already exists"},
				{"same name other case", domain.Site{ID: "s2", Name: "paris"}, new(*ItemConflictError), "used by site s1"},
				{"no id", domain.Site{Name: "X"}, new(*InvalidRecordError), "id is required"},
				{"hash in id", domain.Site{ID: "a#b", Name: "X"}, new(*InvalidRecordError), "'#'"},
				{"no name", domain.Site{ID: "s3", Name: " "}, new(*InvalidRecordError), "name is required"},
			}
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					err := s.CreateSite(ctx, tc.site)
					require.ErrorAs(t, err, tc.target)
					assert.Contains(t, err.Error(), tc.reason)
				})
			}
			_, err := s.GetSite(ctx, "s2")
			require.ErrorAs(t, err, new(*ItemNotFoundError), "a rejected create writes nothing")
		})

		t.Run("list", func(t *testing.T) {
			sites, err := s.ListSites(ctx)
			require.NoError(t, err)
			require.Len(t, sites, 2)
			assert.Equal(t, "s0", sites[0].ID)
			assert.Equal(t, "s1", sites[1].ID)
		})

		t.Run("update and rename", func(t *testing.T) {
			clk.Advance(time.Minute)
			got, err := s.UpdateSite(ctx, "s1", func(x *domain.Site) error {
				x.ID = "hijack" // ignored: ids never change
				x.Name = "Paris-2"
				x.CredentialsSet = true
				return nil
			})
			require.NoError(t, err)
			assert.Equal(t, "s1", got.ID)
			assert.Equal(t, int64(2), got.Version)
			assert.Equal(t, t0.Add(time.Minute), got.UpdatedAt)
			assert.Equal(t, t0, got.CreatedAt)

			stored, err := s.GetSite(ctx, "s1")
			require.NoError(t, err)
			assert.Equal(t, got, stored)

			// The old name is free again, the new one taken.
			require.NoError(t, s.CreateSite(ctx, domain.Site{ID: "s4", Name: "PARIS"}))
			err = s.CreateSite(ctx, domain.Site{ID: "s5", Name: "paris-2"})
			require.ErrorAs(t, err, new(*ItemConflictError))
		})

		t.Run("rename onto a taken name", func(t *testing.T) {
			_, err := s.UpdateSite(ctx, "s1", func(x *domain.Site) error { x.Name = "lyon"; return nil })
			var ce *ItemConflictError
			require.ErrorAs(t, err, &ce)
			assert.Contains(t, ce.Reason, "s0")
			stored, err := s.GetSite(ctx, "s1")
			require.NoError(t, err)
			assert.Equal(t, "Paris-2", stored.Name, "nothing changed")
		})

		t.Run("mutator error comes back unchanged", func(t *testing.T) {
			boom := errors.New("boom")
			_, err := s.UpdateSite(ctx, "s1", func(*domain.Site) error { return boom })
			assert.Same(t, boom, err)
		})

		t.Run("update unknown", func(t *testing.T) {
			_, err := s.UpdateSite(ctx, "nope", func(*domain.Site) error { return nil })
			var nf *ItemNotFoundError
			require.ErrorAs(t, err, &nf)
			assert.Equal(t, "site", nf.Kind)
		})
	})
}

func TestProfiles(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newTestStore(t)
	mustSite(t, s, "s1", "Paris")
	yes := true

	require.NoError(t, s.CreateProfile(ctx, domain.Profile{ID: "p2", SiteID: "s1", Name: "gpu", Policy: domain.Policy{AutoClaimNew: &yes}}))
	require.NoError(t, s.CreateProfile(ctx, domain.Profile{ID: "p1", SiteID: "s1", Name: "cpu"}))

	tests := []struct {
		name    string
		profile domain.Profile
		target  any
	}{
		{"unknown site", domain.Profile{ID: "p3", SiteID: "nope"}, new(*ItemNotFoundError)},
		{"same id", domain.Profile{ID: "p1", SiteID: "s1"}, new(*ItemConflictError)},
		{"no id", domain.Profile{SiteID: "s1"}, new(*InvalidRecordError)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.ErrorAs(t, s.CreateProfile(ctx, tc.profile), tc.target)
		})
	}

	got, err := s.GetProfile(ctx, "s1", "p2")
	require.NoError(t, err)
	require.NotNil(t, got.Policy.AutoClaimNew)
	assert.True(t, *got.Policy.AutoClaimNew)
	assert.Equal(t, domain.StatusActive, got.Status)

	_, err = s.GetProfile(ctx, "other", "p2")
	require.ErrorAs(t, err, new(*ItemNotFoundError), "a profile lives under its site only")

	list, err := s.ListProfiles(ctx, "s1")
	require.NoError(t, err)
	require.Len(t, list, 2)
	assert.Equal(t, []string{"p1", "p2"}, []string{list[0].ID, list[1].ID})

	none, err := s.ListProfiles(ctx, "nope")
	require.NoError(t, err)
	assert.Empty(t, none)
	assert.NotNil(t, none)

	upd, err := s.UpdateProfile(ctx, "s1", "p2", func(p *domain.Profile) error {
		p.Status = domain.StatusDisabled
		p.SiteID = "elsewhere" // ignored
		p.Policy.AutoClaimNew = nil
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, "s1", upd.SiteID)
	assert.Nil(t, upd.Policy.AutoClaimNew)
	assert.Equal(t, int64(2), upd.Version)
	stored, err := s.GetProfile(ctx, "s1", "p2")
	require.NoError(t, err)
	assert.Equal(t, domain.StatusDisabled, stored.Status)
}

func TestSKUs(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newTestStore(t)
	require.NoError(t, s.CreateSKU(ctx, domain.SKU{ID: "h100x8", GPUModel: "H100", GPUsTotal: 8, Active: true}))
	require.NoError(t, s.CreateSKU(ctx, domain.SKU{ID: "a100x4", GPUModel: "A100", GPUsTotal: 4}))
	require.ErrorAs(t, s.CreateSKU(ctx, domain.SKU{ID: "h100x8"}), new(*ItemConflictError))
	require.ErrorAs(t, s.CreateSKU(ctx, domain.SKU{}), new(*InvalidRecordError))

	list, err := s.ListSKUs(ctx)
	require.NoError(t, err)
	require.Len(t, list, 2)
	assert.Equal(t, "a100x4", list[0].ID)

	upd, err := s.UpdateSKU(ctx, "h100x8", func(x *domain.SKU) error { x.Active = false; return nil })
	require.NoError(t, err)
	assert.False(t, upd.Active)
	got, err := s.GetSKU(ctx, "h100x8")
	require.NoError(t, err)
	assert.Equal(t, upd, got)
	assert.Equal(t, 8, got.GPUsTotal)

	_, err = s.GetSKU(ctx, "nope")
	require.ErrorAs(t, err, new(*ItemNotFoundError))
	_, err = s.UpdateSKU(ctx, "nope", func(*domain.SKU) error { return nil })
	require.ErrorAs(t, err, new(*ItemNotFoundError))
}

func TestNodes(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newTestStore(t)
	n := domain.Node{ID: "n1", SiteID: "s1", Hostname: "gpu01.dc1", SKUID: "h100x8", Status: domain.NodeOnboarding}
	require.NoError(t, s.CreateNode(ctx, n))

	tests := []struct {
		name   string
		node   domain.Node
		target any
		reason string
	}{
		{"same id", domain.Node{ID: "n1", SiteID: "s1", Hostname: "other"}, new(*ItemConflictError), "already exists"},
		{"same host other case", domain.Node{ID: "n2", SiteID: "s1", Hostname: "GPU01.dc1"}, new(*ItemConflictError), "node n1"},
		{"no hostname", domain.Node{ID: "n3", SiteID: "s1"}, new(*InvalidRecordError), "hostname"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := s.CreateNode(ctx, tc.node)
			require.ErrorAs(t, err, tc.target)
			assert.Contains(t, err.Error(), tc.reason)
		})
	}
	// Another site may use the same hostname.
	require.NoError(t, s.CreateNode(ctx, domain.Node{ID: "n4", SiteID: "s2", Hostname: "gpu01.dc1"}))

	found, ok, err := s.FindNodeByHost(ctx, "s1", "Gpu01.DC1")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "n1", found.ID)
	_, ok, err = s.FindNodeByHost(ctx, "s1", "gpu02")
	require.NoError(t, err)
	assert.False(t, ok)

	now := t0.Add(time.Hour)
	upd, err := s.UpdateNode(ctx, "n1", func(x *domain.Node) error {
		x.Status, x.EnrolledAt, x.Hostname = domain.NodeActive, &now, "gpu09.dc1"
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, domain.NodeActive, upd.Status)
	got, err := s.GetNode(ctx, "n1")
	require.NoError(t, err)
	require.NotNil(t, got.EnrolledAt)
	assert.True(t, now.Equal(*got.EnrolledAt))

	// The rename moved the claim.
	_, ok, err = s.FindNodeByHost(ctx, "s1", "gpu01.dc1")
	require.NoError(t, err)
	assert.False(t, ok)
	found, ok, err = s.FindNodeByHost(ctx, "s1", "gpu09.dc1")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "n1", found.ID)

	require.NoError(t, s.CreateNode(ctx, domain.Node{ID: "n5", SiteID: "s1", Hostname: "gpu01.dc1"}))
	_, err = s.UpdateNode(ctx, "n5", func(x *domain.Node) error { x.Hostname = "gpu09.dc1"; return nil })
	require.ErrorAs(t, err, new(*ItemConflictError))
	_, err = s.GetNode(ctx, "zz")
	require.ErrorAs(t, err, new(*ItemNotFoundError))
}

func TestAudit(t *testing.T) {
	eachBackend(t, func(t *testing.T, mk func(testing.TB) (*Store, *clockwork.FakeClock)) {
		t.Helper()
		ctx := context.Background()
		s, clk := mk(t)
		for i := range 5 {
			require.NoError(t, s.AppendAudit(ctx, domain.AuditEntry{Actor: "admin", Action: "site.create", Target: string(rune('a' + i)), Result: "ok"}))
			clk.Advance(time.Second)
		}
		all, err := s.ListAudit(ctx, 0)
		require.NoError(t, err)
		require.Len(t, all, 5)
		assert.Equal(t, "e", all[0].Target, "newest first")
		assert.Equal(t, "a", all[4].Target)
		assert.NotEmpty(t, all[0].ID)
		assert.Equal(t, t0.Add(4*time.Second), all[0].Time)

		two, err := s.ListAudit(ctx, 2)
		require.NoError(t, err)
		assert.Equal(t, []string{"e", "d"}, []string{two[0].Target, two[1].Target})

		dup := domain.AuditEntry{ID: "x", Time: t0}
		require.NoError(t, s.AppendAudit(ctx, dup))
		require.ErrorAs(t, s.AppendAudit(ctx, dup), new(*ItemConflictError))
	})
}

func TestTransactionCodes(t *testing.T) {
	tests := []struct {
		name                  string
		codes                 []string
		failed0, any, contend bool
	}{
		{"none", []string{"None", "None"}, false, false, false},
		{"first failed", []string{"ConditionalCheckFailed", "None"}, true, true, false},
		{"second failed", []string{"None", "ConditionalCheckFailed"}, false, true, false},
		{"conflict", []string{"TransactionConflict", "None"}, false, false, true},
		{"empty", nil, false, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.failed0, txFailed(tc.codes, 0))
			assert.Equal(t, tc.any, anyFailed(tc.codes))
			assert.Equal(t, tc.contend, txContended(tc.codes))
		})
	}
}
