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
	// MaxConns bounds open connections in total: past it new connections
	// wait in the kernel's accept queue, holding no descriptor of ours.
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
// most perClient from one IP. The total bound waits before Accept, so
// connections past it stay in the kernel's queue rather than in this
// process; the per-client bound can only be known after Accept, so a
// connection past it is told 503 and closed at once.
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
}

func limitListener(ln net.Listener, l HTTPLimits) *connLimiter {
	return &connLimiter{
		Listener:  ln,
		slots:     make(chan struct{}, l.MaxConns),
		perClient: l.MaxConnsPerClient,
		done:      make(chan struct{}),
		byIP:      map[string]int{},
	}
}

// overloaded is written to a connection refused for its client's bound.
var overloaded = func() []byte {
	const body = `{"error":{"code":"service_unavailable","message":"too many connections from this client; retry later"}}`
	return []byte("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n" +
		"Connection: close\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body)
}()

func (c *connLimiter) Accept() (net.Conn, error) {
	for {
		select {
		case c.slots <- struct{}{}:
		case <-c.done:
			return nil, net.ErrClosed
		}
		conn, err := c.Listener.Accept()
		if err != nil {
			<-c.slots
			return nil, err
		}
		ip := clientIP(conn)
		c.mu.Lock()
		over := c.byIP[ip] >= c.perClient
		if !over {
			c.byIP[ip]++
		}
		c.mu.Unlock()
		if over {
			c.refuse.Add(1)
			_ = conn.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
			_, _ = conn.Write(overloaded)
			_ = conn.Close()
			<-c.slots
			continue
		}
		c.open.Add(1)
		c.accepted.Add(1)
		return &limitedConn{Conn: conn, release: func() { c.release(ip) }}, nil
	}
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

// Refused is the number of connections closed for their client's bound.
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
