package maas

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
)

func TestNewClientAPIRoot(t *testing.T) {
	tests := []struct {
		name string
		base string // appended to the fake's scheme://host
	}{
		{name: "region root", base: "/MAAS"},
		{name: "region root with slash", base: "/MAAS/"},
		{name: "already versioned", base: "/MAAS/api/2.0"},
		{name: "already versioned with slash", base: "/MAAS/api/2.0/"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeMAAS(t)
			f.on(http.MethodGet, "version/", "", http.StatusOK, `{"version":"3.5.4","capabilities":[]}`)
			f.on(http.MethodGet, "users/", "whoami", http.StatusOK, `{"username":"maasflow","is_superuser":true}`)
			c, err := NewClient(f.srv.URL+tc.base, testKey)
			require.NoError(t, err)

			_, err = c.Probe(context.Background())
			require.NoError(t, err)
			reqs := f.requests()
			require.Len(t, reqs, 2)
			assert.Equal(t, "version/", reqs[0].Path)
			assert.Equal(t, "users/", reqs[1].Path)
		})
	}
}

func TestNewClientRefuses(t *testing.T) {
	tests := []struct {
		name    string
		base    string
		key     domain.Secret
		wantErr string
	}{
		{name: "two-part key", base: "http://maas:5240/MAAS", key: "cK3yConsumer01:tS3cretTokenSecret03", wantErr: "got 2 parts"},
		{name: "four-part key", base: "http://maas:5240/MAAS", key: "a1:b2:tS3cretTokenSecret03:d4", wantErr: "got 4 parts"},
		{name: "empty part", base: "http://maas:5240/MAAS", key: "cK3yConsumer01::tS3cretTokenSecret03", wantErr: "a part is empty"},
		{name: "empty key", base: "http://maas:5240/MAAS", key: "", wantErr: "malformed API key"},
		{name: "no scheme", base: "maas:5240/MAAS", key: testKey, wantErr: "scheme"},
		{name: "ftp", base: "ftp://maas/MAAS", key: testKey, wantErr: "want http or https"},
		{name: "no host", base: "http:///MAAS", key: testKey, wantErr: "no host"},
		{name: "user info", base: "http://admin:pw-in-url@maas:5240/MAAS", key: testKey, wantErr: "user info"},
		{name: "query", base: "http://maas:5240/MAAS?x=1", key: testKey, wantErr: "query"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := NewClient(tc.base, tc.key)
			require.Error(t, err)
			assert.Nil(t, c)
			assert.Contains(t, err.Error(), tc.wantErr)
			for _, secret := range []string{testTokenSecret, "pw-in-url", string(tc.key)} {
				if secret != "" {
					assert.NotContains(t, err.Error(), secret)
				}
			}
		})
	}
}

