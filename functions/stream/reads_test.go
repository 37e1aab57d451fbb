package main

import (
	"bufio"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/api"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/store"
)

// countingDB counts the store's calls to the database.
type countingDB struct {
	store.DynamoDB
	reads, writes atomic.Int64
}

func (c *countingDB) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c.reads.Add(1)
	return c.DynamoDB.GetItem(ctx, in, o...)
}

func (c *countingDB) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	c.reads.Add(1)
	return c.DynamoDB.Query(ctx, in, o...)
}

func (c *countingDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	c.writes.Add(1)
	return c.DynamoDB.PutItem(ctx, in, o...)
}

func (c *countingDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c.writes.Add(1)
	return c.DynamoDB.UpdateItem(ctx, in, o...)
}

func (c *countingDB) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	c.writes.Add(1)
	return c.DynamoDB.DeleteItem(ctx, in, o...)
}

func (c *countingDB) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	c.writes.Add(1)
	return c.DynamoDB.TransactWriteItems(ctx, in, o...)
}

// allowAll is an admin for every request: this test counts reads, not
// tokens.
type allowAll struct{}

func (allowAll) Authenticate(*http.Request) (api.Principal, error) {
	return api.Principal{Subject: "alice", Admin: true}, nil
}

// What one re-read of each stream costs in store calls, which the stream
// function makes every streamInterval per open stream (docs/deploy.md,
// "Live updates on AWS", quotes these figures), and that no stream
// writes: the function's role may only read.
func TestStreamReadsPerReRead(t *testing.T) {
	ctx := context.Background()
	db, err := store.NewLocalDB(ctx, "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	seed := store.New(db, "", time.Now)
	require.NoError(t, seed.CreateSite(ctx, domain.Site{ID: "s1", Name: "dc1", MAASURL: "https://maas.example/MAAS/", Status: "ready"}))
	require.NoError(t, seed.CreateNode(ctx, domain.Node{ID: "n1", SiteID: "s1", Hostname: "gpu1", Status: domain.NodeActive}))
	require.NoError(t, seed.CreateOnboarding(ctx, domain.Onboarding{ID: "o1", SiteID: "s1", Hostname: "gpu1", IPMIIP: "10.0.0.1",
		NodeID: "n1", Status: domain.OnboardingCompleted, Stage: domain.StageValidate, CorrelationID: "c1"}))
	require.NoError(t, seed.CreateDecommission(ctx, domain.Decommission{ID: "d1", NodeID: "n1", SiteID: "s1",
		Hostname: "gpu1", Mode: domain.DecommissionStorageCleanup, Status: "running", Stage: domain.DecomStageRelease,
		Attempt: 1, MAASSystemID: "aaa", NodeStatusBefore: "active", ExecutionID: "exec-d", CorrelationID: "c0", CreatedBy: "alice"}))

	counted := &countingDB{DynamoDB: db}
	h := newHandler(streamConfig(), store.New(counted, "", time.Now), allowAll{}, slog.New(slog.DiscardHandler))
	for _, path := range []string{
		"/api/v1/admin/onboardings/stream?limit=200",
		"/api/v1/admin/onboardings/o1/stream",
		"/api/v1/admin/decommissions/stream?limit=200",
		"/api/v1/admin/decommissions/d1/stream",
		"/api/v1/admin/onboarding-batches/stream?limit=100",
		"/api/v1/admin/nodes/stream?limit=200",
		"/api/v1/admin/nodes/n1/stream",
		"/api/v1/admin/reconciliation/drift/stream?limit=200&state=open",
		"/api/v1/admin/maas-sites/stream",
	} {
		t.Run(path, func(t *testing.T) {
			counted.reads.Store(0)
			rctx, cancel := context.WithCancel(ctx)
			defer cancel()
			srv := httptest.NewServer(h)
			defer srv.Close()
			req, err := http.NewRequestWithContext(rctx, http.MethodGet, srv.URL+path, nil)
			require.NoError(t, err)
			resp, err := srv.Client().Do(req)
			require.NoError(t, err)
			defer func() { _ = resp.Body.Close() }()
			require.Equal(t, http.StatusOK, resp.StatusCode)
			s := sse{bufio.NewReader(resp.Body)}
			_, data := s.event(t, 10*time.Second)
			require.NotEmpty(t, data)
			// The first event is one read, as every re-read is.
			n := counted.reads.Load()
			assert.Positive(t, n)
			assert.LessOrEqual(t, n, int64(8), "one re-read stays a handful of calls")
			t.Logf("%s: %d store reads per re-read, %d a minute per open stream", path, n, n*int64(time.Minute/streamInterval))
		})
	}
	assert.Zero(t, counted.writes.Load(), "the streams only read")
}
