package connector_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/connector"
)

// fakeLink hands the runner scripted deliveries and records its replies.
type fakeLink struct {
	in      chan connector.Delivery
	mu      sync.Mutex
	replies []connector.Response
	acks    int
	beats   []connector.Heartbeat
	replied chan struct{}
}

func newFakeLink() *fakeLink {
	return &fakeLink{in: make(chan connector.Delivery, 16), replied: make(chan struct{}, 64)}
}

func (l *fakeLink) Receive(ctx context.Context) ([]connector.Delivery, error) {
	select {
	case d := <-l.in:
		return []connector.Delivery{d}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(50 * time.Millisecond):
		return nil, nil
	}
}

func (l *fakeLink) Reply(_ context.Context, r connector.Response) error {
	l.mu.Lock()
	l.replies = append(l.replies, r)
	l.mu.Unlock()
	l.replied <- struct{}{}
	return nil
}

func (l *fakeLink) Heartbeat(_ context.Context, hb connector.Heartbeat) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.beats = append(l.beats, hb)
	return nil
}

func (l *fakeLink) deliver(req connector.Request) {
	l.in <- connector.Delivery{Request: req, Ack: func(context.Context) error {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.acks++
		return nil
	}}
}

func (l *fakeLink) waitReply(t *testing.T) connector.Response {
	t.Helper()
	select {
	case <-l.replied:
	case <-time.After(5 * time.Second):
		t.Fatal("no reply")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.replies[len(l.replies)-1]
}

// maasStub counts the requests MAAS receives.
type maasStub struct {
	calls atomic.Int64
	auth  atomic.Value
	delay time.Duration
}

func (m *maasStub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.calls.Add(1)
	m.auth.Store(r.Header.Get("Authorization"))
	if m.delay > 0 {
		select {
		case <-time.After(m.delay):
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"path":"`+r.URL.Path+`","op":"`+r.URL.Query().Get("op")+`"}`)
}

func startRunner(t *testing.T, link connector.Link, maasURL, dir string, sign connector.Signer) context.CancelFunc {
	t.Helper()
	j, err := connector.OpenJournal(dir, nil)
	require.NoError(t, err)
	r := &connector.Runner{Link: link, Site: "s1", MAASURL: maasURL, Journal: j, Version: "v1.0.0", Workers: 4, Sign: sign}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = r.Run(ctx); close(done) }()
	stop := func() { cancel(); <-done; _ = j.Close() }
	t.Cleanup(stop)
	return stop
}

func request(id, method, url string) connector.Request {
	return connector.Request{ID: id, Site: "s1", Kind: connector.KindMAAS, Method: method, URL: url, Deadline: time.Now().Add(5 * time.Second)}
}

func TestMutationRunsOnceAcrossRedeliveryAndRestart(t *testing.T) {
	maas := &maasStub{}
	srv := httptest.NewServer(maas)
	defer srv.Close()
	dir := t.TempDir()
	link := newFakeLink()
	stop := startRunner(t, link, srv.URL+"/MAAS", dir, nil)

	deploy := request("req-1", http.MethodPost, "machines/abc/?op=deploy")
	link.deliver(deploy)
	first := link.waitReply(t)
	assert.Equal(t, http.StatusOK, first.Status)
	assert.JSONEq(t, `{"path":"/MAAS/api/2.0/machines/abc/","op":"deploy"}`, string(first.Body))

	// SQS delivers the same message again: answered from the journal.
	link.deliver(deploy)
	again := link.waitReply(t)
	assert.Equal(t, first, again)
	assert.EqualValues(t, 1, maas.calls.Load(), "MAAS saw the deploy once")

	// A restarted connector remembers it too.
	stop()
	link2 := newFakeLink()
	startRunner(t, link2, srv.URL+"/MAAS", dir, nil)
	link2.deliver(deploy)
	assert.Equal(t, first, link2.waitReply(t))
	assert.EqualValues(t, 1, maas.calls.Load())

	// Reads are not journalled: repeating them is harmless.
	get := request("req-2", http.MethodGet, "machines/abc/")
	link2.deliver(get)
	link2.waitReply(t)
	link2.deliver(get)
	link2.waitReply(t)
	assert.EqualValues(t, 3, maas.calls.Load())
}

func TestInterruptedMutationIsNotRunAgain(t *testing.T) {
	maas := &maasStub{}
	srv := httptest.NewServer(maas)
	defer srv.Close()
	dir := t.TempDir()
	// A connector that crashed after journalling the begin.
	j, err := connector.OpenJournal(dir, nil)
	require.NoError(t, err)
	state, _, err := j.Begin("req-9")
	require.NoError(t, err)
	require.Equal(t, connector.BeginNew, state)
	require.NoError(t, j.Close())

	link := newFakeLink()
	startRunner(t, link, srv.URL+"/MAAS", dir, nil)
	link.deliver(request("req-9", http.MethodPost, "machines/abc/?op=release"))
	resp := link.waitReply(t)
	require.NotNil(t, resp.Error)
	assert.Equal(t, connector.FailUnknownOutcome, resp.Error.Kind)
	assert.EqualValues(t, 0, maas.calls.Load(), "never sent again")
}

func TestRequestsAreRefusedOrExpired(t *testing.T) {
	maas := &maasStub{}
	srv := httptest.NewServer(maas)
	defer srv.Close()
	link := newFakeLink()
	startRunner(t, link, srv.URL+"/MAAS", t.TempDir(), nil)

	cases := []struct {
		req  connector.Request
		want string
	}{
		{func() connector.Request { r := request("a", "GET", "machines/"); r.Site = "s2"; return r }(), connector.FailRefused},
		{request("b", "GET", "../../admin/"), connector.FailRefused},
		{request("c", "GET", "http://elsewhere/x"), connector.FailRefused},
		{func() connector.Request {
			r := request("d", "POST", "machines/?op=x")
			r.Kind = connector.KindFetch
			return r
		}(), connector.FailRefused},
		{func() connector.Request {
			r := request("e", "POST", "machines/?op=x")
			r.Deadline = time.Now().Add(-time.Second)
			return r
		}(), connector.FailExpired},
		{func() connector.Request {
			r := request("f", "GET", "machines/")
			r.Deadline = time.Now().Add(-time.Second)
			return r
		}(), connector.FailExpired},
	}
	for _, c := range cases {
		link.deliver(c.req)
		resp := link.waitReply(t)
		require.NotNil(t, resp.Error, c.req.ID)
		assert.Equal(t, c.want, resp.Error.Kind, c.req.ID)
	}
	assert.EqualValues(t, 0, maas.calls.Load(), "nothing reached MAAS")
	assert.Eventually(t, func() bool {
		link.mu.Lock()
		defer link.mu.Unlock()
		return link.acks == len(cases)
	}, 5*time.Second, 5*time.Millisecond, "every refused request is removed from the queue")
	link.mu.Lock()
	assert.NotEmpty(t, link.beats)
	assert.Equal(t, "v1.0.0", link.beats[0].Version)
	link.mu.Unlock()
}

func TestDeadlineBoundsTheMAASCall(t *testing.T) {
	maas := &maasStub{delay: 2 * time.Second}
	srv := httptest.NewServer(maas)
	defer srv.Close()
	link := newFakeLink()
	startRunner(t, link, srv.URL+"/MAAS", t.TempDir(), nil)
	req := request("slow", http.MethodGet, "machines/")
	req.Deadline = time.Now().Add(200 * time.Millisecond)
	start := time.Now()
	link.deliver(req)
	resp := link.waitReply(t)
	require.NotNil(t, resp.Error)
	assert.Equal(t, connector.FailTimeout, resp.Error.Kind)
	assert.Less(t, time.Since(start), 2*time.Second, "the connector gave up at the request's deadline")
}

func TestConnectorSignsWhenTheKeyStaysAtTheSite(t *testing.T) {
	maas := &maasStub{}
	srv := httptest.NewServer(maas)
	defer srv.Close()
	link := newFakeLink()
	startRunner(t, link, srv.URL+"/MAAS", t.TempDir(), func(r *http.Request) { r.Header.Set("Authorization", "OAuth site-key") })
	link.deliver(request("s", http.MethodGet, "users/?op=whoami"))
	link.waitReply(t)
	assert.Equal(t, "OAuth site-key", maas.auth.Load())
}

// TestTransportOverTheLocalBroker runs the whole local path: an HTTP
// client whose transport is the relay, the broker, the HTTP link and a
// runner in front of a MAAS stub.
func TestTransportOverTheLocalBroker(t *testing.T) {
	maas := &maasStub{}
	msrv := httptest.NewServer(maas)
	defer msrv.Close()
	broker := connector.NewBroker([]byte("key"), nil)
	bsrv := httptest.NewServer(broker.Handler())
	defer bsrv.Close()
	defer broker.Close()
	startRunner(t, &connector.HTTPLink{Endpoint: bsrv.URL, Token: broker.Token("s1"), Site: "s1", Wait: time.Second}, msrv.URL+"/MAAS", t.TempDir(), nil)

	hc := &http.Client{Transport: &connector.Transport{Relay: broker, Site: "s1", Kind: connector.KindMAAS}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://maas.site:5240/MAAS/api/2.0/machines/xyz/?op=deploy",
		strings.NewReader("distro_series=jammy"))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := hc.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.JSONEq(t, `{"path":"/MAAS/api/2.0/machines/xyz/","op":"deploy"}`, string(body))

	// A site with no connector: the caller's deadline ends the wait, as a
	// timeout the MAAS client recognises.
	hc2 := &http.Client{Transport: &connector.Transport{Relay: broker, Site: "nobody", Kind: connector.KindMAAS}}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel2()
	req2, _ := http.NewRequestWithContext(ctx2, http.MethodGet, "http://maas/MAAS/api/2.0/version/", nil)
	_, err = hc2.Do(req2)
	require.Error(t, err)
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestBrokerAuthenticatesEachSite(t *testing.T) {
	broker := connector.NewBroker([]byte("key"), nil)
	srv := httptest.NewServer(broker.Handler())
	defer srv.Close()
	defer broker.Close()

	bad := &connector.HTTPLink{Endpoint: srv.URL, Token: "s1." + strings.Repeat("0", 64), Site: "s1", Wait: time.Second}
	_, err := bad.Receive(context.Background())
	require.ErrorContains(t, err, "401")
	forged := &connector.HTTPLink{Endpoint: srv.URL, Token: "s2." + strings.SplitN(broker.Token("s1"), ".", 2)[1], Site: "s2", Wait: time.Second}
	_, err = forged.Receive(context.Background())
	require.ErrorContains(t, err, "401", "a token names one site only")

	// s2's connector cannot answer s1's request.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	got := make(chan error, 1)
	go func() {
		_, err := broker.Do(ctx, connector.Request{ID: "r1", Site: "s1", Kind: connector.KindMAAS, Method: "GET", URL: "version/", Deadline: time.Now().Add(2 * time.Second)})
		got <- err
	}()
	s2 := &connector.HTTPLink{Endpoint: srv.URL, Token: broker.Token("s2"), Site: "s2", Wait: time.Second}
	err = s2.Reply(context.Background(), connector.Response{ID: "r1", Status: 200})
	// Either the request is not registered yet (accepted and ignored) or
	// it belongs to another site (forbidden); it is never delivered.
	if err != nil {
		require.ErrorContains(t, err, "403")
	}
	s1 := &connector.HTTPLink{Endpoint: srv.URL, Token: broker.Token("s1"), Site: "s1", Wait: time.Second}
	ds, err := s1.Receive(context.Background())
	require.NoError(t, err)
	require.Len(t, ds, 1)
	require.NoError(t, s1.Reply(context.Background(), connector.Response{ID: "r1", Status: 204}))
	require.NoError(t, <-got)
}

func TestFailureErrorIsANetTimeout(t *testing.T) {
	var ne net.Error
	err := error(&connector.ConnectorFailureError{Site: "s", Failure: connector.Failure{Kind: connector.FailTimeout}})
	require.ErrorAs(t, err, &ne)
	assert.True(t, ne.Timeout())
	assert.False(t, (&connector.ConnectorFailureError{Failure: connector.Failure{Kind: connector.FailUnreachable}}).Timeout())
}

func TestJournalCompactsAndKeepsWhatItMust(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	defer connector.SetCompactEvery(50)()
	j, err := connector.OpenJournal(dir, clock)
	require.NoError(t, err)
	for i := range 60 { // 120 lines: two compactions on the way
		id := "m-" + strconv.Itoa(i)
		_, _, err := j.Begin(id)
		require.NoError(t, err)
		require.NoError(t, j.Finish(id, connector.Response{ID: id, Status: 200}))
	}
	state, _, err := j.Begin("running")
	require.NoError(t, err)
	require.Equal(t, connector.BeginNew, state)
	require.NoError(t, j.Close())

	now = now.Add(time.Hour)
	j, err = connector.OpenJournal(dir, clock)
	require.NoError(t, err)
	state, reply, err := j.Begin("m-59")
	require.NoError(t, err)
	assert.Equal(t, connector.BeginDone, state)
	assert.Equal(t, 200, reply.Status)
	state, _, err = j.Begin("running")
	require.NoError(t, err)
	assert.Equal(t, connector.BeginInterrupted, state, "begun and never finished before the restart")
	require.NoError(t, j.Close())

	now = now.Add(connector.JournalRetention + time.Minute)
	j, err = connector.OpenJournal(dir, clock)
	require.NoError(t, err)
	defer func() { _ = j.Close() }()
	state, _, err = j.Begin("m-1")
	require.NoError(t, err)
	assert.Equal(t, connector.BeginNew, state, "entries older than the retention are dropped")
}
