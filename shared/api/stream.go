package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// A stream pushes a resource to its reader as server-sent events
// (text/event-stream, the WHATWG HTML "Server-sent events" format) each
// time the resource changes: GET …/{id}/stream answers what GET …/{id}
// answers, first at once and again after every change, as an event named
// after the resource whose data is the same JSON document. The server
// re-reads its store when a write wakes it (Deps.Changes: local mode, where
// every writer runs in this process) and every StreamFallback besides, for
// writers it cannot see; without Changes it re-reads every StreamInterval.
// It sends only answers that differ from the last one sent, so a reader
// sees every state the store held at a read, never the same one twice, and
// an idle stream costs no reads between fallbacks. Readers are the console (fetch with a
// stream reader, so the bearer token stays in the Authorization header) and
// the CLI's watch and --wait (the SDK's OpenStream).
//
// A stream lasts at most StreamMaxAge, and ends streamDeadlineMargin
// before its request's deadline when it has one (a Lambda invocation's
// timeout), with an "end" event: a reader reconnects, which bounds what one
// connection holds. It starts again with the current document, so event
// ids are per connection and no Last-Event-ID is needed. A comment line
// every StreamKeepAlive keeps proxies from closing an idle one.

// Stream defaults.
const (
	defaultStreamInterval  = 500 * time.Millisecond
	defaultStreamKeepAlive = 15 * time.Second
	defaultStreamMaxAge    = 10 * time.Minute
	defaultStreamFallback  = 10 * time.Second
	// streamSettle is how long a woken stream waits before it reads: the
	// writes of one step (a record, its timeline, its outbox) land
	// together and cost one read, not one each.
	streamSettle = 50 * time.Millisecond
	// streamDeadlineMargin is how long before its request's deadline (a
	// Lambda invocation's timeout) a stream ends with its "end" event, so
	// the reader sees a clean end rather than a cut connection.
	streamDeadlineMargin = 15 * time.Second
)

// NewStreams is New serving only the stream routes (GET …/stream); every
// other path answers 404. The stream function on AWS serves it behind a
// Lambda function URL, beside the api function behind API Gateway, which
// cannot stream (Config.NoStreams).
func NewStreams(cfg Config, deps Deps) http.Handler {
	return newHandler(cfg, deps, func(rt route) bool { return strings.HasSuffix(rt.pattern, "/stream") })
}

// streamAge is how long one stream may last: StreamMaxAge, cut to end
// streamDeadlineMargin before the request's deadline when it has one.
func streamAge(rq *request, maxAge time.Duration) time.Duration {
	d, ok := rq.ctx().Deadline()
	if !ok {
		return maxAge
	}
	return max(min(maxAge, time.Until(d)-streamDeadlineMargin), 0)
}

// ChangeNotifier says when the store was written: Changed returns a channel
// closed at the next write. *store.Notifying is one.
type ChangeNotifier interface {
	Changed() <-chan struct{}
}

// streamedBody is what a streaming handler returns: it wrote its answer
// itself, so wrap writes nothing more.
type streamedBody struct{}

// streamEndEvent closes a stream that reached its age; errorEvent one whose
// resource can no longer be read (its data is the API's error body).
const (
	streamEndEvent   = "end"
	streamErrorEvent = "error"
)

