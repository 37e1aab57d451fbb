package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/clock"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
	"github.com/maasflow/maasflow/shared/nodeid"
	"github.com/maasflow/maasflow/shared/secrets"
	"github.com/maasflow/maasflow/shared/store"
)

// The seeded secrets. Every test can check that none of them shows up in a
// response or a log line.
const (
	adminToken = "admin-bearer-8f3d1c"
	// secondAdminToken is another admin (carol): what needs two admins.
	secondAdminToken = "admin-bearer-second-5a7e"
	userToken        = "user-bearer-27ab90"
	seedAPIKey       = "ck9Xq2:tkB7wZ4mPq:sEcReT0aPiKeY77xx"
	seedBMCPass      = "bmc-Pa55w0rd-seeded"
)

var t0 = time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)

// harness is the API over the real store on minidyn, with fakes for the
// workflow and MAAS, a fake clock, sequential ids and captured logs.
type harness struct {
	t         testing.TB
	handler   http.Handler
	store     *store.Store
	db        store.DynamoDB
	clock     *clockwork.FakeClock
	starter   *fakeStarter
	stopper   *fakeStopper
	completer *fakeCompleter
	prober    *fakeProber
	machines  *fakeMachines
	secrets   *secrets.FileStore
	logs      *syncBuffer
	bodies    *syncBuffer // every response body, for the leak check
	refusals  *RefusalCounter
	seq       atomic.Int64
	nodeCA    *nodeid.CA
}

// newHarness builds the harness; wrap, when given, stands between the store
// and its database (to inject failures).
func newHarness(t testing.TB, wrap ...func(store.DynamoDB) store.DynamoDB) *harness {
	t.Helper()
	return newHarnessWith(t, testBundles, wrap...)
}

// newHarnessWith is newHarness with the deployment's bundle settings given.
func newHarnessWith(t testing.TB, bundles BundleConfig, wrap ...func(store.DynamoDB) store.DynamoDB) *harness {
	t.Helper()
	// Local mode's database: minidyn with the store's key conditions
	// registered as Go matchers.
	db, err := store.NewLocalDB(context.Background(), "")
	require.NoError(t, err)
	h := &harness{
		t:         t,
		clock:     clock.NewFake(t0),
		starter:   &fakeStarter{},
		stopper:   &fakeStopper{},
		completer: &fakeCompleter{},
		machines:  &fakeMachines{},
		prober:    &fakeProber{result: maas.ProbeResult{Version: "3.5.4", Capabilities: []string{"networks-management"}, Username: "maasflow", IsAdmin: true}},
		logs:      &syncBuffer{},
		bodies:    &syncBuffer{},
		refusals:  &RefusalCounter{},
	}
	h.db = db
	for _, w := range wrap {
		h.db = w(h.db)
	}
	h.store = store.New(h.db, "", h.clock.Now)
	h.secrets = secrets.NewFileStore(filepath.Join(t.TempDir(), "secrets.json"))
	h.nodeCA, err = nodeid.LoadOrCreateLocal(t.TempDir(), t0)
	require.NoError(t, err)
	h.handler = New(Config{}, h.deps(bundles))
	return h
}

// deps are the API's ports over the harness's fakes.
func (h *harness) deps(bundles BundleConfig) Deps {
	return Deps{
		Store:     h.store,
		Secrets:   h.secrets,
		Starter:   h.starter,
		Stopper:   h.stopper,
		Completer: h.completer,
		Prober:    h.prober,
		Bundles:   bundles,
		Auth: NewStaticTokens(map[string]Principal{
			adminToken:       {Subject: "alice", Admin: true},
			secondAdminToken: {Subject: "carol", Admin: true},
			userToken:        {Subject: "bob"},
		}),
		Clock:    h.clock,
		NewID:    func() string { return fmt.Sprintf("id-%04d", h.seq.Add(1)) },
		Logger:   slog.New(slog.NewJSONHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Refusals: h.refusals,
		Machines: h.machines,
		NodeCA:   h.nodeCA,

		NodeAPIURL: testNodeAPIURL,
	}
}

// call is one request; token "" sends no Authorization header.
type call struct {
	method, path string
	body         any // string is sent verbatim, anything else as JSON
	token        string
	header       map[string]string
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(r.body, &m), "body: %s", r.body)
	return m
}

