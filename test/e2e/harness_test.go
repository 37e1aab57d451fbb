package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/client"
	"github.com/maasflow/maasflow/internal/localstack"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
)

// timeScale makes one simulated minute take 100 ms of wall time.
const timeScale = 600

// terminalWait bounds how long (wall time) a test waits for an onboarding to
// end; it is a safety net against a hung run, not a speed assertion.
const terminalWait = 60 * time.Second

// syncBuffer collects every log line the stack writes.
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

type env struct {
	t       *testing.T
	stack   *localstack.Stack
	dataDir string
	logs    *syncBuffer
	// api is the SDK on the stack's admin token: the suite drives the
	// admin API through it wherever it has the call.
	api *client.Client
	// bodies holds every response body the test received, so the secret
	// test can check them all.
	mu     sync.Mutex
	bodies []string
}

// keep records a response body the test received.
func (e *env) keep(body []byte) {
	e.mu.Lock()
	e.bodies = append(e.bodies, string(body))
	e.mu.Unlock()
}

// keeping is the SDK's transport: every answer's body is kept (keep)
// before the SDK reads it. An event stream is left alone: it has no end to
// read up to.
type keeping struct{ e *env }

func (k keeping) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil || strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, err
	}
	k.e.keep(body)
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

func startStack(t *testing.T) *env {
	t.Helper()
	return startStackIn(t, t.TempDir())
}

// startStackIn starts a stack on dataDir, which may hold an earlier stack's
// state.
func startStackIn(t *testing.T, dir string) *env {
	t.Helper()
	return startStackInAt(t, dir, timeScale)
}

// startStackAt starts a stack whose clock runs scale times faster than the
// wall clock: a test whose outcome turns on the workflow acting within so
// many simulated minutes of MAAS uses a slower clock than the suite's, so
// that a loaded machine's delays (the race detector, the other tests) cost
// it fewer simulated minutes.
func startStackAt(t *testing.T, scale float64) *env {
	t.Helper()
	return startStackInAt(t, t.TempDir(), scale)
}

