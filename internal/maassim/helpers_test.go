package maassim

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/clock"
)

// testKey is the API key tests use; its secret is what a leak would show.
const testKey = "ck1234567890:tk1234567890:topsecretsignaturevalue"

var testStart = time.Date(2025, 1, 7, 10, 0, 0, 0, time.UTC)

// harness is a simulator on a fake clock behind an httptest server.
type harness struct {
	sim   *Simulator
	clock *clockwork.FakeClock
	srv   *httptest.Server
}

func newHarness(t *testing.T, mutate ...func(*Options)) *harness {
	t.Helper()
	fc := clock.NewFake(testStart)
	o := Options{APIKey: testKey, Clock: fc, Seed: 42}
	for _, f := range mutate {
		f(&o)
	}
	sim := New(o)
	srv := httptest.NewServer(sim)
	t.Cleanup(func() {
		srv.Close()
		sim.Close()
	})
	return &harness{sim: sim, clock: fc, srv: srv}
}

// authHeader signs like gomaasapi: PLAINTEXT, escaped values.
func authHeader(key string) string {
	parts := strings.SplitN(key, ":", 3)
	return fmt.Sprintf(`OAuth realm="MAAS API", oauth_consumer_key="%s", oauth_token="%s", oauth_signature_method="PLAINTEXT", oauth_signature="%s", oauth_timestamp="%d", oauth_nonce="n%d", oauth_version="1.0"`,
		url.QueryEscape(parts[0]), url.QueryEscape(parts[1]), url.QueryEscape("&"+parts[2]), time.Now().Unix(), time.Now().UnixNano())
}

type apiResp struct {
	code   int
	body   []byte
	header http.Header
}

func (r apiResp) json(t *testing.T, v any) {
	t.Helper()
	require.NoError(t, json.Unmarshal(r.body, v), "body: %s", r.body)
}

func (r apiResp) obj(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	r.json(t, &m)
	return m
}

// call sends a signed MAAS request. path is relative to /MAAS/api/2.0/;
// op goes in the query; params go in the query for GET/DELETE and in an
// urlencoded body for POST/PUT, as gomaasapi sends them.
func (h *harness) call(t *testing.T, method, path, op string, params url.Values) apiResp {
	t.Helper()
	return h.callAs(t, testKey, method, path, op, params)
}

func (h *harness) callAs(t *testing.T, key, method, path, op string, params url.Values) apiResp {
	t.Helper()
	u := h.srv.URL + apiPrefix + path
	q := url.Values{}
	if op != "" {
		q.Set("op", op)
	}
	var body io.Reader
	if method == http.MethodGet || method == http.MethodDelete {
		for k, vs := range params {
			q[k] = vs
		}
	} else if params != nil {
		body = strings.NewReader(params.Encode())
	}
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(context.Background(), method, u, body)
	require.NoError(t, err)
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if key != "" {
		req.Header.Set("Authorization", authHeader(key))
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return apiResp{code: resp.StatusCode, body: b, header: resp.Header}
}

func (h *harness) machine(t *testing.T, sid string) map[string]any {
	t.Helper()
	r := h.call(t, http.MethodGet, "machines/"+sid+"/", "", nil)
	require.Equal(t, http.StatusOK, r.code, "body: %s", r.body)
	return r.obj(t)
}

func (h *harness) statusName(t *testing.T, sid string) string {
	t.Helper()
	return h.machine(t, sid)["status_name"].(string)
}

// host adds hardware with the given faults and returns its BMC address.
func (h *harness) host(t *testing.T, n int, f Faults) string {
	t.Helper()
	bmc := fmt.Sprintf("10.10.0.%d", n)
	require.NoError(t, h.sim.AddHardware(Hardware{BMCIP: bmc, PXEMAC: fmt.Sprintf("0c:c4:7a:00:00:%02x", n), Faults: f}))
	return bmc
}

// create makes an IPMI machine for the host at bmc without commissioning.
func (h *harness) create(t *testing.T, hostname, bmc string, commission bool) string {
	t.Helper()
	r := h.call(t, http.MethodPost, "machines/", "", url.Values{
		"hostname": {hostname}, "power_type": {"ipmi"}, "commission": {fmt.Sprint(commission)},
		"power_parameters_power_address": {bmc}, "power_parameters_power_user": {"admin"},
		"power_parameters_power_pass": {"bmc-password-1"},
	})
	require.Equal(t, http.StatusOK, r.code, "body: %s", r.body)
	return r.obj(t)["system_id"].(string)
}

// ready drives a new machine through commissioning and testing.
func (h *harness) ready(t *testing.T, hostname string, n int, f Faults) string {
	t.Helper()
	sid := h.create(t, hostname, h.host(t, n, f), false)
	r := h.call(t, http.MethodPost, "machines/"+sid+"/", "commission", url.Values{"skip_bmc_config": {"1"}})
	require.Equal(t, http.StatusOK, r.code, "body: %s", r.body)
	h.clock.Advance(3 * time.Minute)
	require.Equal(t, "Ready", h.statusName(t, sid))
	return sid
}

// deployed allocates and deploys a Ready machine and waits out the install.
func (h *harness) deployed(t *testing.T, sid string, userData string) {
	t.Helper()
	r := h.call(t, http.MethodPost, "machines/"+sid+"/", "deploy", url.Values{"user_data": {userData}})
	require.Equal(t, http.StatusOK, r.code, "body: %s", r.body)
	h.clock.Advance(8 * time.Minute)
}

// events returns the machine's events at level DEBUG and above, newest first.
func (h *harness) events(t *testing.T, sid string) []eventJSON {
	t.Helper()
	r := h.call(t, http.MethodGet, "events/", "query", url.Values{"id": {sid}, "level": {"DEBUG"}, "limit": {"1000"}})
	require.Equal(t, http.StatusOK, r.code, "body: %s", r.body)
	var out struct {
		Events []eventJSON `json:"events"`
	}
	r.json(t, &out)
	return out.Events
}

func hasEvent(events []eventJSON, typ, descPart string) bool {
	for _, e := range events {
		if e.Type == typ && strings.Contains(e.Description, descPart) {
			return true
		}
	}
	return false
}

func newTestLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func (h *harness) hardware(t *testing.T) []hardwareView {
	t.Helper()
	resp := httpGet(t, h.srv.URL+"/_sim/hardware")
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var out []hardwareView
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return out
}

// httpGet is an unsigned GET; the caller closes the body.
func httpGet(t *testing.T, u string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, u, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	return resp
}
