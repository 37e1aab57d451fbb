package connector

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Link is the connector's side of a transport: it receives the site's
// requests and sends replies and heartbeats. Only outbound connections.
type Link interface {
	// Receive waits (long poll) for requests and returns those that came,
	// possibly none.
	Receive(ctx context.Context) ([]Delivery, error)
	Reply(ctx context.Context, resp Response) error
	Heartbeat(ctx context.Context, hb Heartbeat) error
}

// Delivery is one received request. Ack removes it from the transport
// once it is answered (SQS DeleteMessage); until then it may come again.
type Delivery struct {
	Request Request
	Ack     func(ctx context.Context) error
}

// Signer signs a MAAS request with the site's API key (maas.Signer), for
// sites whose key stays with the connector.
type Signer func(r *http.Request)

// MaxReplyBody bounds the body a connector relays: a DynamoDB item holds
// 400 KB, and MAAS answers for one machine are a few KB.
const MaxReplyBody = 300 << 10

// Runner is `maasflow connector`: it runs the requests its Link receives
// against the site's MAAS and replies, and reports a heartbeat.
type Runner struct {
	Link Link
	Site string
	// MAASURL is the site's MAAS region as the connector reaches it
	// (http://localhost:5240/MAAS).
	MAASURL string
	// Sign, when set, signs MAAS requests that arrive unsigned: the API key
	// stays with the connector.
	Sign Signer
	// HTTP sends the requests (nil: a client without timeout; the request
	// deadline bounds each call).
	HTTP *http.Client
	// Journal remembers the mutations run (required).
	Journal *Journal
	Version string
	// Workers run requests in parallel (default 16).
	Workers int
	Logger  *slog.Logger
	Now     func() time.Time

	apiRoot   string
	reachable atomic.Bool
	started   time.Time
}

// Run receives and runs requests until ctx ends. It returns nil when ctx
// ends, or the error that stopped it.
func (r *Runner) Run(ctx context.Context) error {
	if err := r.init(); err != nil {
		return err
	}
	work := make(chan Delivery)
	var wg sync.WaitGroup
	for range r.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for d := range work {
				r.handle(ctx, d)
			}
		}()
	}
	// The first heartbeat goes out before the first request is taken, so a
	// probe answered through the connector also sees its version.
	r.beat(ctx)
	wg.Add(1)
	go func() {
		defer wg.Done()
		r.heartbeats(ctx)
	}()
	defer func() {
		close(work)
		wg.Wait()
	}()
	backoff := time.Second
	for ctx.Err() == nil {
		ds, err := r.Link.Receive(ctx)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			r.Logger.Warn("receive failed; retrying", "error", err.Error(), "in", backoff.String())
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, 30*time.Second)
			continue
		}
		backoff = time.Second
		for _, d := range ds {
			select {
			case work <- d:
			case <-ctx.Done():
			}
		}
	}
	return nil
}

func (r *Runner) init() error {
	if r.Link == nil || r.Journal == nil || r.Site == "" {
		return errors.New("connector: a link, a journal and the site are required")
	}
	u, err := url.Parse(r.MAASURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("connector: MAAS URL %q: want http(s)://host[:port]/MAAS", r.MAASURL)
	}
	path := strings.TrimRight(u.Path, "/")
	if !strings.HasSuffix(path, "/api/2.0") {
		path += "/api/2.0"
	}
	u.Path, u.RawQuery, u.Fragment = path+"/", "", ""
	r.apiRoot = u.String()
	if r.Workers <= 0 {
		r.Workers = 16
	}
	if r.HTTP == nil {
		r.HTTP = &http.Client{}
	}
	// A redirect means a wrong MAAS URL and would turn a POST into a GET.
	hc := *r.HTTP
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	r.HTTP = &hc
	if r.Logger == nil {
		r.Logger = slog.New(slog.DiscardHandler)
	}
	if r.Now == nil {
		r.Now = time.Now
	}
	r.started = r.Now()
	return nil
}

func (r *Runner) heartbeats(ctx context.Context) {
	t := time.NewTicker(HeartbeatEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		r.beat(ctx)
	}
}

// beat sends one heartbeat.
func (r *Runner) beat(ctx context.Context) {
	host, _ := os.Hostname()
	hb := Heartbeat{Site: r.Site, Version: r.Version, Hostname: host, StartedAt: r.started, At: r.Now(), MAASReachable: r.reachable.Load()}
	hctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := r.Link.Heartbeat(hctx, hb); err != nil && ctx.Err() == nil {
		r.Logger.Warn("heartbeat failed", "error", err.Error())
	}
}

// handle answers one delivery: refuse, replay a recorded reply, run.
func (r *Runner) handle(ctx context.Context, d Delivery) {
	req := d.Request
	log := r.Logger.With("request_id", req.ID, "kind", req.Kind, "method", req.Method)
	start := time.Now()
	resp, send := r.answer(ctx, req, log)
	if log.Enabled(ctx, slog.LevelDebug) {
		attrs := []any{"path", redact(req.URL), "status", resp.Status, "duration", time.Since(start).String()}
		if resp.Error != nil {
			attrs = append(attrs, "failure", resp.Error.Kind)
		}
		log.Debug("request relayed", attrs...)
	}
	if send {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		err := r.Link.Reply(rctx, resp)
		cancel()
		if err != nil {
			// Not acked: the transport delivers it again and the journal
			// answers a mutation from its record.
			log.Warn("reply failed", "error", err.Error())
			return
		}
	}
	if d.Ack != nil {
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		if err := d.Ack(actx); err != nil {
			log.Warn("ack failed", "error", err.Error())
		}
		cancel()
	}
}

