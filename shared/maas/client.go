package maas

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	jsonv1 "github.com/go-json-experiment/json/v1"

	"github.com/maasflow/maasflow/shared/domain"
)

// Client speaks MAAS API 2.0 over HTTP and implements every port of this
// package. It is safe for concurrent use and holds no state between calls.
//
// Each call takes its deadline from ctx; it classifies MAAS's answer into
// one of the typed errors in errors.go and returns. It never sleeps and
// never retries: retry belongs to the ASL (the reason this is not a wrapper
// of gomaasclient is in docs/maas-client.md).
type Client struct {
	apiURL         string // ends with "/api/2.0/"
	creds          credentials
	keyScrubber    scrubber
	http           *http.Client
	userAgent      string
	nonce          func() string
	now            func() time.Time
	log            *slog.Logger
	defaultTimeout time.Duration
}

// Compile-time proof that Client implements every port.
var (
	_ MachineFinder    = (*Client)(nil)
	_ MachineLifecycle = (*Client)(nil)
	_ InterfaceManager = (*Client)(nil)
	_ SubnetLister     = (*Client)(nil)
	_ StorageManager   = (*Client)(nil)
	_ PowerController  = (*Client)(nil)
	_ Diagnostics      = (*Client)(nil)
	_ Prober           = (*Client)(nil)
)

const (
	// DefaultTimeout bounds a call whose context has no deadline. A context
	// deadline always wins, later or sooner: this only stops a call made
	// without one from hanging for ever. query_power_state alone can take
	// about a minute (maas-behaviour §8).
	DefaultTimeout = 2 * time.Minute

	defaultUserAgent = "maasflow"
	// maxBodyBytes bounds a success body; the largest reply maasflow reads
	// is machines/?op=power_parameters, one small map per machine.
	maxBodyBytes = 64 << 20
	// maxErrorBodyBytes bounds an error body: only its start reaches the
	// error message.
	maxErrorBodyBytes = 64 << 10
)

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sets the HTTP client (transport, TLS, proxy); without it
// the client uses the transport shared by every client of the same region
// (transport.go). Its Timeout
// is ignored, because deadlines come from the context, and redirects are not
// followed, because a redirect means a wrong base URL and would turn a POST
// into a GET.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) {
		if hc != nil {
			c.http = hc
		}
	}
}

// WithUserAgent sets the User-Agent header.
func WithUserAgent(ua string) Option {
	return func(c *Client) {
		if ua != "" {
			c.userAgent = ua
		}
	}
}

// WithNonce sets the OAuth nonce source (tests pin it).
func WithNonce(f func() string) Option {
	return func(c *Client) {
		if f != nil {
			c.nonce = f
		}
	}
}

// WithNow sets the clock used for the OAuth timestamp and for Retry-After
// dates (tests pin it).
func WithNow(f func() time.Time) Option {
	return func(c *Client) {
		if f != nil {
			c.now = f
		}
	}
}

// WithLogger sets the logger. The client logs one Debug line per request
// (method, path, op, status, duration), never a body, a query or a header.
func WithLogger(l *slog.Logger) Option {
	return func(c *Client) {
		if l != nil {
			c.log = l
		}
	}
}

// WithDefaultTimeout replaces DefaultTimeout, the bound on calls whose
// context carries no deadline. Zero or less means no bound.
func WithDefaultTimeout(d time.Duration) Option {
	return func(c *Client) { c.defaultTimeout = d }
}

// NewClient returns a client for the region at baseURL, such as
// "http://maas.example:5240/MAAS"; the client appends "api/2.0/" (a URL that
// already ends in /api/2.0 is taken as is). apiKey is MAAS's
// "consumer_key:token_key:token_secret". Errors never repeat the key.
func NewClient(baseURL string, apiKey domain.Secret, opts ...Option) (*Client, error) {
	creds, err := parseAPIKey(apiKey.Reveal())
	if err != nil {
		return nil, err
	}
	api, err := apiRoot(baseURL)
	if err != nil {
		return nil, err
	}
	c := &Client{
		apiURL:         api,
		creds:          creds,
		keyScrubber:    newScrubber(apiKey.Reveal(), creds.consumerKey, creds.tokenKey, creds.tokenSecret),
		userAgent:      defaultUserAgent,
		nonce:          randomNonce,
		now:            time.Now,
		log:            slog.New(slog.DiscardHandler),
		defaultTimeout: DefaultTimeout,
	}
	for _, o := range opts {
		o(c)
	}
	if c.http == nil {
		c.http = &http.Client{Transport: regionTransport(api)}
	}
	c.http = tamedHTTPClient(c.http)
	return c, nil
}