// streamOf serves the changes of what get answers, as events named event.
func streamOf(event string, get func(*server, *request) (int, any, error)) func(*server, *request) (int, any, error) {
	return func(s *server, rq *request) (int, any, error) {
		if s.cfg.NoStreams {
			return 0, nil, &StatusError{Status: http.StatusNotImplemented, Code: CodeStreamsUnsupported,
				Message: "this deployment cannot stream answers; read GET " + strings.TrimSuffix(rq.r.URL.Path, "/stream") + " instead"}
		}
		// Taken before the first read, so a write during it wakes the
		// stream.
		changed := s.changed()
		// The first read answers like the GET: an unknown id is a 404,
		// not an empty stream.
		_, first, err := get(s, rq)
		if err != nil {
			return 0, nil, err
		}
		last, err := json.Marshal(first)
		if err != nil {
			return 0, nil, err
		}
		w := rq.w
		rc := http.NewResponseController(w)
		h := w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-store")
		h.Set("X-Content-Type-Options", "nosniff")
		// Tells nginx-like proxies not to buffer the events.
		h.Set("X-Accel-Buffering", "no")
		w.WriteHeader(http.StatusOK)

		if s.cfg.StreamRetry > 0 {
			// Sent once, before the first event (WHATWG HTML, "retry"
			// field): an EventSource keeps it for its reconnections.
			if _, err := fmt.Fprintf(w, "retry: %d\n\n", s.cfg.StreamRetry.Milliseconds()); err != nil {
				return http.StatusOK, streamedBody{}, nil
			}
		}
		seq := 0
		send := func(name string, data []byte) error {
			// A server's WriteTimeout bounds a whole answer; a stream
			// renews it for each event.
			_ = rc.SetWriteDeadline(time.Now().Add(s.cfg.StreamKeepAlive + 30*time.Second))
			seq++
			if _, err := fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", seq, name, data); err != nil {
				return err
			}
			return rc.Flush()
		}
		if err := send(event, last); err != nil {
			return http.StatusOK, streamedBody{}, nil
		}
		// pushChange reads the resource and sends it when it differs from
		// the last sent; false ends the stream.
		pushChange := func() bool {
			_, v, err := get(s, rq)
			if err != nil {
				if rq.ctx().Err() != nil {
					return false
				}
				f := classify(err)
				if f.Status >= 500 {
					// A store hiccup: the next read may succeed, and
					// the reader keeps the last state meanwhile.
					rq.log.WarnContext(rq.ctx(), "stream read failed", "error", err.Error())
					return true
				}
				b, _ := json.Marshal(errorBody{Error: errorDetail{Code: f.Code, Message: f.Message, Field: f.Field, CorrelationID: rq.correlationID}})
				_ = send(streamErrorEvent, b)
				return false
			}
			b, err := json.Marshal(v)
			if err != nil {
				return false
			}
			if string(b) == string(last) {
				return true
			}
			last = b
			return send(event, b) == nil
		}
		interval := s.cfg.StreamInterval
		if changed != nil {
			interval = s.cfg.StreamFallback
		}
		tick := time.NewTicker(interval)
		defer tick.Stop()
		alive := time.NewTicker(s.cfg.StreamKeepAlive)
		defer alive.Stop()
		end := time.NewTimer(streamAge(rq, s.cfg.StreamMaxAge))
		defer end.Stop()
		for {
			select {
			case <-rq.ctx().Done():
				return http.StatusOK, streamedBody{}, nil
			case <-end.C:
				_ = send(streamEndEvent, []byte(`{"reason":"max_age"}`))
				return http.StatusOK, streamedBody{}, nil
			case <-alive.C:
				_ = rc.SetWriteDeadline(time.Now().Add(s.cfg.StreamKeepAlive + 30*time.Second))
				if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil || rc.Flush() != nil {
					return http.StatusOK, streamedBody{}, nil
				}
			case <-changed:
				// Let the step's other writes land, then read what they
				// made; a write after the new channel is taken wakes the
				// stream again.
				settle := time.NewTimer(streamSettle)
				select {
				case <-rq.ctx().Done():
					settle.Stop()
					return http.StatusOK, streamedBody{}, nil
				case <-settle.C:
				}
				changed = s.changed()
				tick.Reset(interval)
				if !pushChange() {
					return http.StatusOK, streamedBody{}, nil
				}
			case <-tick.C:
				if changed != nil {
					changed = s.changed()
				}
				if !pushChange() {
					return http.StatusOK, streamedBody{}, nil
				}
			}
		}
	}
}

// changed is the channel the next store write closes, nil without a
// notifier (then a nil channel never fires in a select).
func (s *server) changed() <-chan struct{} {
	if s.changes == nil {
		return nil
	}
	return s.changes.Changed()
}
