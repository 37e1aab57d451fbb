package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
)

func watch(site, sid string, attempt, run int, token string, after int64) domain.MachineWatch {
	return domain.MachineWatch{SiteID: site, SystemID: sid, OnboardingID: "onb-" + sid, Attempt: attempt, Run: run,
		Target: "ready", TaskToken: domain.Secret(token), After: after, WakeAt: t0.Add(10 * time.Minute)}
}

func TestMachineWatches(t *testing.T) {
	eachBackend(t, func(t *testing.T, mk func(testing.TB) (*Store, *clockwork.FakeClock)) {
		t.Helper()
		ctx := context.Background()
		s, _ := mk(t)
		require.NoError(t, s.PutMachineWatch(ctx, watch("s1", "abc", 1, 0, "tok-1", 10)))
		require.NoError(t, s.PutMachineWatch(ctx, watch("s2", "def", 2, 1, "tok-2", 0)))
		require.NoError(t, s.PutWatchCursor(ctx, domain.WatchCursor{SiteID: "s1", After: 40, ListedAt: t0}))

		t.Run("one listing holds every site's watches and cursors", func(t *testing.T) {
			got, err := s.ListMachineWatches(ctx)
			require.NoError(t, err)
			require.Len(t, got.Watches, 2)
			assert.Equal(t, "abc", got.Watches[0].SystemID)
			assert.Equal(t, domain.Secret("tok-1"), got.Watches[0].TaskToken)
			assert.Equal(t, int64(10), got.Watches[0].After)
			assert.Equal(t, t0, got.Watches[0].RegisteredAt, "stamped")
			assert.Equal(t, t0.Add(10*time.Minute), got.Watches[0].WakeAt)
			assert.Equal(t, map[string]domain.WatchCursor{"s1": {SiteID: "s1", After: 40, ListedAt: t0}}, got.Cursors)
		})

		t.Run("an older attempt or run does not replace a newer", func(t *testing.T) {
			err := s.PutMachineWatch(ctx, watch("s2", "def", 1, 5, "tok-old", 0))
			var conflict *ItemConflictError
			require.ErrorAs(t, err, &conflict)
			assert.NotContains(t, err.Error(), "tok-old")
			err = s.PutMachineWatch(ctx, watch("s2", "def", 2, 0, "tok-old", 0))
			require.ErrorAs(t, err, &conflict)
			got, err := s.ListMachineWatches(ctx)
			require.NoError(t, err)
			assert.Equal(t, domain.Secret("tok-2"), got.Watches[1].TaskToken)
		})

		t.Run("the same or a newer attempt replaces the watch", func(t *testing.T) {
			require.NoError(t, s.PutMachineWatch(ctx, watch("s2", "def", 2, 1, "tok-3", 5)))
			require.NoError(t, s.PutMachineWatch(ctx, watch("s2", "def", 3, 0, "tok-4", 7)))
			got, err := s.ListMachineWatches(ctx)
			require.NoError(t, err)
			require.Len(t, got.Watches, 2)
			assert.Equal(t, domain.Secret("tok-4"), got.Watches[1].TaskToken)
			assert.Equal(t, int64(7), got.Watches[1].After)
		})

		t.Run("delete only with the token the watch holds", func(t *testing.T) {
			require.NoError(t, s.DeleteMachineWatch(ctx, "s2", "def", "tok-3"))
			got, err := s.ListMachineWatches(ctx)
			require.NoError(t, err)
			require.Len(t, got.Watches, 2, "a replaced token deletes nothing")
			require.NoError(t, s.DeleteMachineWatch(ctx, "s2", "def", "tok-4"))
			require.NoError(t, s.DeleteMachineWatch(ctx, "s2", "def", "tok-4"), "gone already")
			got, err = s.ListMachineWatches(ctx)
			require.NoError(t, err)
			require.Len(t, got.Watches, 1)
			assert.Equal(t, "abc", got.Watches[0].SystemID)
		})

		t.Run("a cursor never moves back", func(t *testing.T) {
			require.NoError(t, s.PutWatchCursor(ctx, domain.WatchCursor{SiteID: "s1", After: 30, ListedAt: t0.Add(time.Minute)}))
			got, err := s.ListMachineWatches(ctx)
			require.NoError(t, err)
			assert.Equal(t, int64(40), got.Cursors["s1"].After)
			require.NoError(t, s.PutWatchCursor(ctx, domain.WatchCursor{SiteID: "s1", After: 55, ListedAt: t0.Add(time.Minute)}))
			got, err = s.ListMachineWatches(ctx)
			require.NoError(t, err)
			assert.Equal(t, int64(55), got.Cursors["s1"].After)
			assert.Equal(t, t0.Add(time.Minute), got.Cursors["s1"].ListedAt)
		})

		t.Run("bad records are refused by field", func(t *testing.T) {
			err := s.PutMachineWatch(ctx, watch("s1", "", 1, 0, "tok", 0))
			var invalid *InvalidRecordError
			require.ErrorAs(t, err, &invalid)
			assert.Equal(t, "system_id", invalid.Field)
			err = s.PutMachineWatch(ctx, watch("s1", "x", 1, 0, "", 0))
			require.ErrorAs(t, err, &invalid)
			assert.Equal(t, "task_token", invalid.Field)
		})
	})
}

// pagingDB makes every Query page hold at most one item, as DynamoDB does
// past 1 MB.
type pagingDB struct{ DynamoDB }

func (p pagingDB) Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	one := int32(1)
	in.Limit = &one
	return p.DynamoDB.Query(ctx, in, opts...)
}

func TestListMachineWatchesPagesThrough(t *testing.T) {
	_, clk, db := newTestStore(t)
	s := New(pagingDB{db}, "", clk.Now)
	ctx := context.Background()
	for _, sid := range []string{"a", "b", "c"} {
		require.NoError(t, s.PutMachineWatch(ctx, watch("s1", sid, 1, 0, "tok-"+sid, 0)))
	}
	require.NoError(t, s.PutWatchCursor(ctx, domain.WatchCursor{SiteID: "s1", After: 3}))
	got, err := s.ListMachineWatches(ctx)
	require.NoError(t, err)
	assert.Len(t, got.Watches, 3)
	assert.Len(t, got.Cursors, 1)
}

func TestMachineWatchStoreErrorsKeepTheTokenOut(t *testing.T) {
	_, clk, db := newTestStore(t)
	s := New(failingWrites{db}, "", clk.Now)
	err := s.PutMachineWatch(context.Background(), watch("s1", "abc", 1, 0, "very-secret-token", 0))
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "very-secret-token")
	err = s.DeleteMachineWatch(context.Background(), "s1", "abc", "very-secret-token")
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "very-secret-token")
}

// failingWrites fails every write.
type failingWrites struct{ DynamoDB }

var errWriteDown = errors.New("write refused")

func (f failingWrites) PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return nil, errWriteDown
}

func (f failingWrites) TransactWriteItems(context.Context, *dynamodb.TransactWriteItemsInput, ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	return nil, errWriteDown
}