// answer returns the reply to req and whether to send it.
func (r *Runner) answer(ctx context.Context, req Request, log *slog.Logger) (Response, bool) {
	fail := func(kind, msg string) (Response, bool) {
		return Response{ID: req.ID, Error: &Failure{Kind: kind, Message: msg}}, true
	}
	if req.Site != r.Site {
		log.Warn("refused a request for another site", "for_site", req.Site)
		return fail(FailRefused, "this connector serves site "+r.Site)
	}
	target, err := r.target(req)
	if err != nil {
		return fail(FailRefused, err.Error())
	}
	if !req.Mutation() {
		if !r.Now().Before(req.Deadline) {
			return fail(FailExpired, "arrived after its deadline; not run")
		}
		return r.run(ctx, req, target), true
	}
	state, recorded, err := r.Journal.Begin(req.ID)
	if err != nil {
		// Without the record it cannot promise to run it once: do not run.
		log.Error("journal failed; mutation not run", "error", err.Error())
		return fail(FailUnknownOutcome, "the connector could not record the request; not run")
	}
	switch state {
	case BeginDone:
		log.Info("mutation delivered again; answering from the journal")
		return recorded, true
	case BeginRunning:
		// The copy being run replies.
		return Response{}, false
	case BeginInterrupted:
		log.Warn("mutation begun by an earlier run of the connector; not run again")
		return fail(FailUnknownOutcome, "an earlier run of the connector began this request and stopped; not run again")
	}
	if !r.Now().Before(req.Deadline) {
		resp, _ := fail(FailExpired, "arrived after its deadline; not run")
		_ = r.Journal.Finish(req.ID, resp)
		return resp, true
	}
	resp := r.run(ctx, req, target)
	if err := r.Journal.Finish(req.ID, resp); err != nil {
		log.Error("journal failed after the mutation ran", "error", err.Error())
	}
	return resp, true
}

// target is the URL a request may reach: under the MAAS API root for a
// MAAS call, any http(s) URL for a GET fetch.
func (r *Runner) target(req Request) (string, error) {
	switch req.Kind {
	case KindMAAS:
		if strings.HasPrefix(req.URL, "/") || strings.Contains(req.URL, "://") || strings.Contains(req.URL, "..") {
			return "", errors.New("a MAAS request URL must be relative to the API root")
		}
		return r.apiRoot + req.URL, nil
	case KindFetch:
		u, err := url.Parse(req.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			return "", errors.New("a fetch needs an http(s) URL without user info")
		}
		if req.Method != http.MethodGet {
			return "", errors.New("a fetch is a GET")
		}
		return req.URL, nil
	default:
		return "", fmt.Errorf("unknown request kind %q", req.Kind)
	}
}

// run sends req to target before its deadline.
func (r *Runner) run(ctx context.Context, req Request, target string) Response {
	ctx, cancel := context.WithDeadline(ctx, req.Deadline)
	defer cancel()
	var body io.Reader
	if req.Body != nil {
		body = bytes.NewReader(req.Body)
	}
	hr, err := http.NewRequestWithContext(ctx, req.Method, target, body)
	if err != nil {
		return Response{ID: req.ID, Error: &Failure{Kind: FailRefused, Message: "cannot build the request"}}
	}
	for k, v := range req.Header {
		hr.Header.Set(k, v)
	}
	if req.Kind == KindMAAS && hr.Header.Get("Authorization") == "" && r.Sign != nil {
		r.Sign(hr)
	}
	if req.Kind == KindFetch {
		hr.Header.Del("Authorization")
	}
	resp, err := r.HTTP.Do(hr)
	if err != nil {
		return Response{ID: req.ID, Error: r.transportFailure(ctx, err, target)}
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxReplyBody+1))
	if err != nil {
		return Response{ID: req.ID, Error: r.transportFailure(ctx, err, target)}
	}
	if req.Kind == KindMAAS {
		r.reachable.Store(true)
	}
	if len(data) > MaxReplyBody {
		return Response{ID: req.ID, Error: &Failure{Kind: FailTooLarge,
			Message: fmt.Sprintf("the answer of %s is larger than %d bytes", redact(target), MaxReplyBody)}}
	}
	out := Response{ID: req.ID, Status: resp.StatusCode, Body: data}
	for _, k := range []string{"Content-Type", "Retry-After", "Location"} {
		if v := resp.Header.Get(k); v != "" {
			if out.Header == nil {
				out.Header = map[string]string{}
			}
			out.Header[k] = v
		}
	}
	return out
}

func (r *Runner) transportFailure(ctx context.Context, err error, target string) *Failure {
	var ne net.Error
	if ctx.Err() != nil || (errors.As(err, &ne) && ne.Timeout()) {
		return &Failure{Kind: FailTimeout, Message: redact(target) + " did not answer before the deadline"}
	}
	if strings.HasPrefix(target, r.apiRoot) {
		r.reachable.Store(false)
	}
	return &Failure{Kind: FailUnreachable, Message: redact(target) + " is unreachable from the connector"}
}

// redact drops a URL's query (which may carry a signature).
func redact(u string) string {
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		return u[:i]
	}
	return u
}