// apiRoot validates baseURL and returns the API 2.0 root with a trailing
// slash (MAAS redirects slash-less paths, maas-behaviour §1).
func apiRoot(baseURL string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(baseURL))
	if err != nil {
		return "", errors.New("maas: base URL does not parse")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("maas: base URL scheme %q: want http or https", u.Scheme)
	}
	if u.Host == "" {
		return "", errors.New("maas: base URL has no host")
	}
	// Credentials in the URL would end up in transport error texts.
	if u.User != nil {
		return "", errors.New("maas: base URL must not carry user info")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", errors.New("maas: base URL must not carry a query or fragment")
	}
	path := strings.TrimRight(u.Path, "/")
	if !strings.HasSuffix(path, "/api/2.0") {
		path += "/api/2.0"
	}
	u.Path = path + "/"
	u.RawPath = ""
	return u.String(), nil
}

// tamedHTTPClient copies hc (or builds a default) without a client-level
// timeout, which would override the context's deadline, and without
// following redirects.
func tamedHTTPClient(hc *http.Client) *http.Client {
	var out http.Client
	if hc != nil {
		out = *hc
	}
	if out.Transport == nil {
		if t, ok := http.DefaultTransport.(*http.Transport); ok {
			out.Transport = t.Clone()
		}
	}
	out.Timeout = 0
	out.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &out
}

// request is one API call.
type request struct {
	op       string // label for errors and logs ("deploy", "get machine")
	systemID string // machine the call is about, for errors
	method   string
	path     string // relative to the API root, ending with "/"
	maasOp   string // MAAS's op= value, sent in the query string
	query    url.Values
	form     url.Values
	// secrets are per-call values (BMC password, user-data) to scrub from
	// any error text, on top of the API key.
	secrets []string
}

// reply is a successful answer.
type reply struct {
	status int
	body   []byte
	// pooled is body's buffer when it came from bodyBuffers.
	pooled *[]byte
}

// bodyBuffers hold the bodies of successful replies that are decoded and
// dropped at once (doJSON): a machine object is several kilobytes, read
// on nearly every call. A buffer grown past maxPooledBody is left to the
// collector rather than kept.
var bodyBuffers = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledBody = 1 << 20

// release hands the body's buffer back for the next reply; the body must
// not be used after it. encoding/json copies what it decodes, so a
// decoded value never shares the buffer.
func (rep reply) release() {
	if rep.pooled != nil && cap(rep.body) <= maxPooledBody {
		*rep.pooled = rep.body[:0]
		bodyBuffers.Put(rep.pooled)
	}
}

// do sends r and returns the 2xx answer or a typed error.
func (c *Client) do(ctx context.Context, r request) (reply, error) {
	if _, ok := ctx.Deadline(); !ok && c.defaultTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.defaultTimeout)
		defer cancel()
	}
	query := url.Values{}
	for k, v := range r.query {
		query[k] = v
	}
	if r.maasOp != "" {
		query.Set("op", r.maasOp)
	}
	target := c.apiURL + r.path
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	var body io.Reader
	if r.method == http.MethodPost || r.method == http.MethodPut {
		body = strings.NewReader(r.form.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, r.method, target, body)
	if err != nil {
		// Only a malformed path gets here; the URL holds no secret.
		return reply{}, &MAASBadRequestError{Op: r.op, SystemID: r.systemID, Message: "cannot build request"}
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	req.Header.Set("Authorization", c.creds.authorization(c.nonce(), c.now()))

	start := time.Now()
	resp, err := c.http.Do(req)
	if err != nil {
		c.logRequest(ctx, r, 0, start)
		return reply{}, c.transportFailure(ctx, r, err, c.scrubberFor(r))
	}
	defer func() { _ = resp.Body.Close() }()
	c.logRequest(ctx, r, resp.StatusCode, start)

	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		pooled, _ := bodyBuffers.Get().(*[]byte)
		data, err := readBody(resp, maxBodyBytes, *pooled)
		rep := reply{status: resp.StatusCode, body: data, pooled: pooled}
		if err != nil {
			rep.release()
			return reply{}, c.transportFailure(ctx, r, err, c.scrubberFor(r))
		}
		return rep, nil
	}
	data, err := readBody(resp, maxErrorBodyBytes, nil)
	if err != nil {
		return reply{}, c.transportFailure(ctx, r, err, c.scrubberFor(r))
	}
	return reply{}, c.classify(r, resp, data, c.scrubberFor(r))
}

// scrubberFor is the client's key scrubber extended with r's own secrets.
// Only a failed call needs it, so a successful one never builds it.
func (c *Client) scrubberFor(r request) scrubber {
	sc := c.keyScrubber
	for _, s := range r.secrets {
		sc = sc.with(s)
	}
	return sc
}