func TestErrorClasses(t *testing.T) {
	const sid = "k3tgaq"
	get := func(c *Client) error { _, err := c.Get(context.Background(), sid); return err }
	deploy := func(c *Client) error {
		_, err := c.Deploy(context.Background(), sid, MachineDeployParams{DistroSeries: "jammy"})
		return err
	}
	tests := []struct {
		name    string
		method  string
		op      string
		status  int
		body    string
		headers []string
		call    func(*Client) error
		want    error
		wantMsg string
	}{
		{
			name: "400 text", method: http.MethodPost, op: "deploy", status: 400, call: deploy,
			body: "Unrecognised signature: method=POST op=deploy",
			want: &MAASBadRequestError{Op: "deploy", SystemID: sid, Message: "Unrecognised signature: method=POST op=deploy"},
		},
		{
			name: "400 JSON form errors", method: http.MethodPost, op: "deploy", status: 400, call: deploy,
			body: `{"network": ["Node must be configured to use a network"], "distro_series": ["'x' is not a valid distro_series."]}`,
			want: &MAASBadRequestError{Op: "deploy", SystemID: sid,
				Message: "distro_series: 'x' is not a valid distro_series.; network: Node must be configured to use a network",
				Fields: map[string][]string{
					"network":       {"Node must be configured to use a network"},
					"distro_series": {"'x' is not a valid distro_series."},
				}},
		},
		{
			name: "401", method: http.MethodGet, status: 401, call: get,
			body: "Authorization Error: 'Invalid access token: " + testTokenKey + "'",
			want: &MAASUnauthorizedError{Op: "get machine", SystemID: sid},
		},
		{
			name: "403 empty body", method: http.MethodPost, op: "deploy", status: 403, call: deploy, body: "",
			want:    &MAASForbiddenError{Op: "deploy", SystemID: sid},
			wantMsg: "maas deploy k3tgaq: forbidden",
		},
		{
			name: "404", method: http.MethodGet, status: 404, call: get, body: "No Machine matches the given query.",
			want:    &MAASNotFoundError{Op: "get machine", SystemID: sid, Message: "No Machine matches the given query."},
			wantMsg: "maas get machine k3tgaq: not found: No Machine matches the given query.",
		},
		{
			name: "409 state conflict without Retry-After", method: http.MethodPost, op: "deploy", status: 409, call: deploy,
			body: "Can't deploy a machine that is in the 'Failed deployment' state",
			want: &MAASConflictError{Op: "deploy", SystemID: sid, Message: "Can't deploy a machine that is in the 'Failed deployment' state"},
		},
		{
			name: "409 DB conflict with Retry-After", method: http.MethodPost, op: "deploy", status: 409, call: deploy,
			body:    "<!DOCTYPE html><html><body><h1>Conflict</h1><p>serialization failure</p></body></html>",
			headers: []string{"Retry-After", "5", "Content-Type", "text/html; charset=utf-8"},
			want:    &MAASUnavailableError{Op: "deploy", SystemID: sid, StatusCode: 409, Message: "Conflict", RetryAfter: 5},
			wantMsg: "maas deploy k3tgaq: unavailable (409): Conflict (retry after 5s)",
		},
		{
			name: "500", method: http.MethodPost, op: "deploy", status: 500, call: deploy,
			body: "Unconfigured power type. Please configure the power type and try again.",
			want: &MAASUnavailableError{Op: "deploy", SystemID: sid, StatusCode: 500,
				Message: "Unconfigured power type. Please configure the power type and try again."},
		},
		{
			name: "503 with Retry-After", method: http.MethodGet, status: 503, call: get,
			body: "No connections available.", headers: []string{"Retry-After", "10"},
			want: &MAASUnavailableError{Op: "get machine", SystemID: sid, StatusCode: 503, Message: "No connections available.", RetryAfter: 10},
		},
		{
			name: "504", method: http.MethodGet, status: 504, call: get, body: "Timed out waiting for the rack.",
			want: &MAASUnavailableError{Op: "get machine", SystemID: sid, StatusCode: 504, Message: "Timed out waiting for the rack."},
		},
		{
			name: "429 with an HTTP-date Retry-After", method: http.MethodGet, status: 429, call: get, body: "slow down",
			headers: []string{"Retry-After", testNow.Add(30 * time.Second).Format(http.TimeFormat)},
			want:    &MAASUnavailableError{Op: "get machine", SystemID: sid, StatusCode: 429, Message: "slow down", RetryAfter: 30},
		},
		{
			name: "301 redirect", method: http.MethodGet, status: 301, call: get, body: "",
			headers: []string{"Location", "/MAAS/api/2.0/machines/k3tgaq"},
			want: &MAASUnexpectedResponseError{Op: "get machine", SystemID: sid, StatusCode: 301,
				Message: "redirected: check that the base URL is the region's /MAAS root"},
		},
		{
			name: "410 gone", method: http.MethodGet, status: 410, call: get, body: "API 1.0 has been removed.",
			want: &MAASUnexpectedResponseError{Op: "get machine", SystemID: sid, StatusCode: 410, Message: "API 1.0 has been removed."},
		},
		{
			name: "200 that is not JSON", method: http.MethodGet, status: 200, call: get,
			body: "<html><body>Please log in</body></html>",
			want: &MAASUnexpectedResponseError{Op: "get machine", SystemID: sid, StatusCode: 200,
				Message: "reply is not JSON (syntax error at offset 0)"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeMAAS(t)
			f.on(tc.method, "machines/"+sid+"/", tc.op, tc.status, tc.body, tc.headers...)
			err := tc.call(f.client())

			require.Error(t, err)
			assert.Equal(t, tc.want, err)
			if tc.wantMsg != "" {
				assert.Equal(t, tc.wantMsg, err.Error())
			}
			assert.NotContains(t, err.Error(), testTokenKey)
			// One request: the client never retries, Retry-After or not.
			assert.Len(t, f.requests(), 1)
		})
	}
}

