// Package lokipush sends log records to Grafana Loki's push API
// (POST /loki/api/v1/push, the JSON body Loki documents): an slog.Handler
// beside the log file's, for `maasflow local --loki-url`.
//
// Streams are labelled only with values of low cardinality, as Loki wants
// its index small: service_name, level and site (the site id, a handful per
// deployment). The correlation fields (onboarding, node, MAAS system id,
// hostname, correlation id, and the site again) travel as structured
// metadata on each line, queryable without being labels. The line is the
// record as the log file's JSON handler writes it.
//
// Logging never waits for Loki: records go to a bounded queue that a
// goroutine sends in batches; when the queue is full, or Loki keeps
// refusing a batch, the records are dropped and counted (Dropped).
package lokipush

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/maasflow/maasflow/shared/logfield"
)

// PushPath is Loki's push endpoint under its base URL.
const PushPath = "/loki/api/v1/push"

// Defaults of a Pusher.
const (
	DefaultBatchSize     = 500
	DefaultFlushInterval = time.Second
	DefaultQueue         = 10000
	// attempts is how many times a batch is sent before it is dropped.
	attempts = 3
)

// metadataKeys are the correlation fields sent as structured metadata.
var metadataKeys = []string{logfield.SiteID, logfield.OnboardingID, logfield.NodeID, logfield.MAASSystemID,
	logfield.Hostname, logfield.CorrelationID}

// Config tunes a Pusher; zero values take the defaults.
type Config struct {
	// URL is Loki's base URL (http://loki:3100); PushPath is appended.
	URL string
	// Service is the service_name label (default "maasflow").
	Service string
	// Client sends the batches (default: a client with a 10 s timeout).
	Client        *http.Client
	BatchSize     int
	FlushInterval time.Duration
	Queue         int
	// TenantID, when set, is sent as X-Scope-OrgID (multi-tenant Loki).
	TenantID string
}

// Pusher batches entries and sends them to Loki.
type Pusher struct {
	cfg     Config
	push    string
	shown   string
	queue   chan entry
	done    chan struct{}
	stop    chan struct{}
	once    sync.Once
	dropped atomic.Int64
	sent    atomic.Int64
}

// entry is one log line with its labels and metadata.
type entry struct {
	at       time.Time
	level    string
	site     string
	line     string
	metadata map[string]string
}

// New starts a Pusher; Close flushes and stops it.
func New(cfg Config) (*Pusher, error) {
	// The URL may carry basic-auth credentials (a hosted Loki's user and
	// API key, which net/http sends as Authorization): no message shows
	// them, and a URL that does not parse is not echoed at all.
	u, err := url.Parse(cfg.URL)
	if err != nil {
		return nil, errors.New("loki URL: does not parse; it must be an http or https base URL such as http://loki:3100")
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("loki URL %q: must be an http or https base URL such as http://loki:3100", u.Redacted())
	}
	if cfg.Service == "" {
		cfg.Service = "maasflow"
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = DefaultBatchSize
	}
	if cfg.FlushInterval <= 0 {
		cfg.FlushInterval = DefaultFlushInterval
	}
	if cfg.Queue <= 0 {
		cfg.Queue = DefaultQueue
	}
	p := &Pusher{cfg: cfg, push: strings.TrimSuffix(u.String(), "/") + PushPath, shown: u.Redacted(),
		queue: make(chan entry, cfg.Queue), done: make(chan struct{}), stop: make(chan struct{})}
	go p.run()
	return p, nil
}

// URL is the Loki base URL as it may be shown: any password replaced.
func (p *Pusher) URL() string { return p.shown }

// Dropped is how many records were not delivered (queue full, or Loki
// refused their batch every time).
func (p *Pusher) Dropped() int64 { return p.dropped.Load() }

// Sent is how many records Loki accepted.
func (p *Pusher) Sent() int64 { return p.sent.Load() }

// Close sends what is queued and stops; later records are dropped.
func (p *Pusher) Close() error {
	p.once.Do(func() { close(p.stop) })
	<-p.done
	return nil
}

func (p *Pusher) enqueue(e entry) {
	select {
	case <-p.stop:
		p.dropped.Add(1)
		return
	default:
	}
	select {
	case p.queue <- e:
	default:
		p.dropped.Add(1)
	}
}

func (p *Pusher) run() {
	defer close(p.done)
	tick := time.NewTicker(p.cfg.FlushInterval)
	defer tick.Stop()
	var batch []entry
	flush := func() {
		if len(batch) > 0 {
			p.send(batch)
			batch = nil
		}
	}
	for {
		select {
		case e := <-p.queue:
			batch = append(batch, e)
			if len(batch) >= p.cfg.BatchSize {
				flush()
			}
		case <-tick.C:
			flush()
		case <-p.stop:
			for {
				select {
				case e := <-p.queue:
					batch = append(batch, e)
					if len(batch) >= p.cfg.BatchSize {
						flush()
					}
				default:
					flush()
					return
				}
			}
		}
	}
}

