package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
)

// Streams: GET …/onboardings/{id}/stream, …/decommissions/{id}/stream and
// …/onboarding-batches/{id}/stream answer server-sent events whose data is
// the document the resource's GET answers, at once and after each change.
// A stream ends after a while with an "end" event (the reader reconnects),
// or with an "error" event when the resource can no longer be read.

// StreamSuffix is the path element after a resource that names its stream.
const StreamSuffix = "/stream"

// CodeStreamsUnsupported is the API's answer where the deployment cannot
// stream (behind API Gateway): read the resource instead.
const CodeStreamsUnsupported = "streams_unsupported"

// ErrStreamsUnsupported is returned by OpenStream when the server does not
// stream this resource: it refused with streams_unsupported, knows no such
// path (an older server), or answered something other than an event stream.
// Callers poll the resource instead.
var ErrStreamsUnsupported = errors.New("the admin API does not stream here")

// Event is one server-sent event.
type Event struct {
	// Name is the event's type: the resource ("onboarding",
	// "decommission", "batch"), "end" or "error".
	Name string
	// Data is the event's data, the lines joined with "\n".
	Data []byte
}

// EventStream reads the events of one stream; Close it when done.
type EventStream struct {
	// Header is the answer's header.
	Header http.Header
	body   io.ReadCloser
	r      *bufio.Reader
	cancel context.CancelFunc
}

// maxEventLine bounds one line of a stream (a whole onboarding document).
const maxEventLine = maxResponse

// OpenStream opens the stream at path (e.g.
// Path(OnboardingsPath, id)+StreamSuffix). The client's request timeout does
// not apply: a stream lasts until ctx ends, the server ends it, or Close.
func (c *Client) OpenStream(ctx context.Context, path string) (*EventStream, error) {
	ctx, cancel := context.WithCancel(ctx)
	base := c.base
	if c.streamBase != "" {
		base = c.streamBase
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("build request GET %s: %w", path, err)
	}
	token, err := c.token(ctx)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("bearer token: %w", err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("User-Agent", c.userAgent)
	resp, err := c.http.Do(req)
	if err != nil {
		cancel()
		if errors.Is(err, context.Canceled) {
			return nil, err
		}
		return nil, fmt.Errorf("cannot reach the admin API: %w", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		_ = resp.Body.Close()
		cancel()
		e := errorFrom(resp, b)
		switch {
		case e.Code == CodeStreamsUnsupported, e.Status == http.StatusNotImplemented,
			e.Status == http.StatusMethodNotAllowed,
			// An older server has no such path: its 404 says so, where
			// an unknown resource's names the resource.
			e.Status == http.StatusNotFound && e.Message == "no such endpoint":
			return nil, fmt.Errorf("%w: %s", ErrStreamsUnsupported, e.Error())
		}
		return nil, e
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		_ = resp.Body.Close()
		cancel()
		return nil, fmt.Errorf("%w: the answer is %q", ErrStreamsUnsupported, mt)
	}
	return &EventStream{Header: resp.Header, body: resp.Body, r: bufio.NewReaderSize(resp.Body, 64<<10), cancel: cancel}, nil
}

// Next returns the next event, skipping comments. It returns io.EOF when
// the stream ends (the connection closes, or the server's "end" event:
// reconnect to go on), an *APIError for an "error" event.
func (s *EventStream) Next() (Event, error) {
	var ev Event
	var data [][]byte
	size := 0
	for {
		line, err := s.r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A long line: gather it whole.
			rest := append([]byte(nil), line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				if len(rest) > maxEventLine {
					return Event{}, fmt.Errorf("stream: a line longer than %d bytes", maxEventLine)
				}
				line, err = s.r.ReadSlice('\n')
				rest = append(rest, line...)
			}
			line = rest
		}
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return Event{}, io.EOF
			}
			return Event{}, fmt.Errorf("stream: %w", err)
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			if ev.Name == "" && data == nil {
				continue
			}
			if ev.Name == "" {
				ev.Name = "message"
			}
			ev.Data = bytes.Join(data, []byte("\n"))
			switch ev.Name {
			case "end":
				return Event{}, io.EOF
			case "error":
				return Event{}, streamError(ev.Data)
			}
			return ev, nil
		}
		if line[0] == ':' {
			continue // a comment: keep-alive
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			ev.Name = string(value)
		case "data":
			size += len(value)
			if size > maxResponse {
				return Event{}, fmt.Errorf("stream: an event larger than %d bytes", maxResponse)
			}
			data = append(data, append([]byte(nil), value...))
		}
	}
}