// readBody reads at most limit bytes of resp's body into buf, reused from
// its start. A declared length sizes a buffer too small for it at once,
// instead of growing it by doubling through a machine object's several
// kilobytes; the length is only a hint, so a body that turns out longer or
// shorter reads all the same.
func readBody(resp *http.Response, limit int64, buf []byte) ([]byte, error) {
	body := io.LimitReader(resp.Body, limit)
	// One byte more than declared, so that the read meeting the end of a
	// body of exactly that length does not grow the buffer first.
	want := int64(512)
	if resp.ContentLength > 0 {
		want = max(want, min(resp.ContentLength, limit)+1)
	}
	if int64(cap(buf)) < want {
		buf = make([]byte, 0, want)
	}
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// doJSON sends r and decodes the JSON answer into out.
func (c *Client) doJSON(ctx context.Context, r request, out any) error {
	rep, err := c.do(ctx, r)
	if err != nil {
		return err
	}
	defer rep.release()
	if err := decodeReply(rep.body, out); err != nil {
		return &MAASUnexpectedResponseError{Op: r.op, SystemID: r.systemID, StatusCode: rep.status, Message: describeJSONError(err)}
	}
	return nil
}

// decodeReply decodes a MAAS reply with encoding/json's semantics on the
// v2 engine (github.com/go-json-experiment/json/v1): the same result in
// half the CPU, because the reply is scanned once rather than validated
// and then decoded. A machine reply is 10-30 KB and stages read one each,
// which made this decode the largest single cost of an onboarding in the
// profiles (docs/benchmarks.md). TestDecodeReplyMatchesEncodingJSON holds
// the two to the same result.
func decodeReply(body []byte, out any) error {
	return jsonv1.Unmarshal(body, out)
}

// describeJSONError says what was wrong with a reply without quoting it:
// some replies (power_parameters) hold passwords.
func describeJSONError(err error) string {
	var syn *jsonv1.SyntaxError
	var typ *jsonv1.UnmarshalTypeError
	var stdTyp *json.UnmarshalTypeError // from a wire type's own UnmarshalJSON
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("reply is not JSON (syntax error at offset %d)", syn.Offset)
	case errors.As(err, &typ):
		return fmt.Sprintf("reply has a %s where %s was expected at %q", typ.Value, typ.Type, typ.Field)
	case errors.As(err, &stdTyp):
		return fmt.Sprintf("reply has a %s where %s was expected at %q", stdTyp.Value, stdTyp.Type, stdTyp.Field)
	default:
		return "reply is not the expected JSON"
	}
}

func (c *Client) logRequest(ctx context.Context, r request, status int, start time.Time) {
	c.log.LogAttrs(ctx, slog.LevelDebug, "maas request",
		slog.String("method", r.method),
		slog.String("path", r.path),
		slog.String("op", r.maasOp),
		slog.Int("status", status),
		slog.Duration("duration", time.Since(start)),
	)
}

// transportFailure classifies an error from sending or reading: the
// context's deadline or a transport timeout is a MAASTimeoutError, anything else
// a MAASTransportError. The url.Error wrapper is dropped (its text repeats the
// URL); the inner text is scrubbed all the same.
func (c *Client) transportFailure(ctx context.Context, r request, err error, sc scrubber) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		if errors.Is(ctxErr, context.DeadlineExceeded) {
			return &MAASTimeoutError{Op: r.op, SystemID: r.systemID, cause: ctxErr}
		}
		return &MAASTransportError{Op: r.op, SystemID: r.systemID, Message: "request cancelled", cause: ctxErr}
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return &MAASTimeoutError{Op: r.op, SystemID: r.systemID, cause: err}
	}
	inner := err
	var ue *url.Error
	if errors.As(err, &ue) {
		inner = ue.Err
	}
	return &MAASTransportError{Op: r.op, SystemID: r.systemID, Message: sc.message(inner.Error()), cause: inner}
}

