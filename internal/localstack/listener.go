package localstack

import (
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// HTTPLimits bound what clients can hold of the API server; zero fields
// take the defaults of DefaultHTTPLimits.
type HTTPLimits struct {
	// ReadHeaderTimeout bounds the request line and headers (slow headers).
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds the whole request, body included.
	ReadTimeout time.Duration
	// WriteTimeout bounds handling plus the answer; it exceeds the API's
	// longest call (a site probe, 15 s).
	WriteTimeout time.Duration
	// IdleTimeout closes a keep-alive connection with no request.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds the request line and headers.
	MaxHeaderBytes int
	// MaxConns bounds open connections in total: past it a new connection
	// is answered 503 with Retry-After and closed at once, never left
	// waiting in the kernel's accept queue.
	MaxConns int
	// MaxConnsPerClient bounds open connections per client IP: past it a
	// new connection is answered 503 and closed at once.
	MaxConnsPerClient int
}

// DefaultHTTPLimits are the API server's limits in local mode.
var DefaultHTTPLimits = HTTPLimits{
	ReadHeaderTimeout: 10 * time.Second,
	ReadTimeout:       30 * time.Second,
	WriteTimeout:      60 * time.Second,
	IdleTimeout:       60 * time.Second,
	MaxHeaderBytes:    64 << 10,
	MaxConns:          512,
	MaxConnsPerClient: 64,
}

func (l HTTPLimits) withDefaults() HTTPLimits {
	d := DefaultHTTPLimits
	pick := func(v, def time.Duration) time.Duration {
		if v > 0 {
			return v
		}
		return def
	}
	l.ReadHeaderTimeout = pick(l.ReadHeaderTimeout, d.ReadHeaderTimeout)
	l.ReadTimeout = pick(l.ReadTimeout, d.ReadTimeout)
	l.WriteTimeout = pick(l.WriteTimeout, d.WriteTimeout)
	l.IdleTimeout = pick(l.IdleTimeout, d.IdleTimeout)
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = d.MaxHeaderBytes
	}
	if l.MaxConns <= 0 {
		l.MaxConns = d.MaxConns
	}
	if l.MaxConnsPerClient <= 0 {
		l.MaxConnsPerClient = d.MaxConnsPerClient
	}
	return l
}

// newServer is an http.Server with the limits' timeouts.
func (l HTTPLimits) newServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		ReadTimeout:       l.ReadTimeout,
		WriteTimeout:      l.WriteTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    l.MaxHeaderBytes,
	}
}

// connLimiter is a listener that holds at most max connections open, and at
// most perClient from one IP. A connection past either bound is accepted and
// answered 503 with Retry-After at once, then closed: a client is never left
// waiting for an answer that will not come (a connection parked in the
// kernel's accept queue looks to its client like a hung server).
type connLimiter struct {
	net.Listener
	slots     chan struct{}
	perClient int
	done      chan struct{}
	closeOnce sync.Once

	mu       sync.Mutex
	byIP     map[string]int
	open     atomic.Int64
	accepted atomic.Int64
	refuse   atomic.Int64
	// refusing counts refusals being written, which hold no slot; past
	// maxRefusing a connection is closed without the 503.
	refusing atomic.Int64
}

// maxRefusing bounds the goroutines writing refusals at once, so a flood of
// connections cannot make the refusals themselves a cost without bound.
const maxRefusing = 1024

func limitListener(ln net.Listener, l HTTPLimits) *connLimiter {
	return &connLimiter{
		Listener:  ln,
		slots:     make(chan struct{}, l.MaxConns),
		perClient: l.MaxConnsPerClient,
		done:      make(chan struct{}),
		byIP:      map[string]int{},
	}
}

// overloaded is written to a connection refused for a bound.
var overloaded = func() []byte {
	const body = `{"error":{"code":"service_unavailable","message":"too many connections; retry later"}}`
	return []byte("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n" +
		"Connection: close\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body)
}()

func (c *connLimiter) Accept() (net.Conn, error) {
	for {
		select {
		case <-c.done:
			return nil, net.ErrClosed
		default:
		}
		conn, err := c.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case c.slots <- struct{}{}:
		default:
			c.refuseConn(conn)
			continue
		}
		ip := clientIP(conn)
		c.mu.Lock()
		over := c.byIP[ip] >= c.perClient
		if !over {
			c.byIP[ip]++
		}
		c.mu.Unlock()
		if over {
			<-c.slots
			c.refuseConn(conn)
			continue
		}
		c.open.Add(1)
		c.accepted.Add(1)
		return &limitedConn{Conn: conn, release: func() { c.release(ip) }}, nil
	}
}

// refuseConn answers conn 503 off the accept loop and closes it. It first
// reads what the client sent (briefly), so that closing does not reset the
// connection before the client has read the answer.
func (c *connLimiter) refuseConn(conn net.Conn) {
	c.refuse.Add(1)
	if c.refusing.Add(1) > maxRefusing {
		c.refusing.Add(-1)
		_ = conn.Close()
		return
	}
	go func() {
		defer c.refusing.Add(-1)
		_ = conn.SetDeadline(time.Now().Add(100 * time.Millisecond))
		buf := make([]byte, 4<<10)
		_, _ = conn.Read(buf)
		_, _ = conn.Write(overloaded)
		_ = conn.Close()
	}()
}

func (c *connLimiter) release(ip string) {
	c.mu.Lock()
	if c.byIP[ip]--; c.byIP[ip] <= 0 {
		delete(c.byIP, ip)
	}
	c.mu.Unlock()
	c.open.Add(-1)
	<-c.slots
}

func (c *connLimiter) Close() error {
	c.closeOnce.Do(func() { close(c.done) })
	return c.Listener.Close()
}

// Open is the number of connections accepted and not yet closed.
func (c *connLimiter) Open() int64 { return c.open.Load() }

// Accepted is the number of connections handed to the server so far.
func (c *connLimiter) Accepted() int64 { return c.accepted.Load() }

// Refused is the number of connections refused for a bound.
func (c *connLimiter) Refused() int64 { return c.refuse.Load() }

func clientIP(conn net.Conn) string {
	if a, ok := conn.RemoteAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	host, _, err := net.SplitHostPort(conn.RemoteAddr().String())
	if err != nil {
		return conn.RemoteAddr().String()
	}
	return host
}

// limitedConn gives its slot back once, on the first Close.
type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// RefusedConnections is how many connections the API listener refused for
// a bound so far.
func (s *Stack) RefusedConnections() int64 {
	if s.apiListener == nil {
		return 0
	}
	return s.apiListener.Refused()
}
