package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

const (
	// adminRequestTimeout bounds one API call. A site probe may take the
	// server's own probe timeout (15s by default) plus MAAS's answer.
	adminRequestTimeout = 2 * time.Minute
	// adminMaxResponse bounds an answer: an onboarding's diagnostics carry
	// installation output, which is large but not unbounded.
	adminMaxResponse = 64 << 20
	// headerCorrelationID is the header the API echoes its correlation id in.
	headerCorrelationID = "X-Correlation-ID"
)

// adminClient calls the admin API with the operator's bearer token.
type adminClient struct {
	base  string
	token string
	http  *http.Client
}

// client builds the API client from --api-url and the environment.
func (r *adminRun) client() (*adminClient, error) {
	raw := r.apiURL
	if raw == "" {
		raw = r.env.getenv(envAdminAPIURL)
	}
	if raw == "" {
		raw = adminDefaultAPIURL
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, usagef("--api-url is not a URL; give an http or https base URL such as %s", adminDefaultAPIURL)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, usagef("--api-url %q must be an http or https base URL such as %s", u.Redacted(), adminDefaultAPIURL)
	}
	token := strings.TrimSpace(r.env.getenv(envAdminToken))
	if token == "" {
		return nil, usagef("$%s is not set: export the admin API's bearer token (`maasflow local` prints it at start-up)", envAdminToken)
	}
	if u.Scheme == "http" && !isLoopbackHost(u.Hostname()) {
		fmt.Fprintf(r.env.stderr, "warning: sending the admin token over plain http to %s\n", u.Host)
	}
	return &adminClient{base: strings.TrimSuffix(u.String(), "/"), token: token, http: r.env.http}, nil
}

func isLoopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// adminAPIError is an answer outside 2xx, read from the error envelope
// {"error":{"code","message","correlation_id"}}.
type adminAPIError struct {
	Status        int
	Code          string
	Message       string
	Field         string
	CorrelationID string
}

func (e *adminAPIError) Error() string {
	s := adminCell(e.Code) + ": " + adminCell(e.Message)
	if e.CorrelationID != "" {
		s += " (correlation_id " + adminCell(e.CorrelationID) + ")"
	}
	return s
}

// adminResponse is a 2xx answer.
type adminResponse struct {
	Status int
	Body   []byte
}

// decode unmarshals the answer into v.
func (a *adminResponse) decode(v any) error {
	if err := json.Unmarshal(a.Body, v); err != nil {
		return fmt.Errorf("unexpected answer from the admin API (HTTP %d): %w", a.Status, err)
	}
	return nil
}

// adminPath joins path segments, escaping each one: ids come from the
// command line and must not change the route.
func adminPath(prefix string, ids ...string) string {
	var b strings.Builder
	b.WriteString(prefix)
	for _, id := range ids {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(id))
	}
	return b.String()
}

const (
	adminSitesPath       = "/api/v1/admin/maas-sites"
	adminSKUsPath        = "/api/v1/admin/skus"
	adminOnboardingsPath = "/api/v1/admin/onboardings"
	adminAuditPath       = "/api/v1/admin/audit"
)

// do sends one request. body, when not nil, is marshalled to JSON unless it
// is already json.RawMessage. A non-2xx answer is an *adminAPIError.
func (c *adminClient) do(ctx context.Context, method, path string, query url.Values, body any) (*adminResponse, error) {
	var rd io.Reader
	if body != nil {
		b, ok := body.(json.RawMessage)
		if !ok {
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
	ctx, cancel := context.WithTimeout(ctx, adminRequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return nil, fmt.Errorf("build request %s %s: %w", method, path, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "maasflow-cli")
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
	b, err := io.ReadAll(io.LimitReader(resp.Body, adminMaxResponse+1))
	if err != nil {
		return nil, fmt.Errorf("read answer to %s %s: %w", method, path, err)
	}
	if len(b) > adminMaxResponse {
		return nil, fmt.Errorf("answer to %s %s is larger than %d bytes", method, path, adminMaxResponse)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, apiErrorFrom(resp, b)
	}
	return &adminResponse{Status: resp.StatusCode, Body: b}, nil
}

// apiErrorFrom reads the error envelope; an answer without one (a proxy's
// HTML page, say) becomes http_<status> with the status text.
func apiErrorFrom(resp *http.Response, b []byte) *adminAPIError {
	var env struct {
		Error *struct {
			Code          string `json:"code"`
			Message       string `json:"message"`
			Field         string `json:"field"`
			CorrelationID string `json:"correlation_id"`
		} `json:"error"`
	}
	e := &adminAPIError{Status: resp.StatusCode, CorrelationID: resp.Header.Get(headerCorrelationID)}
	if json.Unmarshal(b, &env) == nil && env.Error != nil && env.Error.Code != "" {
		e.Code, e.Message, e.Field = env.Error.Code, env.Error.Message, env.Error.Field
		if env.Error.CorrelationID != "" {
			e.CorrelationID = env.Error.CorrelationID
		}
		return e
	}
	e.Code = fmt.Sprintf("http_%d", resp.StatusCode)
	e.Message = strings.ToLower(http.StatusText(resp.StatusCode)) + " (the answer carried no error envelope)"
	return e
}