func TestTimeoutFromContextDeadline(t *testing.T) {
	f := newFakeMAAS(t)
	arrived := f.onHang(http.MethodGet, "machines/k3tgaq/", "query_power_state")
	c := f.client()
	ctx := newManualDeadline()

	errc := make(chan error, 1)
	go func() {
		_, err := c.PowerState(ctx, "k3tgaq")
		errc <- err
	}()
	<-arrived
	ctx.fire()
	err := <-errc

	var te *MAASTimeoutError
	require.ErrorAs(t, err, &te)
	assert.Equal(t, &MAASTimeoutError{Op: "query_power_state", SystemID: "k3tgaq", cause: context.DeadlineExceeded}, te)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, "maas query_power_state k3tgaq: timed out", err.Error())
}

func TestExpiredDeadlineNeverReachesMAAS(t *testing.T) {
	f := newFakeMAAS(t)
	ctx, cancel := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancel()

	_, err := f.client().Get(ctx, "k3tgaq")

	var te *MAASTimeoutError
	require.ErrorAs(t, err, &te)
	assert.Empty(t, f.requests())
}

func TestCancelledIsTransportError(t *testing.T) {
	f := newFakeMAAS(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()

	_, err := f.client().Get(ctx, "k3tgaq")

	var tr *MAASTransportError
	require.ErrorAs(t, err, &tr)
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, "maas get machine k3tgaq: transport: request cancelled", err.Error())
}

func TestTransportFailure(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	base := srv.URL + "/MAAS"
	srv.Close() // nothing listens there any more

	c, err := NewClient(base, testKey)
	require.NoError(t, err)
	_, err = c.Release(context.Background(), "k3tgaq", MachineReleaseParams{Erase: true})

	var tr *MAASTransportError
	require.ErrorAs(t, err, &tr)
	assert.Equal(t, "release", tr.Op)
	assert.Equal(t, "k3tgaq", tr.SystemID)
	assert.Contains(t, tr.Message, "connection refused")
	// The url.Error wrapper (which repeats the URL) is dropped.
	assert.NotContains(t, err.Error(), "/MAAS/api/2.0/")
	assert.NotContains(t, err.Error(), testTokenSecret)
}

// deadlineRecorder is a transport that records each request's context
// deadline and answers {"state": "on"}.
type deadlineRecorder struct {
	mu        sync.Mutex
	deadlines []time.Time
	has       []bool
}

func (d *deadlineRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	dl, ok := req.Context().Deadline()
	d.mu.Lock()
	d.deadlines = append(d.deadlines, dl)
	d.has = append(d.has, ok)
	d.mu.Unlock()
	return &http.Response{
		StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(`{"state": "on"}`)), Request: req,
	}, nil
}

func TestDeadlineComesFromContext(t *testing.T) {
	rec := &deadlineRecorder{}
	// A client-level Timeout would override the context: it is ignored.
	hc := &http.Client{Transport: rec, Timeout: time.Nanosecond}
	c, err := NewClient("http://maas.invalid:5240/MAAS", testKey, WithHTTPClient(hc), WithDefaultTimeout(time.Minute))
	require.NoError(t, err)

	far := time.Now().Add(10 * time.Minute)
	ctx, cancel := context.WithDeadline(context.Background(), far)
	defer cancel()
	state, err := c.PowerState(ctx, "k3tgaq")
	require.NoError(t, err)
	assert.Equal(t, "on", state)

	before := time.Now()
	_, err = c.PowerState(context.Background(), "k3tgaq")
	require.NoError(t, err)
	after := time.Now()

	require.Len(t, rec.deadlines, 2)
	assert.True(t, rec.has[0])
	assert.True(t, rec.deadlines[0].Equal(far), "the context deadline wins even when later than the default")
	assert.True(t, rec.has[1], "a context without deadline gets the default bound")
	assert.False(t, rec.deadlines[1].Before(before.Add(time.Minute)))
	assert.False(t, rec.deadlines[1].After(after.Add(time.Minute)))
}

