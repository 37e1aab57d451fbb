package connector

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Paths of the local transport, served on the local API listener.
const (
	LocalRequestsPath  = "/_connector/v1/requests"
	LocalRepliesPath   = "/_connector/v1/replies"
	LocalHeartbeatPath = "/_connector/v1/heartbeat"
)

// SiteHeader is the header in which a connector names the site it serves
// (its --site); the broker refuses a token of any other site.
const SiteHeader = "X-Maasflow-Connector-Site"

// maxLocalWait bounds one long poll, as SQS's WaitTimeSeconds does.
const maxLocalWait = 20 * time.Second

// receiveBatch is how many requests one poll returns at most (SQS's
// MaxNumberOfMessages).
const receiveBatch = 10

// Broker is the local transport: a per-site queue in memory, served to
// connectors as an HTTP long-poll endpoint (Handler), and the Relay and
// StatusReader of the local control plane. A connector authenticates with
// its site's token (Tokens), which names the site and is valid for no
// other, expires, and is replaced by a rotation; it must name the same site
// in SiteHeader, and the site must be enabled (SiteActive). Requests are
// delivered once; one whose caller gave up is withdrawn from the queue.
type Broker struct {
	tokens *Tokens
	now    func() time.Time
	// SiteActive, when set, is asked on every call whether the token's
	// site is still in service; a disabled or deleted site's connector is
	// refused (403). Set it before serving.
	SiteActive func(ctx context.Context, site string) (bool, error)

	mu      sync.Mutex
	queues  map[string]*siteQueue
	waiting map[string]waiter
	beats   map[string]Heartbeat
	// closed ends every long poll (Close), so a server can shut down
	// without waiting for them.
	closed    chan struct{}
	closeOnce sync.Once
}

type siteQueue struct {
	pending []Request
	// ready is closed (and replaced) when a request is queued.
	ready chan struct{}
}

type waiter struct {
	site  string
	reply chan Response
}

var (
	_ Relay        = (*Broker)(nil)
	_ StatusReader = (*Broker)(nil)
)

// NewBroker returns a broker whose site tokens are keyed by key, with the
// default lifetimes and generations kept in memory only.
func NewBroker(key []byte, now func() time.Time) *Broker {
	tokens, _ := OpenTokens(key, "", 0, 0, now) // no file: cannot fail
	return NewBrokerWith(tokens, now)
}

// NewBrokerWith returns a broker that checks connector tokens with tokens.
func NewBrokerWith(tokens *Tokens, now func() time.Time) *Broker {
	if now == nil {
		now = time.Now
	}
	return &Broker{tokens: tokens, now: now, queues: map[string]*siteQueue{}, waiting: map[string]waiter{}, beats: map[string]Heartbeat{},
		closed: make(chan struct{})}
}

// Close ends the long polls in progress and refuses new ones.
func (b *Broker) Close() {
	b.closeOnce.Do(func() { close(b.closed) })
}

// Token issues a credential for site's connector (Tokens.Issue).
func (b *Broker) Token(site string) string {
	tok, _ := b.tokens.Issue(site)
	return tok
}

// Tokens is the broker's token issuer (issue, rotate).
func (b *Broker) Tokens() *Tokens { return b.tokens }

// site returns the site a request's bearer token authenticates, or the
// status and reason it is refused with.
func (b *Broker) site(r *http.Request) (string, int, string) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return "", http.StatusUnauthorized, "a site connector token is required"
	}
	site, err := b.tokens.Site(tok)
	if err != nil {
		return "", http.StatusUnauthorized, err.Error()
	}
	switch declared := r.Header.Get(SiteHeader); {
	case declared == "":
		return "", http.StatusBadRequest, "the connector must name the site it serves in " + SiteHeader
	case declared != site:
		// A connector started with another site's token: refused, so it
		// can neither drain that site's queue nor speak for it.
		return "", http.StatusForbidden, "the connector token is for another site than " + declared
	}
	if b.SiteActive != nil {
		active, err := b.SiteActive(r.Context(), site)
		switch {
		case err != nil:
			return "", http.StatusServiceUnavailable, "cannot read the site; retry later"
		case !active:
			return "", http.StatusForbidden, "site " + site + " is disabled or gone; its connector is refused"
		}
	}
	return site, 0, ""
}

func (b *Broker) queue(site string) *siteQueue {
	q := b.queues[site]
	if q == nil {
		q = &siteQueue{ready: make(chan struct{})}
		b.queues[site] = q
	}
	return q
}

// Do queues req for its site's connector and waits for the reply.
func (b *Broker) Do(ctx context.Context, req Request) (Response, error) {
	ch := make(chan Response, 1)
	b.mu.Lock()
	if _, dup := b.waiting[req.ID]; dup {
		b.mu.Unlock()
		return Response{}, &RelayError{Site: req.Site, Message: "request id " + req.ID + " is already waiting"}
	}
	b.waiting[req.ID] = waiter{site: req.Site, reply: ch}
	q := b.queue(req.Site)
	q.pending = append(q.pending, req)
	close(q.ready)
	q.ready = make(chan struct{})
	b.mu.Unlock()

	select {
	case resp := <-ch:
		return resp, nil
	case <-ctx.Done():
		b.mu.Lock()
		delete(b.waiting, req.ID)
		q := b.queue(req.Site)
		for i, p := range q.pending {
			if p.ID == req.ID {
				q.pending = append(q.pending[:i], q.pending[i+1:]...)
				break
			}
		}
		b.mu.Unlock()
		return Response{}, fmt.Errorf("%w: %w", ErrNoReply, ctx.Err())
	}
}

