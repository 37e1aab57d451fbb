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
// after the resource whose data is the same JSON document. The server reads
// its own store every StreamInterval and sends only answers that differ
// from the last one sent, so a reader sees every state the store held at a
// read, never the same one twice. Readers are the console (fetch with a
// stream reader, so the bearer token stays in the Authorization header) and
// the CLI's watch and --wait (the SDK's OpenStream).
//
// A stream lasts at most StreamMaxAge, then ends with an "end" event: a
// reader reconnects, which bounds what one connection holds. A comment
// line every StreamKeepAlive keeps proxies from closing an idle one.

// Stream defaults.
const (
	defaultStreamInterval  = 500 * time.Millisecond
	defaultStreamKeepAlive = 15 * time.Second
	defaultStreamMaxAge    = 10 * time.Minute
)

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
		tick := time.NewTicker(s.cfg.StreamInterval)
		defer tick.Stop()
		alive := time.NewTicker(s.cfg.StreamKeepAlive)
		defer alive.Stop()
		end := time.NewTimer(s.cfg.StreamMaxAge)
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
			case <-tick.C:
				_, v, err := get(s, rq)
				if err != nil {
					if rq.ctx().Err() != nil {
						return http.StatusOK, streamedBody{}, nil
					}
					f := classify(err)
					if f.Status >= 500 {
						// A store hiccup: the next read may succeed, and
						// the reader keeps the last state meanwhile.
						rq.log.WarnContext(rq.ctx(), "stream read failed", "error", err.Error())
						continue
					}
					b, _ := json.Marshal(errorBody{Error: errorDetail{Code: f.Code, Message: f.Message, Field: f.Field, CorrelationID: rq.correlationID}})
					_ = send(streamErrorEvent, b)
					return http.StatusOK, streamedBody{}, nil
				}
				b, err := json.Marshal(v)
				if err != nil {
					return http.StatusOK, streamedBody{}, nil
				}
				if string(b) == string(last) {
					continue
				}
				last = b
				if err := send(event, b); err != nil {
					return http.StatusOK, streamedBody{}, nil
				}
			}
		}
	}
}
