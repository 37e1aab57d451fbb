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
	// bodies holds every response body the test received, so the secret
	// test can check them all.
	mu     sync.Mutex
	bodies []string
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
	return &env{t: t, stack: s, dataDir: dir, logs: logs}
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
	e.mu.Lock()
	e.bodies = append(e.bodies, string(out))
	e.mu.Unlock()
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
// policy and an SKU, through the admin API.
func (e *env) setup(sitePolicy, profilePolicy map[string]any) fixture {
	e.t.Helper()
	policy := map[string]any{"bootstrap": e.stack.SiteBootstrap}
	for k, v := range sitePolicy {
		policy[k] = v
	}
	site := e.admin("POST", "/api/v1/admin/maas-sites", map[string]any{
		"name": "site-" + fmt.Sprint(time.Now().UnixNano()), "maas_url": e.stack.SimURL, "policy": policy,
	}, http.StatusCreated)
	id := site["id"].(string)
	f := fixture{SiteID: id, BMCPassword: "bmc-pass-" + fmt.Sprint(time.Now().UnixNano())}
	e.admin("POST", "/api/v1/admin/maas-sites/"+id+"/credentials", map[string]any{
		"maas_api_key": e.stack.SimAPIKey, "bmc_username": "maasflow", "bmc_password": f.BMCPassword,
	}, http.StatusOK)
	probe := e.admin("POST", "/api/v1/admin/maas-sites/"+id+"/probe", nil, http.StatusOK)
	require.Equal(e.t, true, probe["healthy"], probe)
	prof := e.admin("POST", "/api/v1/admin/maas-sites/"+id+"/profiles", map[string]any{
		"name": "gpu-jammy", "architecture": "amd64/generic", "distro_series": "jammy", "policy": profilePolicy,
	}, http.StatusCreated)
	f.ProfileID = prof["id"].(string)
	f.SKUID = "h100-8x-" + id[:8]
	e.admin("POST", "/api/v1/admin/skus", map[string]any{"id": f.SKUID, "gpu_model": "H100", "gpus_total": 8}, http.StatusCreated)
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
	out := e.admin("POST", "/api/v1/admin/onboardings", map[string]any{
		"site_id": f.SiteID, "profile_id": f.ProfileID, "sku_id": f.SKUID, "hostname": hostname, "ipmi_ip": ipmiIP,
	}, http.StatusAccepted)
	return out["id"].(string)
}

// waitTerminal polls the onboarding until its status is no longer pending or
// running, and returns it.
func (e *env) waitTerminal(id string) map[string]any {
	e.t.Helper()
	deadline := time.Now().Add(terminalWait)
	for {
		o := e.admin("GET", "/api/v1/admin/onboardings/"+id, nil, http.StatusOK)
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
