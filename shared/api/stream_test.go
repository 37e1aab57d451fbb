package api

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
)

// sseEvent is one parsed server-sent event.
type sseEvent struct {
	name string
	data string
}

// readSSE parses events from r onto a channel until r ends.
func readSSE(r *bufio.Reader) <-chan sseEvent {
	ch := make(chan sseEvent, 16)
	go func() {
		defer close(ch)
		var ev sseEvent
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			line = strings.TrimRight(line, "\n")
			switch {
			case line == "":
				if ev.name != "" || ev.data != "" {
					ch <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, "event: "):
				ev.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				ev.data += strings.TrimPrefix(line, "data: ")
			}
		}
	}()
	return ch
}

func nextEvent(t *testing.T, ch <-chan sseEvent) sseEvent {
	t.Helper()
	select {
	case ev, ok := <-ch:
		require.True(t, ok, "the stream ended")
		return ev
	case <-time.After(20 * time.Second):
		t.Fatal("no event within 20s")
	}
	return sseEvent{}
}

func TestStreamOnboardingPushesEachChange(t *testing.T) {
	h := newHarness(t)
	fx := h.fixture()
	id := h.mustAdmin(http.StatusAccepted, "POST", "/api/v1/admin/onboardings", fx.onboarding("gpu-01"))["id"].(string)
	srv := httptest.NewServer(h.handler)
	defer srv.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/api/v1/admin/onboardings/"+id+"/stream", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	assert.NotEmpty(t, resp.Header.Get(HeaderCorrelationID))
	events := readSSE(bufio.NewReader(resp.Body))

	// The first event is what GET answers now.
	first := nextEvent(t, events)
	assert.Equal(t, "onboarding", first.name)
	want := h.admin("GET", "/api/v1/admin/onboardings/"+id, nil)
	assert.JSONEq(t, string(want.body), first.data)

	// A change is pushed, once.
	require.NoError(t, h.store.AppendOnboardingEvents(ctx, domain.TimelineEntry{OnboardingID: id, Time: t0.Add(time.Minute),
		Attempt: 1, Kind: domain.TimelineStageEntered, Stage: domain.StageDiscover}))
	second := nextEvent(t, events)
	assert.Equal(t, "onboarding", second.name)
	var d struct {
		ID       string `json:"id"`
		Timeline []struct {
			Kind  string `json:"kind"`
			Stage string `json:"stage"`
		} `json:"timeline"`
	}
	require.NoError(t, json.Unmarshal([]byte(second.data), &d))
	assert.Equal(t, id, d.ID)
	require.NotEmpty(t, d.Timeline)
	assert.Equal(t, "stage_entered", d.Timeline[len(d.Timeline)-1].Kind)
	assert.Equal(t, string(domain.StageDiscover), d.Timeline[len(d.Timeline)-1].Stage)

	select {
	case ev := <-events:
		t.Fatalf("an unchanged onboarding was pushed again: %s", ev.name)
	case <-time.After(3 * defaultStreamInterval):
	}
}

func TestStreamRefusals(t *testing.T) {
	h := newHarness(t)
	r := h.do(call{method: "GET", path: "/api/v1/admin/onboardings/nope/stream"})
	assert.Equal(t, http.StatusUnauthorized, r.status, "no token, no stream")
	r = h.admin("GET", "/api/v1/admin/onboardings/nope/stream", nil)
	assert.Equal(t, http.StatusNotFound, r.status, "an unknown id is a 404, not an empty stream")
	code, _ := r.errorOf(t)
	assert.Equal(t, CodeNotFound, code)
	assert.Equal(t, "application/json", r.header.Get("Content-Type"))
	r = h.admin("GET", "/api/v1/admin/decommissions/nope/stream", nil)
	assert.Equal(t, http.StatusNotFound, r.status)
	r = h.admin("GET", "/api/v1/admin/onboarding-batches/nope/stream", nil)
	assert.Equal(t, http.StatusNotFound, r.status)
}

func TestStreamEndsAtMaxAge(t *testing.T) {
	h := newHarness(t)
	fx := h.fixture()
	id := h.mustAdmin(http.StatusAccepted, "POST", "/api/v1/admin/onboardings", fx.onboarding("gpu-01"))["id"].(string)
	s := h.handler
	// A handler of its own with a short age; the harness's store.
	h.handler = New(Config{StreamMaxAge: 50 * time.Millisecond}, Deps{Store: h.store, Secrets: h.secrets, Starter: h.starter,
		Stopper: h.stopper, Completer: h.completer, Prober: h.prober, Clock: h.clock,
		Auth: NewStaticTokens(map[string]Principal{adminToken: {Subject: "alice", Admin: true}})})
	defer func() { h.handler = s }()
	r := h.admin("GET", "/api/v1/admin/onboardings/"+id+"/stream", nil)
	require.Equal(t, http.StatusOK, r.status)
	var names []string
	for ev := range readSSE(bufio.NewReader(strings.NewReader(string(r.body)))) {
		names = append(names, ev.name)
	}
	assert.Equal(t, []string{"onboarding", "end"}, names)
}

