package api

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/store"
)

// changesHarness is the harness whose store notifies its writes and counts
// its calls, with a handler whose streams wait on the notifications and
// whose fallback re-read is far beyond any test.
func changesHarness(t *testing.T) (*harness, *store.Counting) {
	t.Helper()
	var counting *store.Counting
	var notifying *store.Notifying
	h := newHarness(t,
		func(db store.DynamoDB) store.DynamoDB { notifying = store.NewNotifying(db); return notifying },
		func(db store.DynamoDB) store.DynamoDB { counting = store.NewCounting(db); return counting })
	h.handler = New(Config{StreamFallback: time.Hour}, Deps{Store: h.store, Secrets: h.secrets, Starter: h.starter,
		Stopper: h.stopper, Completer: h.completer, Prober: h.prober, Clock: h.clock,
		Auth:    NewStaticTokens(map[string]Principal{adminToken: {Subject: "alice", Admin: true}}),
		Changes: notifying})
	return h, counting
}

// openStream opens path's stream on srv and returns its events; the stream
// closes with the test.
func openStream(t *testing.T, srv *httptest.Server, path string) <-chan sseEvent {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+path, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { _ = resp.Body.Close() })
	require.Equal(t, http.StatusOK, resp.StatusCode, path)
	return readSSE(bufio.NewReader(resp.Body))
}

func TestStreamWakesOnAWriteNotTheFallback(t *testing.T) {
	h, _ := changesHarness(t)
	fx := h.fixture()
	id := h.mustAdmin(http.StatusAccepted, "POST", "/api/v1/admin/onboardings", fx.onboarding("gpu-01"))["id"].(string)
	srv := httptest.NewServer(h.handler)
	t.Cleanup(srv.Close) // after the streams' own cleanups have closed them
	events := openStream(t, srv, "/api/v1/admin/onboardings/"+id+"/stream")
	nextEvent(t, events)

	// The fallback is an hour away: only the write's notification can
	// bring this change within nextEvent's wait.
	require.NoError(t, h.store.AppendOnboardingEvents(t.Context(), domain.TimelineEntry{OnboardingID: id, Time: t0.Add(time.Minute),
		Attempt: 1, Kind: domain.TimelineStageEntered, Stage: domain.StageDiscover}))
	ev := nextEvent(t, events)
	assert.Equal(t, "onboarding", ev.name)
	assert.Contains(t, ev.data, string(domain.StageDiscover))
}

func TestIdleStreamsReadNothing(t *testing.T) {
	h, counting := changesHarness(t)
	fx := h.fixture()
	id := h.mustAdmin(http.StatusAccepted, "POST", "/api/v1/admin/onboardings", fx.onboarding("gpu-01"))["id"].(string)
	srv := httptest.NewServer(h.handler)
	t.Cleanup(srv.Close) // after the streams' own cleanups have closed them
	const streams = 20
	all := make([]<-chan sseEvent, streams)
	for i := range all {
		path := "/api/v1/admin/onboardings/" + id + "/stream"
		if i%2 == 1 {
			path = "/api/v1/admin/onboardings/stream"
		}
		all[i] = openStream(t, srv, path)
		nextEvent(t, all[i])
	}
	before := counting.Counts()
	// Re-reading every StreamInterval, 20 streams would read the store
	// at least 40 times here.
	time.Sleep(4 * defaultStreamInterval)
	assert.Equal(t, before, counting.Counts(), "idle streams read the store")

	// One write wakes every stream, and each reads once and pushes it.
	require.NoError(t, h.store.AppendOnboardingEvents(t.Context(), domain.TimelineEntry{OnboardingID: id, Time: t0.Add(time.Minute),
		Attempt: 1, Kind: domain.TimelineStageEntered, Stage: domain.StageDiscover}))
	for i := range all {
		if i%2 == 0 {
			ev := nextEvent(t, all[i])
			assert.Contains(t, ev.data, string(domain.StageDiscover))
		}
	}
	assert.Positive(t, counting.Counts().Total()-before.Total())
}