// errorOf returns the envelope's code and message, checking its shape.
func (r response) errorOf(t testing.TB) (code, message string) {
	t.Helper()
	m := r.json(t)
	e, ok := m["error"].(map[string]any)
	require.True(t, ok, "error envelope in %s", r.body)
	assert.NotEmpty(t, e["correlation_id"])
	assert.Equal(t, r.header.Get(HeaderCorrelationID), e["correlation_id"])
	return e["code"].(string), e["message"].(string)
}

func (h *harness) do(c call) response {
	h.t.Helper()
	var body io.Reader
	switch b := c.body.(type) {
	case nil:
	case string:
		body = strings.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		require.NoError(h.t, err)
		body = bytes.NewReader(raw)
	}
	req := httptest.NewRequestWithContext(h.t.Context(), c.method, c.path, body)
	if c.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	for k, v := range c.header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.handler.ServeHTTP(rec, req)
	_, _ = h.bodies.Write(rec.Body.Bytes())
	return response{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
}

// admin sends a request with the admin token.
func (h *harness) admin(method, path string, body any) response {
	h.t.Helper()
	return h.do(call{method: method, path: path, body: body, token: adminToken})
}

// mustAdmin sends an admin request and requires the status.
func (h *harness) mustAdmin(status int, method, path string, body any) map[string]any {
	h.t.Helper()
	r := h.admin(method, path, body)
	require.Equal(h.t, status, r.status, "%s %s: %s", method, path, r.body)
	if status == http.StatusNoContent {
		return nil
	}
	return r.json(h.t)
}

// readySite creates a site with credentials and a healthy probe.
func (h *harness) readySite(name string) string {
	h.t.Helper()
	return h.readySiteWith(name, bootstrapPolicy(h.t))
}

// readySiteWith is readySite with the site policy given (nil: none).
func (h *harness) readySiteWith(name string, policy map[string]any) string {
	h.t.Helper()
	body := map[string]any{"name": name, "maas_url": "http://maas.example:5240/MAAS"}
	if policy != nil {
		body["policy"] = policy
	}
	site := h.mustAdmin(http.StatusCreated, "POST", "/api/v1/admin/maas-sites", body)
	id := site["id"].(string)
	h.mustAdmin(http.StatusOK, "POST", "/api/v1/admin/maas-sites/"+id+"/credentials",
		map[string]any{"maas_api_key": seedAPIKey, "bmc_username": "maasflow", "bmc_password": seedBMCPass})
	probe := h.mustAdmin(http.StatusOK, "POST", "/api/v1/admin/maas-sites/"+id+"/probe", nil)
	require.Equal(h.t, true, probe["healthy"])
	return id
}

func (h *harness) profile(siteID string, policy map[string]any) string {
	h.t.Helper()
	body := map[string]any{"name": "gpu-" + fmt.Sprint(h.seq.Load()), "architecture": "amd64/generic", "distro_series": "jammy"}
	if policy != nil {
		body["policy"] = policy
	}
	return h.mustAdmin(http.StatusCreated, "POST", "/api/v1/admin/maas-sites/"+siteID+"/profiles", body)["id"].(string)
}

func (h *harness) sku(id string) string {
	h.t.Helper()
	h.mustAdmin(http.StatusCreated, "POST", "/api/v1/admin/skus", map[string]any{"id": id, "gpu_model": "H100", "gpus_total": 8})
	return id
}

// fixture is a ready site, an active profile and an active SKU.
type fixture struct{ site, profile, sku string }

func (h *harness) fixture() fixture {
	h.t.Helper()
	site := h.readySite("site-" + fmt.Sprint(h.seq.Load()))
	return fixture{site: site, profile: h.profile(site, nil), sku: h.sku("h100-" + fmt.Sprint(h.seq.Load()))}
}

// onboarding is the request body for host; each host name has its own BMC
// address, as each server does (bmcFor).
func (f fixture) onboarding(host string) map[string]any {
	return map[string]any{"site_id": f.site, "profile_id": f.profile, "sku_id": f.sku, "hostname": host, "ipmi_ip": bmcFor(host)}
}

// bmcFor is a stable BMC address per host name (case-insensitive).
func bmcFor(host string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(strings.ToLower(host)))
	sum := h.Sum32()
	return fmt.Sprintf("10.%d.%d.%d", sum>>16&0xff, sum>>8&0xff, sum&0xff|1)
}