// classify maps a non-2xx answer to its typed error (maas-behaviour §3).
func (c *Client) classify(r request, resp *http.Response, body []byte, sc scrubber) error {
	msg := bodyMessage(resp, body, sc)
	switch code := resp.StatusCode; {
	case code == http.StatusBadRequest:
		e := &MAASBadRequestError{Op: r.op, SystemID: r.systemID, Message: msg}
		if fields := formErrors(resp, body, sc); fields != nil {
			e.Fields = fields
			e.Message = flattenFields(fields)
		}
		return e
	case code == http.StatusUnauthorized:
		// The body may name the token key (maas-behaviour §1): not kept.
		return &MAASUnauthorizedError{Op: r.op, SystemID: r.systemID}
	case code == http.StatusForbidden:
		return &MAASForbiddenError{Op: r.op, SystemID: r.systemID, Message: msg}
	case code == http.StatusNotFound:
		return &MAASNotFoundError{Op: r.op, SystemID: r.systemID, Message: msg}
	case code == http.StatusConflict:
		// A 409 carrying Retry-After is MAAS's database serialisation
		// conflict, the one 409 worth retrying (maas-behaviour §3, §14.13):
		// the machine's state did not refuse anything, so it is reported as
		// MAAS being briefly unavailable.
		if after := c.retryAfter(resp); after > 0 {
			return &MAASUnavailableError{Op: r.op, SystemID: r.systemID, StatusCode: code, Message: msg, RetryAfter: after}
		}
		return &MAASConflictError{Op: r.op, SystemID: r.systemID, Message: msg}
	case code == http.StatusTooManyRequests || code >= 500:
		return &MAASUnavailableError{Op: r.op, SystemID: r.systemID, StatusCode: code, Message: msg, RetryAfter: c.retryAfter(resp)}
	case code >= 300 && code < 400:
		return &MAASUnexpectedResponseError{Op: r.op, SystemID: r.systemID, StatusCode: code,
			Message: "redirected: check that the base URL is the region's /MAAS root"}
	default:
		return &MAASUnexpectedResponseError{Op: r.op, SystemID: r.systemID, StatusCode: code, Message: msg}
	}
}

// bodyMessage is the scrubbed one-line text of an error body. HTML pages
// (MAAS's 409 retry page, proxies) are replaced by the status text.
func bodyMessage(resp *http.Response, body []byte, sc scrubber) string {
	if isMediaType(resp, "text/html") || looksLikeHTML(body) {
		return http.StatusText(resp.StatusCode)
	}
	return sc.message(string(body))
}

func looksLikeHTML(body []byte) bool {
	head := strings.ToLower(strings.TrimSpace(string(body[:min(len(body), 64)])))
	return strings.HasPrefix(head, "<!doctype html") || strings.HasPrefix(head, "<html")
}

func isMediaType(resp *http.Response, want string) bool {
	mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return err == nil && mt == want
}

// formErrors decodes MAAS's JSON form errors {"field": ["msg", …]}
// (maas-behaviour §3). It returns nil when the body is not such an object.
func formErrors(resp *http.Response, body []byte, sc scrubber) map[string][]string {
	trimmed := strings.TrimSpace(string(body))
	if !isMediaType(resp, "application/json") && !strings.HasPrefix(trimmed, "{") {
		return nil
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(trimmed), &raw); err != nil || len(raw) == 0 {
		return nil
	}
	fields := make(map[string][]string, len(raw))
	for k, v := range raw {
		var list []string
		if err := json.Unmarshal(v, &list); err != nil {
			var one string
			if err := json.Unmarshal(v, &one); err != nil {
				one = string(v)
			}
			list = []string{one}
		}
		for i := range list {
			list[i] = sc.message(list[i])
		}
		fields[sc.scrub(k)] = list
	}
	return fields
}

// flattenFields renders form errors as "field: msg; field: msg", sorted by
// field so that messages are stable.
func flattenFields(fields map[string][]string) string {
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+": "+strings.Join(fields[k], " "))
	}
	msg := strings.Join(parts, "; ")
	if len(msg) > maxMessageLen {
		msg = newScrubber().message(msg)
	}
	return msg
}

// retryAfter reads Retry-After as seconds or as an HTTP date; 0 when absent
// or unreadable. MAAS sends integers (5 on a DB conflict, 10 with no rack
// controller; maas-behaviour §3). The value is reported, never slept on.
func (c *Client) retryAfter(resp *http.Response) int {
	v := strings.TrimSpace(resp.Header.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(v); err == nil {
		return max(n, 0)
	}
	if t, err := http.ParseTime(v); err == nil {
		d := t.Sub(c.now())
		if d <= 0 {
			return 0
		}
		return int((d + time.Second - 1) / time.Second)
	}
	return 0
}

// machinePath is machines/{system_id}/ with the id escaped.
func machinePath(systemID string) string {
	return "machines/" + url.PathEscape(systemID) + "/"
}

// nodePath is nodes/{system_id}/ with the id escaped; interfaces and script
// results live under nodes/, not machines/ (maas-behaviour §9, §12).
func nodePath(systemID string) string {
	return "nodes/" + url.PathEscape(systemID) + "/"
}

// requireArg refuses an empty argument before anything is sent: an empty
// system id would turn "machines/{id}/" into the machine list.
func requireArg(op, systemID, name, value string) error {
	if strings.TrimSpace(value) == "" {
		return &MAASBadRequestError{Op: op, SystemID: systemID, Message: name + " is empty"}
	}
	return nil
}

// boolString is how booleans travel: true/false (maas-behaviour §2).
func boolString(b bool) string { return strconv.FormatBool(b) }