// streamError is the *APIError an "error" event carries.
func streamError(b []byte) error {
	var env struct {
		Error struct {
			Code          string `json:"code"`
			Message       string `json:"message"`
			Field         string `json:"field"`
			CorrelationID string `json:"correlation_id"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &env); err != nil || env.Error.Code == "" {
		return fmt.Errorf("stream: an error event without an error: %q", b)
	}
	e := &APIError{Code: env.Error.Code, Message: env.Error.Message, Field: env.Error.Field, CorrelationID: env.Error.CorrelationID}
	if e.Code == CodeNotFound {
		e.Status = http.StatusNotFound
	}
	return e
}

// Close ends the stream.
func (s *EventStream) Close() error {
	s.cancel()
	return s.body.Close()
}

// Follow calls fn with each state of the resource at path that its stream
// pushes, decoded into T, until fn reports done or fails, ctx ends, or the
// stream fails. A stream the server ends (its age) is reopened; the first
// state after a reopen may repeat the last one. It returns
// ErrStreamsUnsupported (wrapped) when the server cannot stream, before
// fn's first call: poll instead.
func Follow[T any](ctx context.Context, c *Client, path string, fn func(T) (done bool, err error)) error {
	for {
		s, err := c.OpenStream(ctx, path)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		done, err := followOne(s, fn)
		_ = s.Close()
		if done || err != nil {
			if err != nil && ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// NextState reads the stream's next event and decodes its data into T: the
// resource's state. It returns io.EOF, or Next's error, as Next does.
func NextState[T any](s *EventStream) (T, error) {
	var v T
	ev, err := s.Next()
	if err != nil {
		return v, err
	}
	if err := json.Unmarshal(ev.Data, &v); err != nil {
		return v, fmt.Errorf("unexpected %s event from the admin API: %w", ev.Name, err)
	}
	return v, nil
}

func followOne[T any](s *EventStream, fn func(T) (bool, error)) (bool, error) {
	for {
		v, err := NextState[T](s)
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		done, err := fn(v)
		if done || err != nil {
			return done, err
		}
	}
}

// StreamOnboarding follows one onboarding (Follow).
func (c *Client) StreamOnboarding(ctx context.Context, id string, fn func(OnboardingDetail) (done bool, err error)) error {
	return Follow(ctx, c, Path(OnboardingsPath, id)+StreamSuffix, fn)
}

// StreamDecommission follows one decommission (Follow).
func (c *Client) StreamDecommission(ctx context.Context, id string, fn func(DecommissionDetail) (done bool, err error)) error {
	return Follow(ctx, c, Path(DecommissionsPath, id)+StreamSuffix, fn)
}

// StreamBatch follows one batch (Follow).
func (c *Client) StreamBatch(ctx context.Context, id string, fn func(Batch) (done bool, err error)) error {
	return Follow(ctx, c, Path(BatchesPath, id)+StreamSuffix, fn)
}

// withQuery is path with q's non-empty members as its query.
func withQuery(path string, q url.Values) string {
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode()
}

// StreamOnboardings follows the first page of a listing of onboardings
// (Follow): the page at once and after each change.
func (c *Client) StreamOnboardings(ctx context.Context, f OnboardingFilter, fn func(Page[Onboarding]) (done bool, err error)) error {
	return Follow(ctx, c, withQuery(OnboardingsPath+StreamSuffix, f.query()), fn)
}

// StreamDecommissions follows the first page of a listing of
// decommissions (Follow).
func (c *Client) StreamDecommissions(ctx context.Context, f DecommissionFilter, fn func(Page[Decommission]) (done bool, err error)) error {
	q := queryOf("site_id", f.SiteID, "node_id", f.NodeID, "status", string(f.Status), "limit", limit(f.Limit))
	return Follow(ctx, c, withQuery(DecommissionsPath+StreamSuffix, q), fn)
}

// StreamBatches follows the newest batches (at most limitN; the API's
// default when 0) (Follow).
func (c *Client) StreamBatches(ctx context.Context, limitN int, fn func([]Batch) (done bool, err error)) error {
	return Follow(ctx, c, withQuery(BatchesPath+StreamSuffix, queryOf("limit", limit(limitN))), func(l list[Batch]) (bool, error) {
		return fn(l.Items)
	})
}

// StreamNodes follows the first page of a listing of nodes (Follow).
func (c *Client) StreamNodes(ctx context.Context, f NodeFilter, fn func(Page[Node]) (done bool, err error)) error {
	q := queryOf("site_id", f.SiteID, "sku_id", f.SKUID, "status", f.Status, "hostname", f.Hostname, "limit", limit(f.Limit))
	return Follow(ctx, c, withQuery(NodesPath+StreamSuffix, q), fn)
}

// StreamNode follows one node (Follow).
func (c *Client) StreamNode(ctx context.Context, id string, fn func(NodeDetail) (done bool, err error)) error {
	return Follow(ctx, c, Path(NodesPath, id)+StreamSuffix, fn)
}

// StreamDrift follows the first page of a listing of drift items (Follow).
func (c *Client) StreamDrift(ctx context.Context, f DriftFilter, fn func(Page[DriftItem]) (done bool, err error)) error {
	q := queryOf("site_id", f.SiteID, "node_id", f.NodeID, "kind", f.Kind, "state", f.State, "limit", limit(f.Limit))
	return Follow(ctx, c, withQuery(DriftPath+StreamSuffix, q), fn)
}

// StreamSites follows the list of sites (Follow).
func (c *Client) StreamSites(ctx context.Context, fn func([]Site) (done bool, err error)) error {
	return Follow(ctx, c, SitesPath+StreamSuffix, func(l list[Site]) (bool, error) { return fn(l.Items) })
}