func startStackInAt(t *testing.T, dir string, scale float64) *env {
	t.Helper()
	logs := &syncBuffer{}
	s, err := localstack.Start(context.Background(), localstack.Config{
		Listen:    "127.0.0.1:0",
		SimListen: "127.0.0.1:0",
		TimeScale: scale,
		DataDir:   dir,
		Logger:    slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		// At this time scale the default schedule would reconcile every half
		// second of wall time, and its drift events would land among the
		// events these tests count; reconcile_test.go runs its own.
		ReconcileInterval: -1,
		Admins:            map[string]string{secondAdminToken: "second-admin"},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return newEnv(t, s, dir, logs)
}

// newEnv is the suite's view of a started stack, with the SDK on its
// admin token.
// A benchmark's env has no *testing.T (t is nil).
func newEnv(tb testing.TB, s *localstack.Stack, dir string, logs *syncBuffer) *env {
	tb.Helper()
	t, _ := tb.(*testing.T)
	e := &env{t: t, stack: s, dataDir: dir, logs: logs}
	var err error
	e.api, err = client.New(s.APIURL, client.WithToken(s.AdminToken), client.WithHTTPClient(&http.Client{Transport: keeping{e}}))
	require.NoError(tb, err)
	return e
}

// ctx is the context of the suite's SDK calls.
func (e *env) ctx() context.Context { return context.Background() }

// asMap is an SDK answer's body as the JSON object the API sent, for the
// tests that read it member by member.
func (e *env) asMap(raw []byte) map[string]any {
	e.t.Helper()
	var v map[string]any
	require.NoError(e.t, json.Unmarshal(raw, &v), string(raw))
	return v
}

// policy is a policy given as JSON members, typed for the SDK; a member
// the policy does not know fails the test rather than being dropped.
func (e *env) policy(members map[string]any) *client.Policy {
	e.t.Helper()
	if members == nil {
		return nil
	}
	b, err := json.Marshal(members)
	require.NoError(e.t, err)
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var p client.Policy
	require.NoError(e.t, dec.Decode(&p), string(b))
	return &p
}

// call sends a JSON request and decodes the JSON answer, failing the test
// when the status is not want.
func (e *env) call(method, url, token string, body any, want int) map[string]any {
	e.t.Helper()
	status, out := e.raw(method, url, token, body)
	require.Equalf(e.t, want, status, "%s %s: %s", method, url, out)
	if len(out) == 0 {
		return nil
	}
	var v map[string]any
	require.NoError(e.t, json.Unmarshal(out, &v), string(out))
	return v
}

func (e *env) raw(method, url, token string, body any) (int, []byte) {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(e.t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, url, rd)
	require.NoError(e.t, err)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer func() { _ = resp.Body.Close() }()
	out, err := io.ReadAll(resp.Body)
	require.NoError(e.t, err)
	e.keep(out)
	return resp.StatusCode, out
}

// admin calls the admin API with the stack's admin token.
func (e *env) admin(method, path string, body any, want int) map[string]any {
	e.t.Helper()
	return e.call(method, e.stack.APIURL+path, e.stack.AdminToken, body, want)
}

// sim calls the simulator's control API.
func (e *env) sim(method, path string, body any, want int) map[string]any {
	e.t.Helper()
	base := strings.TrimSuffix(e.stack.SimURL, "/MAAS")
	return e.call(method, base+path, "", body, want)
}

// fixture is a site, profile and SKU ready for onboardings.
type fixture struct {
	SiteID, ProfileID, SKUID string
	BMCPassword              string
}

// setup creates a probed site with credentials, a profile with the given
// policy and an SKU, through the SDK.
func (e *env) setup(sitePolicy, profilePolicy map[string]any) fixture {
	e.t.Helper()
	policy := map[string]any{"bootstrap": e.stack.SiteBootstrap}
	for k, v := range sitePolicy {
		policy[k] = v
	}
	site, err := e.api.CreateSite(e.ctx(), client.SiteCreate{
		Name: "site-" + fmt.Sprint(time.Now().UnixNano()), MAASURL: e.stack.SimURL, Policy: e.policy(policy),
	})
	require.NoError(e.t, err)
	f := fixture{SiteID: site.ID, BMCPassword: "bmc-pass-" + fmt.Sprint(time.Now().UnixNano())}
	require.NoError(e.t, e.api.PutCredentials(e.ctx(), site.ID, client.Credentials{
		MAASAPIKey: e.stack.SimAPIKey, BMCUsername: "maasflow", BMCPassword: f.BMCPassword,
	}))
	probe, err := e.api.ProbeSite(e.ctx(), site.ID)
	require.NoError(e.t, err)
	require.True(e.t, probe.Healthy, "%+v", probe)
	prof, err := e.api.CreateProfile(e.ctx(), site.ID, client.ProfileCreate{
		Name: "gpu-jammy", Architecture: "amd64/generic", DistroSeries: "jammy", Policy: e.policy(profilePolicy),
	})
	require.NoError(e.t, err)
	f.ProfileID = prof.ID
	f.SKUID = "h100-8x-" + site.ID[:8]
	_, err = e.api.CreateSKU(e.ctx(), client.SKUCreate{ID: f.SKUID, GPUModel: "H100", GPUsTotal: 8})
	require.NoError(e.t, err)
	return f
}

// hardware adds a physical host to the simulator.
func (e *env) hardware(hostname, bmcIP, mac string, faults map[string]any) {
	e.t.Helper()
	e.sim("POST", "/_sim/hardware", map[string]any{
		"hostname": hostname, "bmc_ip": bmcIP, "pxe_mac": mac, "faults": faults,
	}, http.StatusCreated)
}

func (e *env) onboard(f fixture, hostname, ipmiIP string) string {
	e.t.Helper()
	o, err := e.api.CreateOnboarding(e.ctx(), client.OnboardingCreate{
		SiteID: f.SiteID, ProfileID: f.ProfileID, SKUID: f.SKUID, Hostname: hostname, IPMIIP: ipmiIP,
	})
	require.NoError(e.t, err)
	return o.ID
}

// onboarding reads the onboarding through the SDK, as the JSON object the
// API sent.
func (e *env) onboarding(id string) map[string]any {
	e.t.Helper()
	var raw []byte
	_, err := e.api.GetOnboarding(e.ctx(), id, client.RawResponse(&raw))
	require.NoError(e.t, err)
	return e.asMap(raw)
}

// waitTerminal polls the onboarding until its status is no longer pending or
// running, and returns it.
func (e *env) waitTerminal(id string) map[string]any {
	e.t.Helper()
	deadline := time.Now().Add(terminalWait)
	for {
		o := e.onboarding(id)
		switch o["status"] {
		case "pending", "running":
		default:
			return o
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("onboarding %s still %v at stage %v", id, o["status"], o["stage"])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// simCalls returns the simulator's MAAS API call counts keyed by
// "METHOD path op".
func (e *env) simCalls() map[string]int {
	e.t.Helper()
	out := e.sim("GET", "/_sim/calls", nil, http.StatusOK)
	counts := map[string]int{}
	calls, _ := out["calls"].([]any)
	for _, c := range calls {
		m := c.(map[string]any)
		key := fmt.Sprintf("%s %s %s", m["method"], m["path"], m["op"])
		counts[strings.TrimSpace(key)] += int(m["count"].(float64))
	}
	return counts
}

// mutatingCalls counts MAAS calls that change state (every POST, PUT or
// DELETE).
func mutatingCalls(counts map[string]int) int {
	n := 0
	for k, c := range counts {
		if !strings.HasPrefix(k, "GET ") {
			n += c
		}
	}
	return n
}

// callsWithOp sums the calls whose op is op.
func callsWithOp(counts map[string]int, op string) int {
	n := 0
	for k, c := range counts {
		if strings.HasSuffix(k, " "+op) {
			n += c
		}
	}
	return n
}

// maasClient talks to the simulator through the MAAS API, as an operator
// changing things behind maasflow's back would.
func (e *env) maasClient() *maas.Client {
	e.t.Helper()
	c, err := maas.NewClient(e.stack.SimURL, domain.Secret(e.stack.SimAPIKey))
	require.NoError(e.t, err)
	return c
}

// decommissionRecord reads the decommission through the SDK, as the JSON object
// the API sent.
func (e *env) decommissionRecord(id string) map[string]any {
	e.t.Helper()
	var raw []byte
	_, err := e.api.GetDecommission(e.ctx(), id, client.RawResponse(&raw))
	require.NoError(e.t, err)
	return e.asMap(raw)
}

// reasonOf is the reason of a recovery operation's body (nil: none); a
// body with anything else fails the test, as the SDK sends only the reason.
func (e *env) reasonOf(body map[string]any) string {
	e.t.Helper()
	reason, _ := body["reason"].(string)
	for k := range body {
		require.Equal(e.t, "reason", k, "the SDK sends a recovery operation's reason only")
	}
	return reason
}

// recoverOnboarding runs a recovery operation on an onboarding through the
// SDK and answers the JSON object the API sent.
func (e *env) recoverOnboarding(id string, op client.Operation, body map[string]any) map[string]any {
	e.t.Helper()
	var raw []byte
	var err error
	if op == domain.OpCancel {
		_, err = e.api.CancelOnboarding(e.ctx(), id, e.reasonOf(body), client.RawResponse(&raw))
	} else {
		_, err = e.api.RecoverOnboarding(e.ctx(), id, op, e.reasonOf(body), client.RawResponse(&raw))
	}
	require.NoError(e.t, err)
	return e.asMap(raw)
}

// recoverDecommission runs a recovery operation on a decommission through
// the SDK and answers the JSON object the API sent.
func (e *env) recoverDecommission(id string, op client.Operation, body map[string]any) map[string]any {
	e.t.Helper()
	var raw []byte
	_, err := e.api.RecoverDecommission(e.ctx(), id, op, e.reasonOf(body), client.RawResponse(&raw))
	require.NoError(e.t, err)
	return e.asMap(raw)
}

// nodeOp runs a node lifecycle operation (retire, reactivate, remove,
// bootstrap-bundle) through the SDK and answers the JSON object the API
// sent.
func (e *env) nodeOp(id, op string) map[string]any {
	e.t.Helper()
	var raw []byte
	var err error
	keep := client.RawResponse(&raw)
	switch op {
	case "retire":
		_, err = e.api.RetireNode(e.ctx(), id, keep)
	case "reactivate":
		_, err = e.api.ReactivateNode(e.ctx(), id, keep)
	case "remove":
		_, err = e.api.RemoveNode(e.ctx(), id, keep)
	case "bootstrap-bundle":
		_, err = e.api.ReissueBundle(e.ctx(), id, keep)
	default:
		e.t.Fatalf("no node operation %q", op)
	}
	require.NoError(e.t, err)
	return e.asMap(raw)
}

// audit reads the newest audit entries (limit 0: the API's page size)
// through the SDK, as the JSON object the API sent.
func (e *env) audit(limit int) map[string]any {
	e.t.Helper()
	var raw []byte
	_, err := e.api.ListAudit(e.ctx(), limit, "", client.RawResponse(&raw))
	require.NoError(e.t, err)
	return e.asMap(raw)
}

// batch reads an onboarding batch through the SDK, as the JSON object the
// API sent.
func (e *env) batch(id string) map[string]any {
	e.t.Helper()
	var raw []byte
	_, err := e.api.GetBatch(e.ctx(), id, client.RawResponse(&raw))
	require.NoError(e.t, err)
	return e.asMap(raw)
}