// LastHeartbeat returns the site's last heartbeat.
func (b *Broker) LastHeartbeat(_ context.Context, site string) (Heartbeat, bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	hb, ok := b.beats[site]
	return hb, ok, nil
}

// receive waits up to wait for the site's requests.
func (b *Broker) receive(ctx context.Context, site string, wait time.Duration) []Request {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		b.mu.Lock()
		q := b.queue(site)
		now := b.now()
		var out []Request
		keep := q.pending[:0]
		for _, r := range q.pending {
			switch {
			case !now.Before(r.Deadline):
				// Its caller has given up or is about to: never deliver it.
			case len(out) < receiveBatch:
				out = append(out, r)
			default:
				keep = append(keep, r)
			}
		}
		q.pending = keep
		ready := q.ready
		b.mu.Unlock()
		if len(out) > 0 {
			return out
		}
		select {
		case <-ready:
		case <-timer.C:
			return nil
		case <-ctx.Done():
			return nil
		case <-b.closed:
			return nil
		}
	}
}

// Handler serves the connector endpoint.
func (b *Broker) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+LocalRequestsPath, b.authed(func(w http.ResponseWriter, r *http.Request, site string) {
		wait := maxLocalWait
		if s := r.URL.Query().Get("wait"); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 {
				http.Error(w, "wait: want seconds", http.StatusBadRequest)
				return
			}
			wait = min(time.Duration(n)*time.Second, maxLocalWait)
		}
		reqs := b.receive(r.Context(), site, wait)
		if reqs == nil {
			reqs = []Request{}
		}
		writeJSON(w, reqs)
	}))
	mux.HandleFunc("POST "+LocalRepliesPath, b.authed(func(w http.ResponseWriter, r *http.Request, site string) {
		var resp Response
		if err := json.NewDecoder(io.LimitReader(r.Body, 2<<20)).Decode(&resp); err != nil || resp.ID == "" {
			http.Error(w, "body: want a reply with an id", http.StatusBadRequest)
			return
		}
		b.mu.Lock()
		wt, ok := b.waiting[resp.ID]
		if ok && wt.site == site {
			delete(b.waiting, resp.ID)
		}
		b.mu.Unlock()
		switch {
		case !ok:
			// The caller gave up, or this is a repeated reply.
			w.WriteHeader(http.StatusAccepted)
		case wt.site != site:
			http.Error(w, "the request belongs to another site", http.StatusForbidden)
		default:
			wt.reply <- resp
			w.WriteHeader(http.StatusNoContent)
		}
	}))
	mux.HandleFunc("POST "+LocalHeartbeatPath, b.authed(func(w http.ResponseWriter, r *http.Request, site string) {
		var hb Heartbeat
		if err := json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(&hb); err != nil {
			http.Error(w, "body: want a heartbeat", http.StatusBadRequest)
			return
		}
		hb.Site = site
		// The broker's clock, not the connector's: a skewed site clock
		// must not make a dead connector look alive.
		hb.At = b.now()
		b.mu.Lock()
		b.beats[site] = hb
		b.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	return mux
}

func (b *Broker) authed(h func(http.ResponseWriter, *http.Request, string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		site, status, reason := b.site(r)
		if status != 0 {
			http.Error(w, reason, status)
			return
		}
		h(w, r, site)
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// HTTPLink is the connector's side of the local transport.
type HTTPLink struct {
	// Endpoint is the local API's base URL (http://127.0.0.1:8080).
	Endpoint string
	// Token is the site's connector token.
	Token string
	// Site is the site this connector serves, sent in SiteHeader: the
	// broker refuses a token of another site.
	Site string
	HTTP *http.Client
	// Wait is the long-poll duration (default 20 s).
	Wait time.Duration
}

var _ Link = (*HTTPLink)(nil)

// Receive long-polls for requests.
func (l *HTTPLink) Receive(ctx context.Context) ([]Delivery, error) {
	wait := l.Wait
	if wait <= 0 {
		wait = maxLocalWait
	}
	var reqs []Request
	url := strings.TrimRight(l.Endpoint, "/") + LocalRequestsPath + "?wait=" + strconv.Itoa(int(wait/time.Second))
	if err := l.call(ctx, http.MethodGet, url, nil, &reqs); err != nil {
		return nil, err
	}
	out := make([]Delivery, len(reqs))
	for i, r := range reqs {
		out[i] = Delivery{Request: r}
	}
	return out, nil
}

// Reply posts a reply.
func (l *HTTPLink) Reply(ctx context.Context, resp Response) error {
	return l.call(ctx, http.MethodPost, strings.TrimRight(l.Endpoint, "/")+LocalRepliesPath, resp, nil)
}

// Heartbeat posts a heartbeat.
func (l *HTTPLink) Heartbeat(ctx context.Context, hb Heartbeat) error {
	return l.call(ctx, http.MethodPost, strings.TrimRight(l.Endpoint, "/")+LocalHeartbeatPath, hb, nil)
}

func (l *HTTPLink) call(ctx context.Context, method, url string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+l.Token)
	req.Header.Set(SiteHeader, l.Site)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	hc := l.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode >= 300 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("%s %s: %d %s", method, LocalPathOf(url), resp.StatusCode, strings.TrimSpace(string(msg)))
	}
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return errors.New("the endpoint's answer is not the expected JSON")
	}
	return nil
}

// LocalPathOf returns the path of url for messages.
func LocalPathOf(url string) string {
	if i := strings.Index(url, "/_connector/"); i >= 0 {
		return redact(url[i:])
	}
	return redact(url)
}
