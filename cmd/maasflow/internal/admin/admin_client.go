package admin

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/maasflow/maasflow/client"
	"github.com/maasflow/maasflow/shared/api"
)

// adminClient is the SDK's client as the admin commands use it: every
// request goes through client.Client.
type adminClient struct {
	*client.Client
	// sawHeader sees every answer's header (the time-scale note).
	sawHeader func(http.Header)
}

// client builds the API client from --api-url and the environment.
func (r *adminRun) client() (*adminClient, error) {
	ctxName, cx, err := r.selectedContext()
	if err != nil {
		return nil, err
	}
	raw := r.apiURL
	if raw == "" {
		raw = r.env.getenv(envAdminAPIURL)
	}
	fromContext := false
	if raw == "" && cx != nil {
		raw, fromContext = cx.APIURL, cx.APIURL != ""
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
	if token == "" && cx != nil {
		if token, err = r.contextToken(r.cmd.Context(), ctxName); err != nil {
			return nil, fmt.Errorf("context %s: %w", ctxName, err)
		}
	}
	if token == "" {
		return nil, usagef("$%s is not set: export the admin API's bearer token (`maasflow local` prints it at start-up), or sign in with `maasflow login` in a context of the config file", envAdminToken)
	}
	if u.Scheme == "http" && !isLoopbackHost(u.Hostname()) {
		fmt.Fprintf(r.env.stderr, "warning: sending the admin token over plain http to %s\n", u.Host)
	}
	opts := []client.Option{client.WithToken(token), client.WithHTTPClient(r.env.http), client.WithUserAgent("maasflow-cli")}
	// The context's stream URL belongs to the context's API: an API named
	// by --api-url or the environment streams at its own URL.
	if fromContext && cx.StreamURL != "" {
		opts = append(opts, client.WithStreamURL(cx.StreamURL))
	}
	c, err := client.New(u.String(), opts...)
	if err != nil {
		return nil, usagef("--api-url %q: %v", u.Redacted(), err)
	}
	noted := false
	return &adminClient{Client: c, sawHeader: func(h http.Header) {
		// A stack whose clock runs faster than real time (maasflow local
		// --time-scale) says so; its times are not the wall clock's.
		if scale := h.Get(api.HeaderTimeScale); scale != "" && !noted {
			noted = true
			fmt.Fprintf(r.env.stderr, "note: the server's clock runs %s times faster than real time (maasflow local --time-scale): times shown are the server's, not the wall clock's\n", adminCell(scale))
		}
	}}, nil
}

func isLoopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// adminAPIError is an answer outside 2xx: the SDK's typed error.
type adminAPIError = client.APIError

// apiErrorText is an API error as the CLI prints it: the API's words made
// safe for a terminal.
func apiErrorText(e *adminAPIError) string {
	s := adminCell(e.Code) + ": " + adminCell(e.Message)
	if e.CorrelationID != "" {
		s += " (correlation_id " + adminCell(e.CorrelationID) + ")"
	}
	return s
}

// adminResponse is a 2xx answer.
type adminResponse struct {
	*client.Response
}

// decode unmarshals the answer into v.
func (a *adminResponse) decode(v any) error { return a.Decode(v) }

// adminPath joins path segments, escaping each one: ids come from the
// command line and must not change the route.
func adminPath(prefix string, ids ...string) string { return client.Path(prefix, ids...) }

const (
	adminSitesPath       = client.SitesPath
	adminSKUsPath        = client.SKUsPath
	adminOnboardingsPath = client.OnboardingsPath
	adminAuditPath       = client.AuditPath
)

// do sends one request through the SDK. A non-2xx answer is an
// *adminAPIError.
func (c *adminClient) do(ctx context.Context, method, path string, query url.Values, body any) (*adminResponse, error) {
	resp, err := c.Do(ctx, method, path, query, body)
	if err != nil {
		return nil, err
	}
	if c.sawHeader != nil {
		c.sawHeader(resp.Header)
	}
	return &adminResponse{Response: resp}, nil
}