// pushBody is Loki's JSON push body: streams of labelled values, each
// value [timestamp in Unix nanoseconds as a string, line, metadata].
type pushBody struct {
	Streams []pushStream `json:"streams"`
}

type pushStream struct {
	Stream map[string]string `json:"stream"`
	Values [][]any           `json:"values"`
}

// body groups a batch by its labels, keeping each stream's order.
func (p *Pusher) body(batch []entry) pushBody {
	var out pushBody
	index := map[[2]string]int{}
	for _, e := range batch {
		k := [2]string{e.level, e.site}
		i, ok := index[k]
		if !ok {
			labels := map[string]string{"service_name": p.cfg.Service, "level": e.level}
			if e.site != "" {
				labels["site"] = e.site
			}
			i = len(out.Streams)
			index[k] = i
			out.Streams = append(out.Streams, pushStream{Stream: labels})
		}
		v := []any{strconv.FormatInt(e.at.UnixNano(), 10), e.line}
		if len(e.metadata) > 0 {
			v = append(v, e.metadata)
		}
		out.Streams[i].Values = append(out.Streams[i].Values, v)
	}
	return out
}

func (p *Pusher) send(batch []entry) {
	b, err := json.Marshal(p.body(batch))
	if err != nil {
		p.dropped.Add(int64(len(batch)))
		return
	}
	for try := range attempts {
		if err = p.post(b); err == nil {
			p.sent.Add(int64(len(batch)))
			return
		}
		var perm *permanentError
		if errors.As(err, &perm) {
			break
		}
		select {
		case <-time.After(time.Duration(try+1) * 200 * time.Millisecond):
		case <-p.stop:
			// Shutting down: one more try at most.
		}
	}
	p.dropped.Add(int64(len(batch)))
}

// permanentError is a 4xx other than 429: sending again will not help.
type permanentError struct{ status int }

func (e *permanentError) Error() string {
	return "loki refused the batch: HTTP " + strconv.Itoa(e.status)
}

func (p *Pusher) post(b []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.push, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if p.cfg.TenantID != "" {
		req.Header.Set("X-Scope-OrgID", p.cfg.TenantID)
	}
	resp, err := p.cfg.Client.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return nil
	case resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != http.StatusTooManyRequests:
		return &permanentError{status: resp.StatusCode}
	}
	return fmt.Errorf("loki answered HTTP %d", resp.StatusCode)
}

// Handler is an slog.Handler that sends records at or above level.
func (p *Pusher) Handler(level slog.Leveler) slog.Handler {
	w := &lineWriter{}
	return &handler{p: p, level: level, w: w, json: slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}),
		fields: map[string]string{}}
}

// lineWriter takes the JSON handler's one line per record.
type lineWriter struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (w *lineWriter) Write(b []byte) (int, error) { return w.buf.Write(b) }

type handler struct {
	p     *Pusher
	level slog.Leveler
	w     *lineWriter
	json  slog.Handler
	// fields are the correlation fields set by WithAttrs outside groups.
	fields  map[string]string
	grouped bool
}

func (h *handler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level.Level() }

func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	meta := make(map[string]string, len(h.fields))
	for k, v := range h.fields {
		meta[k] = v
	}
	if !h.grouped {
		r.Attrs(func(a slog.Attr) bool {
			collect(meta, a)
			return true
		})
	}
	h.w.mu.Lock()
	h.w.buf.Reset()
	err := h.json.Handle(ctx, r)
	line := strings.TrimSuffix(h.w.buf.String(), "\n")
	h.w.mu.Unlock()
	if err != nil {
		return err
	}
	h.p.enqueue(entry{at: r.Time, level: strings.ToLower(r.Level.String()), site: meta[logfield.SiteID], line: line, metadata: meta})
	return nil
}

// collect keeps a correlation field's value.
func collect(meta map[string]string, a slog.Attr) {
	for _, k := range metadataKeys {
		if a.Key == k {
			if v := a.Value.Resolve().String(); v != "" {
				meta[k] = v
			}
			return
		}
	}
}

func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	c.json = h.json.WithAttrs(attrs)
	c.fields = make(map[string]string, len(h.fields))
	for k, v := range h.fields {
		c.fields[k] = v
	}
	if !h.grouped {
		for _, a := range attrs {
			collect(c.fields, a)
		}
	}
	return &c
}

func (h *handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.json = h.json.WithGroup(name)
	c.grouped = true
	return &c
}