// auditFor returns the audit entries of an action, newest first.
func (h *harness) auditFor(action string) []domain.AuditEntry {
	h.t.Helper()
	all, err := h.store.ListAudit(context.Background(), 1000)
	require.NoError(h.t, err)
	var out []domain.AuditEntry
	for _, e := range all {
		if e.Action == action {
			out = append(out, e)
		}
	}
	return out
}

type fakeStarter struct {
	mu     sync.Mutex
	calls  []domain.Onboarding
	stages []domain.Stage // the start stage of each StartOnboardingAt
	err    error
	// rename, when set, makes StartOnboarding answer another execution id
	// than OnboardingExecutionID predicted.
	rename func(string) string
	// onStart, when set, runs once while a start is in flight (before it
	// answers): what a concurrent request does meanwhile.
	onStart func()
}

func (f *fakeStarter) StartOnboarding(_ context.Context, o domain.Onboarding) (string, error) {
	f.mu.Lock()
	hook := f.onStart
	f.onStart = nil
	f.mu.Unlock()
	if hook != nil {
		hook()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, o)
	if f.err != nil {
		return "", f.err
	}
	if f.rename != nil {
		return f.rename("exec-" + o.ID), nil
	}
	return "exec-" + o.ID, nil
}

func (f *fakeStarter) OnboardingExecutionID(o domain.Onboarding) string { return "exec-" + o.ID }

// StartOnboardingAt records the start stage with the onboarding.
func (f *fakeStarter) StartOnboardingAt(ctx context.Context, o domain.Onboarding, start domain.Stage) (string, error) {
	id, err := f.StartOnboarding(ctx, o)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stages = append(f.stages, start)
	if err == nil && o.Run > 0 {
		id = fmt.Sprintf("%s-r%d", id, o.Run)
	}
	return id, err
}

func (f *fakeStarter) started() []domain.Onboarding {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]domain.Onboarding(nil), f.calls...)
}

type stopCall struct {
	executionID, cause string
}

// fakeStopper records stops; before, when set, runs inside the stop (to
// act as the workflow ending meanwhile).
type fakeStopper struct {
	mu     sync.Mutex
	calls  []stopCall
	err    error
	before func()
}

func (f *fakeStopper) StopOnboarding(_ context.Context, executionID, cause string) error {
	f.mu.Lock()
	f.calls = append(f.calls, stopCall{executionID: executionID, cause: cause})
	before, err := f.before, f.err
	f.mu.Unlock()
	if before != nil {
		before()
	}
	return err
}

func (f *fakeStopper) stops() []stopCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]stopCall(nil), f.calls...)
}

type completion struct {
	taskToken string
	output    []byte
}

type fakeCompleter struct {
	mu    sync.Mutex
	calls []completion
	err   error
}

func (f *fakeCompleter) CompleteEnrollment(_ context.Context, taskToken string, output []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, completion{taskToken: taskToken, output: output})
	return f.err
}

func (f *fakeCompleter) completions() []completion {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]completion(nil), f.calls...)
}

type probeCall struct {
	url     string
	key     domain.Secret
	scripts []string
}

type fakeProber struct {
	mu     sync.Mutex
	calls  []probeCall
	result maas.ProbeResult
	err    error
	// missing are the scripts the fake region lacks.
	missing []string
}

// ProbeScripts answers the set result; of the scripts asked for, those in
// missing are reported missing, as maas.SiteProber does for an admin key.
func (f *fakeProber) ProbeScripts(_ context.Context, url string, key domain.Secret, scripts []string) (maas.ProbeResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, probeCall{url: url, key: key, scripts: scripts})
	res := f.result
	if f.err == nil && res.IsAdmin {
		for _, s := range scripts {
			if slices.Contains(f.missing, s) {
				res.MissingScripts = append(res.MissingScripts, s)
			}
		}
	}
	return res, f.err
}

func (f *fakeProber) set(res maas.ProbeResult, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.result, f.err = res, err
}

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func newLogger(w *syncBuffer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
