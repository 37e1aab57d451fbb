package localstack

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// openFDs counts this process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("this test counts descriptors in /proc/self/fd: %v", err)
		}
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(ents)
}

// eventually polls cond until it holds or the wall-clock bound passes; the
// bound is a safety net, not a speed assertion.
func eventually(t *testing.T, bound time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, bound)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSlowConnectionsDoNotPinDescriptors: 2,000 real loopback connections
// that send half a request line and stop. The API server keeps at most
// MaxConnsPerClient of them, answers the rest 503 at once, serves another
// client meanwhile, and drops the slow ones at ReadHeaderTimeout.
func TestSlowConnectionsDoNotPinDescriptors(t *testing.T) {
	const (
		slow      = 2000
		perClient = 16
	)
	st, err := Start(t.Context(), Config{
		Listen: "127.0.0.1:0", SimListen: "127.0.0.1:0", TimeScale: 1, DataDir: t.TempDir(),
		HTTP: HTTPLimits{ReadHeaderTimeout: 5 * time.Second, MaxConns: 64, MaxConnsPerClient: perClient},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	addr := strings.TrimPrefix(st.APIURL, "http://")

	before := openFDs(t)
	conns := make([]net.Conn, 0, slow)
	t.Cleanup(func() {
		for _, c := range conns {
			_ = c.Close()
		}
	})
	d := net.Dialer{Timeout: 5 * time.Second}
	for range slow {
		c, err := d.DialContext(t.Context(), "tcp", addr)
		require.NoError(t, err)
		conns = append(conns, c)
		_, err = c.Write([]byte("GET /api/v1/healthz HTTP/1.1\r\nHost: x\r\n"))
		require.NoError(t, err)
	}
	// Every connection was either handed to the server (at most perClient
	// at a time; a slow one is dropped at ReadHeaderTimeout, which may free
	// a place while we dial on a loaded machine) or refused at once.
	eventually(t, 60*time.Second, "the server takes or refuses every connection", func() bool {
		return st.apiListener.Refused()+st.apiListener.Accepted() >= slow
	})
	assert.LessOrEqual(t, st.apiListener.Open(), int64(perClient))
	assert.GreaterOrEqual(t, st.apiListener.Refused(), int64(slow/2), "most are refused at once")
	// Our own 2,000 client ends plus the server's few; without the bound
	// the server would hold one descriptor per connection as well.
	assert.Less(t, openFDs(t)-before, slow+perClient+32)

	// A refused connection is told why (the last one dialled is refused
	// unless a place had just been freed).
	_ = conns[slow-1].SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(conns[slow-1]).ReadString('\n')
	if err == nil || st.apiListener.Refused() == slow-perClient {
		require.NoError(t, err)
		assert.Equal(t, "HTTP/1.1 503 Service Unavailable\r\n", line)
	}

	// Another client is served meanwhile.
	other := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}).DialContext,
	}}
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, st.APIURL+"/api/v1/healthz", nil)
	require.NoError(t, err)
	resp, err := other.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	other.CloseIdleConnections()

	// The slow ones are dropped once their headers are overdue.
	eventually(t, 20*time.Second, "slow connections are dropped at ReadHeaderTimeout", func() bool {
		return st.apiListener.Open() == 0
	})
}

func TestHTTPLimitsDefaults(t *testing.T) {
	l := HTTPLimits{MaxConnsPerClient: 3}.withDefaults()
	assert.Equal(t, 3, l.MaxConnsPerClient)
	assert.Equal(t, DefaultHTTPLimits.MaxConns, l.MaxConns)
	srv := l.newServer(http.NotFoundHandler())
	for name, v := range map[string]time.Duration{
		"ReadHeaderTimeout": srv.ReadHeaderTimeout, "ReadTimeout": srv.ReadTimeout,
		"WriteTimeout": srv.WriteTimeout, "IdleTimeout": srv.IdleTimeout,
	} {
		assert.Positive(t, v, name)
	}
	assert.Greater(t, srv.WriteTimeout, 15*time.Second, "longer than the API's probe timeout")
	assert.Positive(t, srv.MaxHeaderBytes)
}

// TestRefusalsAreMetrics: refused requests are counted on GET /metrics,
// since they are not audited one by one.
func TestRefusalsAreMetrics(t *testing.T) {
	st, err := Start(t.Context(), Config{Listen: "127.0.0.1:0", SimListen: "127.0.0.1:0", TimeScale: 1, DataDir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	get := func(path, token string) (int, string) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, st.APIURL+path, nil)
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		var b strings.Builder
		_, err = bufio.NewReader(resp.Body).WriteTo(&b)
		require.NoError(t, err)
		return resp.StatusCode, b.String()
	}
	for range 3 {
		status, _ := get("/api/v1/admin/skus", "wrong")
		require.Equal(t, http.StatusUnauthorized, status)
	}
	status, body := get("/metrics", st.AdminToken)
	require.Equal(t, http.StatusOK, status, body)
	assert.Contains(t, body, `maasflow_api_refused_requests_total{code="unauthorized"} 3`)
	assert.Contains(t, body, "maasflow_api_refused_connections_total 0")
}

// TestConnectionsPastABoundAreRefusedNotParked: with the shipped limits
// held (every per-client place of one address, then every place in total),
// a further connection is answered 503 with Retry-After, never left waiting
// in the accept queue for an answer that does not come. It counts answers;
// the read deadline only keeps a broken listener from hanging the test.
func TestConnectionsPastABoundAreRefusedNotParked(t *testing.T) {
	st, err := Start(t.Context(), Config{Listen: "127.0.0.1:0", SimListen: "127.0.0.1:0", TimeScale: 1, DataDir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	addr := strings.TrimPrefix(st.APIURL, "http://")
	lim := DefaultHTTPLimits
	var held []net.Conn
	t.Cleanup(func() {
		for _, c := range held {
			_ = c.Close()
		}
	})
	dialFrom := func(ip net.IP) net.Conn {
		d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: ip}}
		c, err := d.DialContext(t.Context(), "tcp", addr)
		require.NoError(t, err)
		return c
	}
	hold := func(ip net.IP, n int) {
		for range n {
			held = append(held, dialFrom(ip))
		}
	}
	// refused sends a request on a fresh connection from ip and reports
	// whether it was answered 503 with Retry-After.
	refused := func(ip net.IP) bool {
		c := dialFrom(ip)
		defer func() { _ = c.Close() }()
		_, _ = c.Write([]byte("POST /api/v1/nodes/n1/enroll HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"))
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Logf("no answer: %v", err)
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") != ""
	}

	one := net.IPv4(127, 0, 3, 1)
	hold(one, lim.MaxConnsPerClient)
	eventually(t, 30*time.Second, "the held connections are accepted", func() bool {
		return st.apiListener.Open() == int64(lim.MaxConnsPerClient)
	})
	for range 10 {
		assert.True(t, refused(one), "past the per-client bound: refused at once")
	}

	// Fill the total bound from other addresses, each within its own bound.
	for i := 0; len(held) < lim.MaxConns; i++ {
		hold(net.IPv4(127, 0, 4, byte(i+1)), min(lim.MaxConnsPerClient, lim.MaxConns-len(held)))
	}
	eventually(t, 30*time.Second, "every place in total is taken", func() bool {
		return st.apiListener.Open() == int64(lim.MaxConns)
	})
	for i := range 10 {
		assert.True(t, refused(net.IPv4(127, 0, 5, byte(i+1))), "past the total bound: refused at once")
	}
	assert.GreaterOrEqual(t, st.apiListener.Refused(), int64(20))
}
