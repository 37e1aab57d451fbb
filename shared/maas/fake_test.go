package maas

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
)

// testKey is the seeded API key: consumer key, token key, token secret.
const (
	testConsumerKey = "cK3yConsumer01"
	testTokenKey    = "tK3yToken02"
	testTokenSecret = "tS3cretTokenSecret03"
	testKey         = domain.Secret(testConsumerKey + ":" + testTokenKey + ":" + testTokenSecret)
	apiPrefix       = "/MAAS/api/2.0/"
)

// fakeMAAS is an httptest server with canned answers per method, path and
// op, recording every request it receives.
type fakeMAAS struct {
	t      *testing.T
	srv    *httptest.Server
	stop   chan struct{}
	mu     sync.Mutex
	routes map[routeKey]canned
	reqs   []recorded
}

type routeKey struct{ method, path, op string }

type canned struct {
	status int
	body   string
	header http.Header
	// arrived, when set, makes the handler signal it and then hang until
	// the client goes away: a MAAS that never answers.
	arrived chan struct{}
}

// recorded is one request as the server saw it; Path is relative to the
// API root.
type recorded struct {
	Method string
	Path   string
	Op     string
	Query  url.Values
	Form   url.Values
	Header http.Header
	Body   string
}

func newFakeMAAS(t *testing.T) *fakeMAAS {
	t.Helper()
	f := &fakeMAAS{t: t, stop: make(chan struct{}), routes: map[routeKey]canned{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(func() {
		close(f.stop)
		f.srv.Close()
	})
	return f
}

// on registers a canned answer. headers are key, value pairs. A body that
// looks like JSON is sent as application/json, anything else as text/plain,
// unless headers set Content-Type.
func (f *fakeMAAS) on(method, path, op string, status int, body string, headers ...string) *fakeMAAS {
	f.t.Helper()
	require.Zero(f.t, len(headers)%2, "headers come in key, value pairs")
	h := http.Header{}
	trimmed := strings.TrimSpace(body)
	if strings.HasPrefix(trimmed, "{") || strings.HasPrefix(trimmed, "[") || trimmed == "null" {
		h.Set("Content-Type", "application/json")
	} else {
		h.Set("Content-Type", "text/plain; charset=utf-8")
	}
	for i := 0; i < len(headers); i += 2 {
		h.Set(headers[i], headers[i+1])
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.routes[routeKey{method, path, op}] = canned{status: status, body: body, header: h}
	return f
}

// onFile answers 200 with a testdata file.
func (f *fakeMAAS) onFile(method, path, op, file string) *fakeMAAS {
	f.t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", file))
	require.NoError(f.t, err)
	return f.on(method, path, op, http.StatusOK, string(b))
}

// onHang registers a route that never answers; the returned channel
// receives when the request has arrived.
func (f *fakeMAAS) onHang(method, path, op string) <-chan struct{} {
	arrived := make(chan struct{}, 1)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.routes[routeKey{method, path, op}] = canned{arrived: arrived}
	return arrived
}

func (f *fakeMAAS) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	// The escaped path, so that a test can see how a system id was escaped.
	rel := strings.TrimPrefix(r.URL.EscapedPath(), apiPrefix)
	rec := recorded{
		Method: r.Method, Path: rel, Op: r.URL.Query().Get("op"),
		Query: r.URL.Query(), Header: r.Header.Clone(), Body: string(body),
	}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		rec.Form, _ = url.ParseQuery(string(body))
	}
	f.mu.Lock()
	f.reqs = append(f.reqs, rec)
	c, ok := f.routes[routeKey{r.Method, rel, rec.Op}]
	f.mu.Unlock()
	if !ok || !strings.HasPrefix(r.URL.Path, apiPrefix) {
		f.t.Errorf("fake MAAS: no answer registered for %s %s op=%q", r.Method, r.URL.Path, rec.Op)
		http.Error(w, "no canned answer", http.StatusTeapot)
		return
	}
	if c.arrived != nil {
		c.arrived <- struct{}{}
		select {
		case <-r.Context().Done():
		case <-f.stop:
		}
		return
	}
	for k, v := range c.header {
		w.Header()[k] = v
	}
	w.WriteHeader(c.status)
	_, _ = io.WriteString(w, c.body)
}

// baseURL is the region URL a site would configure.
func (f *fakeMAAS) baseURL() string { return f.srv.URL + "/MAAS" }

// client builds a Client for the fake with a pinned nonce and clock.
func (f *fakeMAAS) client(opts ...Option) *Client {
	f.t.Helper()
	base := []Option{WithNonce(func() string { return "nonce-1" }), WithNow(fixedNow)}
	c, err := NewClient(f.baseURL(), testKey, append(base, opts...)...)
	require.NoError(f.t, err)
	return c
}

func (f *fakeMAAS) requests() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.reqs...)
}

// only returns the one request the fake received.
func (f *fakeMAAS) only() recorded {
	f.t.Helper()
	reqs := f.requests()
	require.Len(f.t, reqs, 1)
	return reqs[0]
}

var testNow = time.Date(2025, 1, 7, 10, 15, 30, 0, time.UTC)

func fixedNow() time.Time { return testNow }

// manualDeadline is a context whose deadline fires when the test says so,
// so timeouts are tested without waiting on the wall clock.
type manualDeadline struct {
	context.Context
	done chan struct{}
	once sync.Once
}

func newManualDeadline() *manualDeadline {
	return &manualDeadline{Context: context.Background(), done: make(chan struct{})}
}

func (m *manualDeadline) Deadline() (time.Time, bool) { return time.Now().Add(time.Hour), true }
func (m *manualDeadline) Done() <-chan struct{}       { return m.done }
func (m *manualDeadline) Err() error {
	select {
	case <-m.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}
func (m *manualDeadline) fire() { m.once.Do(func() { close(m.done) }) }
