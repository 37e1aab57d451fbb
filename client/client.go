package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

const (
	// DefaultRequestTimeout bounds one API call. A site probe may take the
	// server's own probe timeout (15s by default) plus MAAS's answer.
	DefaultRequestTimeout = 2 * time.Minute
	// maxResponse bounds an answer: an onboarding's diagnostics carry
	// installation output, which is large but not unbounded.
	maxResponse = 64 << 20
	// HeaderCorrelationID is the header the API echoes its correlation id in.
	HeaderCorrelationID = "X-Correlation-ID"
)

// Client calls the admin API. It is safe for concurrent use.
type Client struct {
	base string
	// streamBase serves the streams when they are not at base (on AWS, the
	// stream function's URL: API Gateway cannot stream an answer).
	streamBase string
	token      TokenFunc
	http       *http.Client
	userAgent  string
	timeout    time.Duration
}

// TokenFunc returns the bearer token for the next request; a login that
// refreshes its token gives one here.
type TokenFunc func(ctx context.Context) (string, error)

// Option configures a Client.
type Option func(*Client)

// WithToken sends token as the bearer token of every request.
func WithToken(token string) Option {
	return func(c *Client) {
		c.token = func(context.Context) (string, error) { return token, nil }
	}
}

// WithTokenFunc asks f for the bearer token before each request.
func WithTokenFunc(f TokenFunc) Option { return func(c *Client) { c.token = f } }

// WithHTTPClient sends requests through hc instead of a plain http.Client.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.http = hc } }

// WithUserAgent sets the User-Agent header.
func WithUserAgent(ua string) Option { return func(c *Client) { c.userAgent = ua } }

// WithRequestTimeout bounds each request (DefaultRequestTimeout unless
// set); 0 leaves only the caller's context.
func WithRequestTimeout(d time.Duration) Option { return func(c *Client) { c.timeout = d } }

// WithStreamURL opens the streams at streamURL instead of the API's base
// URL: on AWS the stack's StreamUrl output (the stream function's URL),
// because the HTTP API answers streams with 501 streams_unsupported.
func WithStreamURL(streamURL string) Option {
	return func(c *Client) { c.streamBase = strings.TrimSuffix(streamURL, "/") }
}

// New makes a Client for the API at baseURL, an http or https URL such as
// http://127.0.0.1:8080 (a path prefix is kept; a query or fragment is an
// error).
func New(baseURL string, opts ...Option) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("client: base URL is not a URL: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("client: base URL %q must be an http or https URL without query or fragment", u.Redacted())
	}
	c := &Client{
		base:      strings.TrimSuffix(u.String(), "/"),
		http:      &http.Client{},
		userAgent: "maasflow-client",
		timeout:   DefaultRequestTimeout,
		token:     func(context.Context) (string, error) { return "", nil },
	}
	for _, o := range opts {
		o(c)
	}
	if c.streamBase != "" {
		s, err := url.Parse(c.streamBase)
		if err != nil || (s.Scheme != "http" && s.Scheme != "https") || s.Host == "" || s.RawQuery != "" || s.Fragment != "" {
			return nil, errors.New("client: stream URL must be an http or https URL without query or fragment")
		}
	}
	return c, nil
}

// BaseURL is the API's base URL as the client uses it.
func (c *Client) BaseURL() string { return c.base }

// Response is a 2xx answer.
type Response struct {
	Status        int
	Header        http.Header
	Body          []byte
	CorrelationID string
}

// Decode unmarshals the answer's JSON body into v.
func (r *Response) Decode(v any) error {
	if err := json.Unmarshal(r.Body, v); err != nil {
		return fmt.Errorf("unexpected answer from the admin API (HTTP %d): %w", r.Status, err)
	}
	return nil
}

// CallOption changes one call.
type CallOption func(*callOptions)

type callOptions struct {
	raw *[]byte
}

// RawResponse stores the answer's body, exactly as the API sent it, in
// *dst: the CLI prints it verbatim for -o json.
func RawResponse(dst *[]byte) CallOption { return func(o *callOptions) { o.raw = dst } }

// Do sends one request to path (below the base URL) and returns the 2xx
// answer; anything else is an *APIError. body, when not nil, is sent as
// JSON (a json.RawMessage or []byte as it is). The typed methods are built
// on it; it serves endpoints the SDK does not know yet.
func (c *Client) Do(ctx context.Context, method, path string, query url.Values, body any) (*Response, error) {
	var rd io.Reader
	if body != nil {
		var b []byte
		switch v := body.(type) {
		case json.RawMessage:
			b = v
		case []byte:
			b = v
		default:
			var err error
			if b, err = json.Marshal(body); err != nil {
				return nil, fmt.Errorf("encode request: %w", err)
			}
		}
		rd = bytes.NewReader(b)
	}
	target := c.base + path
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return nil, fmt.Errorf("build request %s %s: %w", method, path, err)
	}
	token, err := c.token(ctx)
	if err != nil {
		return nil, fmt.Errorf("bearer token: %w", err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return nil, err
		}
		// net/http's error names the URL (with any password stripped),
		// never a header, so the token cannot leak through it.
		return nil, fmt.Errorf("cannot reach the admin API: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse+1))
	if err != nil {
		return nil, fmt.Errorf("read answer to %s %s: %w", method, path, err)
	}
	if len(b) > maxResponse {
		return nil, fmt.Errorf("answer to %s %s is larger than %d bytes", method, path, maxResponse)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, errorFrom(resp, b)
	}
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: b, CorrelationID: resp.Header.Get(HeaderCorrelationID)}, nil
}

// call is Do followed by decoding into a T, honouring the call options.
func call[T any](ctx context.Context, c *Client, method, path string, query url.Values, body any, opts []CallOption) (T, error) {
	var zero T
	resp, err := c.Do(ctx, method, path, query, body)
	if err != nil {
		return zero, err
	}
	var o callOptions
	for _, f := range opts {
		f(&o)
	}
	if o.raw != nil {
		*o.raw = resp.Body
	}
	var v T
	if len(bytes.TrimSpace(resp.Body)) == 0 {
		return v, nil
	}
	if err := resp.Decode(&v); err != nil {
		return zero, err
	}
	return v, nil
}

// Path joins path segments below prefix, escaping each one: ids come from
// users and must not change the route.
func Path(prefix string, ids ...string) string {
	var b strings.Builder
	b.WriteString(prefix)
	for _, id := range ids {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(id))
	}
	return b.String()
}

// The admin API's collections.
const (
	SitesPath          = "/api/v1/admin/maas-sites"
	SKUsPath           = "/api/v1/admin/skus"
	OnboardingsPath    = "/api/v1/admin/onboardings"
	BatchCreatePath    = "/api/v1/admin/onboardings/batch"
	BatchesPath        = "/api/v1/admin/onboarding-batches"
	ReconciliationPath = "/api/v1/admin/reconciliation"
	DriftPath          = "/api/v1/admin/reconciliation/drift"
	NodesPath          = "/api/v1/admin/nodes"
	DecommissionsPath  = "/api/v1/admin/decommissions"
	AuditPath          = "/api/v1/admin/audit"
	HealthPath         = "/api/v1/healthz"
)