func TestStreamRefusedWhereTheFrontBuffers(t *testing.T) {
	h := newHarness(t)
	fx := h.fixture()
	id := h.mustAdmin(http.StatusAccepted, "POST", "/api/v1/admin/onboardings", fx.onboarding("gpu-01"))["id"].(string)
	h.handler = New(Config{NoStreams: true}, Deps{Store: h.store, Secrets: h.secrets, Starter: h.starter,
		Stopper: h.stopper, Completer: h.completer, Prober: h.prober, Clock: h.clock,
		Auth: NewStaticTokens(map[string]Principal{adminToken: {Subject: "alice", Admin: true}})})
	r := h.admin("GET", "/api/v1/admin/onboardings/"+id+"/stream", nil)
	assert.Equal(t, http.StatusNotImplemented, r.status)
	code, msg := r.errorOf(t)
	assert.Equal(t, CodeStreamsUnsupported, code)
	assert.Contains(t, msg, "GET /api/v1/admin/onboardings/"+id)
}

func TestStreamOnboardingsList(t *testing.T) {
	h := newHarness(t)
	fx := h.fixture()
	r := h.admin("GET", "/api/v1/admin/onboardings/stream?status=bogus", nil)
	assert.Equal(t, http.StatusBadRequest, r.status, "the list's own validation")
	h.mustAdmin(http.StatusAccepted, "POST", "/api/v1/admin/onboardings", fx.onboarding("gpu-01"))
	srv := httptest.NewServer(h.handler)
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/api/v1/admin/onboardings/stream?limit=5", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	events := readSSE(bufio.NewReader(resp.Body))
	first := nextEvent(t, events)
	assert.Equal(t, "onboardings", first.name)
	assert.Contains(t, first.data, `"hostname":"gpu-01"`)
	h.mustAdmin(http.StatusAccepted, "POST", "/api/v1/admin/onboardings", fx.onboarding("gpu-02"))
	second := nextEvent(t, events)
	assert.Contains(t, second.data, `"hostname":"gpu-02"`, "a new onboarding is pushed")
}

func TestAnswersSayTheTimeScale(t *testing.T) {
	h := newHarness(t)
	r := h.admin("GET", "/api/v1/admin/maas-sites", nil)
	assert.Empty(t, r.header.Get(HeaderTimeScale), "real time: no header")
	h.handler = New(Config{TimeScale: 40}, Deps{Store: h.store, Secrets: h.secrets, Starter: h.starter,
		Stopper: h.stopper, Completer: h.completer, Prober: h.prober, Clock: h.clock,
		Auth: NewStaticTokens(map[string]Principal{adminToken: {Subject: "alice", Admin: true}})})
	r = h.admin("GET", "/api/v1/admin/maas-sites", nil)
	assert.Equal(t, "40", r.header.Get(HeaderTimeScale))
	r = h.admin("GET", "/api/v1/admin/onboardings/nope", nil)
	assert.Equal(t, "40", r.header.Get(HeaderTimeScale), "errors too")
}

// A server's ReadTimeout and WriteTimeout bound a request and an answer,
// not how long a stream stays open (it renews its write deadline): a change
// long after them is still pushed on the same stream.
func TestStreamOutlivesTheServersTimeouts(t *testing.T) {
	h := newHarness(t)
	fx := h.fixture()
	id := h.mustAdmin(http.StatusAccepted, "POST", "/api/v1/admin/onboardings", fx.onboarding("gpu-01"))["id"].(string)
	srv := httptest.NewUnstartedServer(h.handler)
	srv.Config.ReadTimeout = 200 * time.Millisecond
	srv.Config.WriteTimeout = 200 * time.Millisecond
	srv.Start()
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/api/v1/admin/onboardings/"+id+"/stream", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	events := readSSE(bufio.NewReader(resp.Body))
	nextEvent(t, events)
	time.Sleep(time.Second) // five read timeouts
	require.NoError(t, h.store.AppendOnboardingEvents(ctx, domain.TimelineEntry{OnboardingID: id, Time: t0.Add(time.Minute),
		Attempt: 1, Kind: domain.TimelineStageEntered, Stage: domain.StageDiscover}))
	ev := nextEvent(t, events)
	assert.Equal(t, "onboarding", ev.name)
	assert.Contains(t, ev.data, string(domain.StageDiscover))
}
