package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/maasflow/maasflow/client"
)

// adminRecorded is one request the fake API saw.
type adminRecorded struct {
	Method string
	Path   string // escaped path
	Query  string
	Auth   string
	Body   string
}

// adminReply is a canned answer.
type adminReply struct {
	Status int
	Body   string
}

// adminFakeAPI is an httptest server with canned answers per "METHOD path"
// (escaped path, no query) that records every request. A route with several
// replies answers them in turn and repeats the last.
type adminFakeAPI struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	routes map[string][]adminReply
	calls  map[string]int
	reqs   []adminRecorded
	// header is set on every answer.
	header http.Header
}

func newAdminFakeAPI(t *testing.T) *adminFakeAPI {
	t.Helper()
	f := &adminFakeAPI{t: t, routes: map[string][]adminReply{}, calls: map[string]int{}, header: http.Header{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *adminFakeAPI) on(key string, replies ...adminReply) *adminFakeAPI {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.routes[key] = replies
	return f
}

func (f *adminFakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	key := r.Method + " " + r.URL.EscapedPath()
	f.mu.Lock()
	for k, v := range f.header {
		w.Header()[k] = v
	}
	if _, ok := f.routes[key]; !ok && key == "GET /api/v1/healthz" {
		// The health read a dry run asks first: the fake knows every dry
		// run unless a test set its own answer. Not recorded either.
		f.mu.Unlock()
		if w.Header().Get(client.HeaderDryRuns) == "" {
			w.Header().Set(client.HeaderDryRuns, "node.decommission node.remove onboarding.restart-clean site.disable")
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"status":"ok"}`)
		return
	}
	if _, ok := f.routes[key]; !ok && strings.HasSuffix(key, "/stream") {
		// A stream nobody set up: the fake is an API without streams, as
		// an older server (or one behind API Gateway) is, and the CLI
		// polls. Not recorded: the requests tests count are the reads.
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"error":{"code":"not_found","message":"no such endpoint","correlation_id":"cid-test"}}`)
		return
	}
	f.reqs = append(f.reqs, adminRecorded{Method: r.Method, Path: r.URL.EscapedPath(), Query: r.URL.RawQuery, Auth: r.Header.Get("Authorization"), Body: string(b)})
	replies, ok := f.routes[key]
	n := f.calls[key]
	f.calls[key]++
	f.mu.Unlock()
	w.Header().Set(headerCorrelationID, "cid-test")
	if !ok {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"error":{"code":"not_found","message":"no such endpoint","correlation_id":"cid-test"}}`)
		return
	}
	rep := replies[min(n, len(replies)-1)]
	if rep.Status == http.StatusNoContent {
		w.WriteHeader(rep.Status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if strings.HasPrefix(rep.Body, "event: ") {
		w.Header().Set("Content-Type", "text/event-stream")
	}
	w.WriteHeader(rep.Status)
	_, _ = io.WriteString(w, rep.Body)
}

func (f *adminFakeAPI) requests() []adminRecorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]adminRecorded(nil), f.reqs...)
}

const adminTestToken = "tok-3f9c2a7e5b1d"

// adminTestSecondToken is a second admin of newAdminRealAPI (carol).
const adminTestSecondToken = "tok-second-admin-8d41"

// adminResult is what one CLI run produced.
type adminResult struct {
	code           int
	stdout, stderr string
}

// adminInvocation configures one CLI run against the fake API.
type adminInvocation struct {
	env      map[string]string // added to MAASFLOW_API_URL and the token
	stdin    string
	stdinTTY bool
	clock    *clockwork.FakeClock
	// advance, when set with clock, is how far the clock moves each time
	// the command waits on it.
	advance time.Duration
}

func (f *adminFakeAPI) run(t *testing.T, inv adminInvocation, args ...string) adminResult {
	t.Helper()
	env := map[string]string{envAdminAPIURL: f.srv.URL, envAdminToken: adminTestToken}
	for k, v := range inv.env {
		env[k] = v
	}
	return runAdminTest(t, env, inv, args...)
}

func runAdminTest(t *testing.T, env map[string]string, inv adminInvocation, args ...string) adminResult {
	t.Helper()
	var out, errb strings.Builder
	clk := inv.clock
	if clk == nil {
		clk = clockwork.NewFakeClockAt(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	}
	e := &cliEnv{
		stdout:   &out,
		stderr:   &errb,
		stdin:    strings.NewReader(inv.stdin),
		stdinTTY: inv.stdinTTY,
		getenv:   func(k string) string { return env[k] },
		clock:    clk,
		http:     &http.Client{},
	}
	if inv.advance == 0 && inv.clock == nil {
		// Nothing moves the fake clock: a wait would block for ever.
		inv.advance = time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if inv.advance > 0 {
		// Move the fake clock whenever the command waits on it, so polling
		// runs without real sleeps.
		go func() {
			for clk.BlockUntilContext(ctx, 1) == nil {
				clk.Advance(inv.advance)
			}
		}()
	}
	code := execute(ctx, e, args)
	return adminResult{code: code, stdout: out.String(), stderr: errb.String()}
}

// testEnv is an environment against api whose fake clock moves by a second
// whenever a command waits on it.
func testEnv(api *adminFakeAPI, stdout, stderr io.Writer) *cliEnv {
	clk := clockwork.NewFakeClockAt(time.Date(2026, 1, 1, 0, 0, 30, 0, time.UTC))
	go func() {
		for clk.BlockUntilContext(api.t.Context(), 1) == nil {
			clk.Advance(time.Second)
		}
	}()
	env := map[string]string{envAdminAPIURL: api.srv.URL, envAdminToken: adminTestToken}
	return &cliEnv{
		stdout: stdout, stderr: stderr, stdin: strings.NewReader(""),
		getenv: func(k string) string { return env[k] },
		clock:  clk, http: &http.Client{},
	}
}