func TestRequestHeaders(t *testing.T) {
	f := newFakeMAAS(t)
	f.onFile(http.MethodGet, "machines/k3tgaq/", "", "machine-deployed-maas-3.5.json")
	_, err := f.client(WithUserAgent("maasflow-test/1")).Get(context.Background(), "k3tgaq")
	require.NoError(t, err)

	req := f.only()
	assert.Equal(t, "maasflow-test/1", req.Header.Get("User-Agent"))
	assert.Equal(t, "application/json", req.Header.Get("Accept"))
	assert.Empty(t, req.Header.Get("Content-Type"), "a GET has no body")
	assert.True(t, strings.HasPrefix(req.Header.Get("Authorization"), "OAuth "))
}

func TestEmptyArgumentsAreRefusedLocally(t *testing.T) {
	f := newFakeMAAS(t)
	c := f.client()
	ctx := context.Background()
	calls := map[string]func() error{
		"get":              func() error { _, err := c.Get(ctx, ""); return err },
		"deploy":           func() error { _, err := c.Deploy(ctx, " ", MachineDeployParams{}); return err },
		"delete":           func() error { return c.Delete(ctx, "") },
		"power on":         func() error { return c.PowerOn(ctx, "") },
		"find by hostname": func() error { _, err := c.FindByHostname(ctx, ""); return err },
		"find by MAC":      func() error { _, err := c.FindByMAC(ctx, ""); return err },
		"find by power":    func() error { _, err := c.FindByPowerAddress(ctx, ""); return err },
		"events":           func() error { _, err := c.Events(ctx, EventQuery{}); return err },
		"script results":   func() error { _, err := c.ScriptResults(ctx, "k3tgaq", "release"); return err },
		"storage layout":   func() error { return c.SetStorageLayout(ctx, "k3tgaq", StorageLayoutParams{}) },
		"link mode":        func() error { _, err := c.LinkSubnet(ctx, "k3tgaq", 41, LinkSubnetParams{}); return err },
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			var bad *MAASBadRequestError
			require.ErrorAs(t, call(), &bad)
		})
	}
	assert.Empty(t, f.requests(), "nothing reaches MAAS")
}

func TestErrorsAreTypedNotWrapped(t *testing.T) {
	f := newFakeMAAS(t)
	f.on(http.MethodPost, "machines/k3tgaq/", "abort", 409, "Cannot abort in current state: node k3tgaq is in state Deployed.")
	_, err := f.client().Abort(context.Background(), "k3tgaq", "")

	// The ASL sees the bare type name, so the port returns the typed
	// pointer itself, not a wrapper.
	_, ok := err.(*MAASConflictError) //nolint:errorlint // the point is that no wrapper is in between
	assert.True(t, ok)
	// What aws-lambda-go reports as the error name.
	assert.Equal(t, "MAASConflictError", reflect.TypeOf(err).Elem().Name())
}

func TestClientsOfOneRegionShareATransport(t *testing.T) {
	key := testKey
	transport := func(url string) http.RoundTripper {
		c, err := NewClient(url, key)
		require.NoError(t, err)
		return c.http.Transport
	}
	a := transport("http://maas-a.example:5240/MAAS")
	require.NotNil(t, a)
	assert.Same(t, a, transport("http://maas-a.example:5240/MAAS/"), "a client per call reuses the region's connections")
	assert.NotSame(t, a, transport("http://maas-b.example:5240/MAAS"), "each region has its own")

	own := &http.Transport{}
	c, err := NewClient("http://maas-a.example:5240/MAAS", key, WithHTTPClient(&http.Client{Transport: own}))
	require.NoError(t, err)
	assert.Same(t, own, c.http.Transport, "an explicit HTTP client is kept")
}
