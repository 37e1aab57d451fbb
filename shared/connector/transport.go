package connector

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Relay delivers a request to its site's connector and waits for the
// reply until ctx ends. An error means no reply (the context ended, or the
// relay itself failed); a reply with Error set is the connector's.
type Relay interface {
	Do(ctx context.Context, req Request) (Response, error)
}

// StatusReader returns a site's last connector heartbeat; false when the
// connector never reported.
type StatusReader interface {
	LastHeartbeat(ctx context.Context, site string) (Heartbeat, bool, error)
}

// DefaultDeadline bounds a request whose context has no deadline (the
// MAAS client's own default, maas.DefaultTimeout).
const DefaultDeadline = 2 * time.Minute

// maxRequestBody bounds a relayed request body: an SQS message holds 256
// KiB, and MAAS requests are forms of a few KiB (user-data included).
const maxRequestBody = 192 << 10

// relayedHeaders are the request headers a connector forwards.
var relayedHeaders = []string{"Accept", "Content-Type", "Authorization", "User-Agent"}

// Transport is an http.RoundTripper that sends each request through a
// site's connector. For KindMAAS the URL must lie under a MAAS API 2.0
// root (…/api/2.0/…): only the part after it travels, and the connector
// joins it to its own MAAS URL.
type Transport struct {
	Relay Relay
	Site  string
	Kind  string
	// NewID names each request; uuid.NewString when nil.
	NewID func() string
	// Now is the clock for default deadlines; time.Now when nil.
	Now func() time.Time
	// Unsigned drops the Authorization header: the connector signs with
	// the key it keeps at the site.
	Unsigned bool
	// AllowFetch, when set, names the URLs a KindFetch may GET; any other
	// is refused before it reaches the connector.
	AllowFetch func(*url.URL) bool
}

var _ http.RoundTripper = (*Transport)(nil)

// RoundTrip relays r and returns the connector's HTTP answer. A connector
// timeout or an expired request is a net.Error whose Timeout is true, so
// HTTP clients classify it as they would a direct timeout.
func (t *Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		defer func() { _ = r.Body.Close() }()
	}
	ctx := r.Context()
	req, err := t.request(r)
	if err != nil {
		return nil, err
	}
	resp, err := t.Relay.Do(ctx, req)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		return nil, err
	}
	if resp.Error != nil {
		return nil, &ConnectorFailureError{Site: t.Site, Failure: *resp.Error}
	}
	h := http.Header{}
	for k, v := range resp.Header {
		h.Set(k, v)
	}
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", resp.Status, http.StatusText(resp.Status)),
		StatusCode:    resp.Status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          io.NopCloser(bytes.NewReader(resp.Body)),
		ContentLength: int64(len(resp.Body)),
		Request:       r,
	}, nil
}

func (t *Transport) request(r *http.Request) (Request, error) {
	req := Request{Site: t.Site, Kind: t.Kind, Method: r.Method}
	switch t.Kind {
	case KindMAAS:
		_, rel, ok := strings.Cut(r.URL.RequestURI(), "/api/2.0/")
		if !ok {
			return Request{}, fmt.Errorf("connector: %s is not under a MAAS API 2.0 root", r.URL.Path)
		}
		req.URL = rel
	case KindFetch:
		if r.Method != http.MethodGet {
			return Request{}, fmt.Errorf("connector: a fetch is a GET, not %s", r.Method)
		}
		if t.AllowFetch != nil && !t.AllowFetch(r.URL) {
			return Request{}, &FetchNotAllowedError{Site: t.Site}
		}
		req.URL = r.URL.String()
	default:
		return Request{}, fmt.Errorf("connector: unknown request kind %q", t.Kind)
	}
	for _, k := range relayedHeaders {
		if k == "Authorization" && (t.Unsigned || t.Kind != KindMAAS) {
			continue
		}
		if v := r.Header.Get(k); v != "" {
			if req.Header == nil {
				req.Header = map[string]string{}
			}
			req.Header[k] = v
		}
	}
	if r.Body != nil {
		body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBody+1))
		if err != nil {
			return Request{}, fmt.Errorf("connector: read request body: %w", err)
		}
		if len(body) > maxRequestBody {
			return Request{}, fmt.Errorf("connector: request body larger than %d bytes", maxRequestBody)
		}
		req.Body = body
	}
	now := time.Now
	if t.Now != nil {
		now = t.Now
	}
	req.Deadline = now().Add(DefaultDeadline)
	if d, ok := r.Context().Deadline(); ok {
		req.Deadline = d
	}
	req.ID = uuid.NewString()
	if t.NewID != nil {
		req.ID = t.NewID()
	}
	return req, nil
}

// ConnectorFailureError is a connector's Failure as an error. Timeout reports
// whether the request ran out of time (timeout or expired), which HTTP
// callers read through net.Error.
type ConnectorFailureError struct {
	Site    string
	Failure Failure
}

func (e *ConnectorFailureError) Error() string {
	return fmt.Sprintf("site connector %s: %s: %s", e.Site, e.Failure.Kind, e.Failure.Message)
}

// Timeout implements net.Error.
func (e *ConnectorFailureError) Timeout() bool {
	return e.Failure.Kind == FailTimeout || e.Failure.Kind == FailExpired
}

// Temporary implements net.Error (deprecated there; kept for the interface).
func (e *ConnectorFailureError) Temporary() bool { return e.Timeout() }

// ErrNoReply is returned by a relay when the context ended before the
// reply arrived.
var ErrNoReply = errors.New("no reply from the site connector before the deadline")

// FetchNotAllowedError: a fetch through a site's connector of a URL the
// site's policy does not name (Paths.FetchClient); the URL is not repeated,
// it may carry a signature.
type FetchNotAllowedError struct {
	Site string
}

func (e *FetchNotAllowedError) Error() string {
	return "connector: site " + e.Site + "'s connector fetches only the bootstrap URL its site policy names and the node API health check"
}
