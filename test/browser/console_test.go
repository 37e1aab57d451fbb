package browser

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/internal/localstack"
)

// timeScale makes one simulated minute take 100 ms of wall time, as in the
// e2e suite.
const timeScale = 600

// uiWait bounds how long (wall time) the test waits for something to appear
// on screen; a safety net against a hung run, not a speed assertion.
const uiWait = 45 * time.Second

// stack is a running local stack and the admin API calls the test makes
// beside the browser.
type stack struct {
	t *testing.T
	s *localstack.Stack
}

func startStack(t *testing.T) *stack {
	t.Helper()
	s, err := localstack.Start(context.Background(), localstack.Config{
		Listen:            "127.0.0.1:0",
		SimListen:         "127.0.0.1:0",
		TimeScale:         timeScale,
		DataDir:           t.TempDir(),
		Logger:            slog.New(slog.NewJSONHandler(io.Discard, nil)),
		ReconcileInterval: -1,
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return &stack{t: t, s: s}
}

func (st *stack) call(method, url string, auth bool, body any, want int) map[string]any {
	st.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(st.t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, url, rd)
	require.NoError(st.t, err)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if auth {
		req.Header.Set("Authorization", "Bearer "+st.s.AdminToken)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(st.t, err)
	defer func() { _ = resp.Body.Close() }()
	out, err := io.ReadAll(resp.Body)
	require.NoError(st.t, err)
	require.Equalf(st.t, want, resp.StatusCode, "%s %s: %s", method, url, out)
	var v map[string]any
	if len(out) > 0 {
		require.NoError(st.t, json.Unmarshal(out, &v), string(out))
	}
	return v
}

func (st *stack) admin(method, path string, body any, want int) map[string]any {
	st.t.Helper()
	return st.call(method, st.s.APIURL+path, true, body, want)
}

// fixture makes a probed site with credentials, a profile and an SKU, and
// returns the body of an onboarding request without its host fields.
func (st *stack) fixture() map[string]any {
	st.t.Helper()
	site := st.admin("POST", "/api/v1/admin/maas-sites", map[string]any{
		"name": "rack-a", "maas_url": st.s.SimURL, "policy": map[string]any{"bootstrap": st.s.SiteBootstrap},
	}, http.StatusCreated)
	id := site["id"].(string)
	st.admin("POST", "/api/v1/admin/maas-sites/"+id+"/credentials", map[string]any{
		"maas_api_key": st.s.SimAPIKey, "bmc_username": "maasflow", "bmc_password": "bmc-secret-1",
	}, http.StatusOK)
	st.admin("POST", "/api/v1/admin/maas-sites/"+id+"/probe", nil, http.StatusOK)
	prof := st.admin("POST", "/api/v1/admin/maas-sites/"+id+"/profiles", map[string]any{
		"name": "gpu-jammy", "architecture": "amd64/generic", "distro_series": "jammy",
		"policy": map[string]any{"enrollment_timeout_seconds": 86400},
	}, http.StatusCreated)
	st.admin("POST", "/api/v1/admin/skus", map[string]any{"id": "h100-8x", "gpu_model": "H100", "gpus_total": 8}, http.StatusCreated)
	return map[string]any{"site_id": id, "profile_id": prof["id"], "sku_id": "h100-8x"}
}

// onboard adds a simulated host and onboards it through the admin API.
func (st *stack) onboard(fx map[string]any, hostname, bmcIP, mac string, faults map[string]any) string {
	st.t.Helper()
	sim := strings.TrimSuffix(st.s.SimURL, "/MAAS")
	st.call("POST", sim+"/_sim/hardware", false, map[string]any{
		"hostname": hostname, "bmc_ip": bmcIP, "pxe_mac": mac, "faults": faults,
	}, http.StatusCreated)
	body := map[string]any{"hostname": hostname, "ipmi_ip": bmcIP}
	for k, v := range fx {
		body[k] = v
	}
	return st.admin("POST", "/api/v1/admin/onboardings", body, http.StatusAccepted)["id"].(string)
}

// waitStage polls the API until the onboarding is in stage.
func (st *stack) waitStage(id, stage string) {
	st.t.Helper()
	deadline := time.Now().Add(uiWait)
	for {
		o := st.admin("GET", "/api/v1/admin/onboardings/"+id, nil, http.StatusOK)
		if o["stage"] == stage {
			return
		}
		if time.Now().After(deadline) {
			st.t.Fatalf("onboarding %s still %v at stage %v", id, o["status"], o["stage"])
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// browser starts Debian's chromium headless on a fresh profile and returns
// a tab; page errors (uncaught exceptions, console errors) are collected in
// the returned function's answer.
func browser(t *testing.T) (context.Context, func() []string) {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		msg := "the console's browser test needs Debian's chromium on PATH (apt-get install -y chromium)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	// Chromium's helpers may still be writing the profile when the browser
	// has closed, so its directory is removed best-effort rather than by
	// t.TempDir's strict cleanup.
	profile, err := os.MkdirTemp("", "maasflow-chromium-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(profile) })
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx, chromedp.WithErrorf(func(format string, args ...any) {
		// This chromium is newer than the protocol bindings: events they
		// cannot decode are noise, every other error is shown.
		msg := fmt.Sprintf(format, args...)
		if !strings.Contains(msg, "could not unmarshal event") && !strings.Contains(msg, "unhandled node event") {
			// log, not t.Log: chromedp may report after the test ended.
			log.Print(msg)
		}
	}))
	ctx, cancelTime := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() { cancelTime(); cancelTab(); cancelAlloc() })

	var mu sync.Mutex
	var problems []string
	chromedp.ListenTarget(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			problems = append(problems, "exception: "+ev.ExceptionDetails.Error())
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.APITypeError {
				var parts []string
				for _, a := range ev.Args {
					parts = append(parts, string(a.Value)+a.Description)
				}
				problems = append(problems, "console error: "+strings.Join(parts, " "))
			}
		}
	})
	require.NoError(t, chromedp.Run(ctx), "start chromium")
	return ctx, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), problems...)
	}
}

// clickJS clicks the element in one step of the page's own: a view that a
// push re-renders between finding a node and clicking it cannot make the
// click miss.
func clickJS(sel string) chromedp.Action {
	return chromedp.Evaluate(`document.querySelector(`+strconv.Quote(sel)+`).click()`, nil)
}

// waitJS waits until the expression is true in the page.
func waitJS(expr string) chromedp.Action {
	return chromedp.Poll(expr, nil, chromedp.WithPollingTimeout(uiWait), chromedp.WithPollingInterval(100*time.Millisecond))
}

// run runs the actions and, when one fails, logs what the page showed.
func run(t *testing.T, ctx context.Context, actions ...chromedp.Action) {
	t.Helper()
	err := chromedp.Run(ctx, actions...)
	if err != nil {
		var view, url string
		_ = chromedp.Run(ctx, chromedp.Location(&url), chromedp.Text("body", &view, chromedp.ByQuery))
		t.Fatalf("%v\nat %s the page showed:\n%s", err, url, view)
	}
}

func text(sel string, out *string) chromedp.Action {
	return chromedp.Text(sel, out, chromedp.ByQuery)
}

func screenshot(t *testing.T, ctx context.Context, dir, name string) string {
	t.Helper()
	var png []byte
	// Quality 100 makes chromedp ask for a PNG.
	run(t, ctx, chromedp.FullScreenshot(&png, 100))
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, png, 0o600))
	t.Logf("screenshot %s", p)
	return p
}

// copyToDocs refreshes the docs' picture of the console from a screenshot
// when MAASFLOW_UPDATE_DOCS_SCREENSHOTS=1, so that an ordinary test run
// leaves the tree as it found it; the screenshots stay in the test's
// artifact directory either way.
func copyToDocs(t *testing.T, src, name string) {
	t.Helper()
	if os.Getenv("MAASFLOW_UPDATE_DOCS_SCREENSHOTS") != "1" {
		return
	}
	b, err := os.ReadFile(src)
	require.NoError(t, err)
	// The docs' pictures are read by everyone who checks out the tree.
	require.NoError(t, os.WriteFile(filepath.Join("..", "..", "docs", name), b, 0o644)) //nolint:gosec // a public picture, no secret
}

func TestConsoleSignInWatchAndRecover(t *testing.T) {
	ctx, problems := browser(t)
	st := startStack(t)
	// Kept with `go test -artifacts` (under -outputdir), else removed with the test.
	shots := t.ArtifactDir()
	fx := st.fixture()
	console := st.s.APIURL + "/console/"

	// Signing in: the form, then the overview; the token is in
	// sessionStorage and nowhere in the URL.
	var heading, url, stored, refused string
	run(t, ctx,
		chromedp.Navigate(console),
		chromedp.WaitVisible("#token", chromedp.ByQuery),
		chromedp.SendKeys("#token", "not-the-token", chromedp.ByQuery),
		chromedp.Click(`#signin-form button[type="submit"]`, chromedp.ByQuery),
		waitJS(`document.getElementById("signin-error").textContent !== ""`),
		text("#signin-error", &refused),
		chromedp.SendKeys("#token", st.s.AdminToken, chromedp.ByQuery),
		chromedp.Click(`#signin-form button[type="submit"]`, chromedp.ByQuery),
		waitJS(`document.querySelector("#view h1") && document.querySelector("#view h1").textContent === "Fleet overview"`),
		text("#view h1", &heading),
		chromedp.Location(&url),
		chromedp.Evaluate(`sessionStorage.getItem("maasflow.adminToken")`, &stored),
	)
	assert.Equal(t, "The token was refused; sign in again.", refused)
	assert.Equal(t, "Fleet overview", heading)
	assert.Equal(t, st.s.AdminToken, stored)
	assert.NotContains(t, url, st.s.AdminToken)

	// The overview, open before the host exists, follows its onboarding
	// without being reloaded.
	var before string
	run(t, ctx,
		waitJS(`document.querySelector('td[data-status="completed"]') !== null`),
		text(`td[data-status="completed"]`, &before),
	)
	require.Equal(t, "0", before)
	run(t, ctx, chromedp.Evaluate(`window.sameDocument = "overview"; true`, nil))
	good := st.onboard(fx, "gpu-b1", "10.10.7.11", "52:54:00:00:71:01", nil)
	var overviewLive string
	var overviewSame, overviewPolls bool
	run(t, ctx,
		waitJS(`document.querySelector('td[data-status="completed"]').textContent === "1"`),
		text(".live-state", &overviewLive),
		chromedp.Evaluate(`window.sameDocument === "overview"`, &overviewSame),
		chromedp.Evaluate(`noStreams`, &overviewPolls),
	)
	assert.True(t, overviewSame, "the count moved without a reload")
	assert.Equal(t, "Live: the server pushes each change.", overviewLive)
	assert.False(t, overviewPolls, "pushed by the server's stream, not polled")

	// Its detail page: every stage as a bar, MAAS's events, no recovery.
	var detail string
	var bars []int
	run(t, ctx,
		chromedp.Navigate(console+"#/onboardings/"+good),
		waitJS(`document.querySelectorAll(".gantt .stage-row").length >= 1`),
		waitJS(`document.querySelector(".facts .status") && document.querySelector(".facts .status").textContent === "completed"`),
		text("#view", &detail),
		chromedp.Evaluate(`[document.querySelectorAll(".gantt .stage-row").length, document.querySelectorAll(".gantt .bar.ok").length]`, &bars),
	)
	assert.Contains(t, detail, "Onboarding gpu-b1")
	for _, stage := range []string{"commission", "wait_ready", "deploy", "wait_deployed"} {
		assert.Contains(t, detail, stage, "the stage timeline shows %s", stage)
	}
	assert.NotContains(t, detail, "MAAS has logged nothing", "MAAS events are listed")
	require.Len(t, bars, 2)
	assert.GreaterOrEqual(t, bars[0], 5, "one bar per stage of a whole onboarding")
	assert.Equal(t, bars[0], bars[1], "every stage of a completed run ended ok")
	assert.Contains(t, detail, "None allowed in this state.", "a completed run offers no recovery")
	runShot := screenshot(t, ctx, shots, "console-run.png")

	// Its local execution's graph: the state machine's states, those the
	// run entered drawn as visited with their times, the path as arcs.
	var graphSummary string
	var visited, allStates, taken, catches int
	var branchesSideBySide bool
	var graphWidth float64
	run(t, ctx,
		waitJS(`document.getElementById("graph") !== null`),
		clickJS("#graph summary"),
		waitJS(`document.querySelectorAll("#graph rect.visited").length > 0`),
		text("#graph summary", &graphSummary),
		chromedp.Evaluate(`document.querySelectorAll("#graph rect.visited").length`, &visited),
		chromedp.Evaluate(`document.querySelectorAll("#graph rect").length`, &allStates),
		chromedp.Evaluate(`document.querySelectorAll("#graph path.taken").length`, &taken),
		// A Choice's branches side by side: ReadyOutcome leads to both.
		chromedp.Evaluate(`(() => { const y = n => document.querySelector('#graph rect[data-state="' + n + '"]').getAttribute("y");
			return y("WaitForReady") === y("VerifyHardware") && Number(y("VerifyHardware")) > Number(y("ReadyOutcome")); })()`, &branchesSideBySide),
		chromedp.Evaluate(`document.querySelectorAll("#graph path.edge.catch").length`, &catches),
		chromedp.Evaluate(`document.querySelector("#graph svg").getBoundingClientRect().width`, &graphWidth),
		chromedp.ScrollIntoView("#graph-heading", chromedp.ByQuery),
	)
	assert.Contains(t, graphSummary, "onboarding, succeeded")
	assert.GreaterOrEqual(t, visited, 10, "every stage's states were entered")
	assert.Greater(t, allStates, visited, "states the run did not need are drawn too")
	assert.GreaterOrEqual(t, taken, visited-1, "one arc per step of the path")
	assert.True(t, branchesSideBySide, "a Choice's branches share the layer below it")
	assert.Greater(t, catches, 10, "the Catch transitions are drawn to their handlers")
	assert.LessOrEqual(t, graphWidth, 1280.0, "the graph fits a 1280 px window")
	graphShot := screenshot(t, ctx, shots, "console-graph.png")

	// A host that never enrolls: frozen from the console's button, with a
	// reason and a confirmation in the dialog.
	stuck := st.onboard(fx, "gpu-b2", "10.10.7.12", "52:54:00:00:71:02", map[string]any{"never_enrolls": true})
	// Its detail page, open from the start, shows each stage as the
	// server pushes it: no reload (a mark set on the page survives), no
	// polling (the page says it is live and has not fallen back).
	var liveState string
	var stillSamePage, polling bool
	run(t, ctx,
		chromedp.Navigate(console+"#/onboardings/"+stuck),
		waitJS(`document.querySelector("#view h1") && document.querySelector("#view h1").textContent === "Onboarding gpu-b2"`),
		chromedp.Evaluate(`window.sameDocument = "yes"; true`, nil),
		waitJS(`Array.from(document.querySelectorAll(".gantt .stage-row .name")).some(n => n.textContent === "wait_enrollment")`),
		text(".live-state", &liveState),
		chromedp.Evaluate(`window.sameDocument === "yes"`, &stillSamePage),
		chromedp.Evaluate(`noStreams`, &polling),
	)
	assert.Equal(t, "Live: the server pushes each change.", liveState)
	assert.True(t, stillSamePage, "the stages arrived without a reload")
	assert.False(t, polling, "the page follows the stream, it does not poll")
	// It waits in wait_enrollment for a simulated day: frozen there, that
	// stage is open, never exited.
	st.waitStage(stuck, "wait_enrollment")
	var dialogTitle, failure string
	var open bool
	var frozenBars int
	run(t, ctx,
		chromedp.Navigate(console+"#/onboardings/"+stuck),
		chromedp.WaitVisible(`button[data-op="mark-manual-intervention"]`, chromedp.ByQuery),
		chromedp.Focus(`button[data-op="mark-manual-intervention"]`, chromedp.ByQuery),
		chromedp.KeyEvent("\r"),
		chromedp.WaitVisible("#confirm-reason", chromedp.ByQuery),
		chromedp.Evaluate(`document.getElementById("confirm").open`, &open),
		text("#confirm-title", &dialogTitle),
		chromedp.SendKeys("#confirm-reason", "rack power work at 14:00", chromedp.ByQuery),
		chromedp.Click("#confirm-ok", chromedp.ByQuery),
		waitJS(`document.querySelector(".facts .status") && document.querySelector(".facts .status").textContent === "manual intervention"`),
		text("#failure", &failure),
		chromedp.Evaluate(`document.querySelectorAll(".gantt .bar.manual_intervention").length`, &frozenBars),
	)
	stoppedShot := screenshot(t, ctx, shots, "console-run-stopped.png")
	assert.True(t, open, "the operation asks in a dialog first")
	assert.Equal(t, "Run mark manual intervention?", dialogTitle)
	assert.Contains(t, failure, "FrozenByOperator")
	assert.Contains(t, failure, "rack power work at 14:00")
	assert.Equal(t, 1, frozenBars, "the stage the run was frozen in is drawn as stopped by an operator")
	o := st.admin("GET", "/api/v1/admin/onboardings/"+stuck, nil, http.StatusOK)
	assert.Equal(t, "manual_intervention", o["status"], "the button ran the operation")

	// The overview counts both and lists the one that needs an operator.
	var needs, completed, mi string
	run(t, ctx,
		chromedp.Navigate(console+"#/overview"),
		waitJS(`document.querySelector("#needs-operator") && document.querySelector("#needs-operator").textContent.includes("(1)")`),
		waitJS(`document.querySelector('td[data-status="completed"]') && document.querySelector('td[data-status="completed"]').textContent === "1"`),
		text(`table[aria-labelledby="needs-operator"]`, &needs),
		text(`td[data-status="completed"]`, &completed),
		text(`td[data-status="manual_intervention"]`, &mi),
	)
	assert.Contains(t, needs, "gpu-b2")
	assert.Contains(t, needs, "FrozenByOperator")
	assert.Equal(t, "1", completed)
	assert.Equal(t, "1", mi)
	overviewShot := screenshot(t, ctx, shots, "console-overview.png")

	// The list filters by status.
	var rows string
	run(t, ctx,
		chromedp.Navigate(console+"#/onboardings"),
		chromedp.WaitVisible("#status-filter", chromedp.ByQuery),
		// One step, so that a refresh cannot redraw the list between
		// choosing and the change event.
		chromedp.Evaluate(`(() => { const s = document.getElementById("status-filter"); s.value = "completed"; s.dispatchEvent(new Event("change")); })()`, nil),
		waitJS(`location.hash === "#/onboardings?status=completed" && document.querySelectorAll("#view tbody tr").length === 1`),
		text("#view tbody", &rows),
	)
	assert.Contains(t, rows, "gpu-b1")
	assert.NotContains(t, rows, "gpu-b2")

	// The stopped run is run again from its button, with a reason and a
	// confirmation (its token was revoked when it stopped, so the API
	// refuses a retry of the same run, and says so in the dialog; a rerun
	// starts a new attempt); the page follows the new attempt.
	var retryTitle, retryRefusal, attemptRun string
	run(t, ctx,
		chromedp.Navigate(console+"#/onboardings/"+stuck),
		chromedp.WaitVisible(`button[data-op="retry"]`, chromedp.ByQuery),
		clickJS(`button[data-op="retry"]`),
		chromedp.WaitVisible("#confirm-reason", chromedp.ByQuery),
		text("#confirm-title", &retryTitle),
		chromedp.SendKeys("#confirm-reason", "power is back", chromedp.ByQuery),
		chromedp.Click("#confirm-ok", chromedp.ByQuery),
		waitJS(`document.getElementById("confirm-error").textContent !== ""`),
		text("#confirm-error", &retryRefusal),
		chromedp.Click("#confirm-cancel", chromedp.ByQuery),
		waitJS(`!document.getElementById("confirm").open`),
		chromedp.WaitVisible(`button[data-op="rerun"]`, chromedp.ByQuery),
		clickJS(`button[data-op="rerun"]`),
		chromedp.WaitVisible("#confirm-reason", chromedp.ByQuery),
		chromedp.SendKeys("#confirm-reason", "power is back", chromedp.ByQuery),
		chromedp.Click("#confirm-ok", chromedp.ByQuery),
		waitJS(`!document.getElementById("confirm").open`),
		waitJS(`Array.from(document.querySelectorAll(".facts dd")).some(d => d.textContent.startsWith("2 / "))`),
		text(".facts", &attemptRun),
	)
	assert.Equal(t, "Run retry?", retryTitle)
	assert.Contains(t, retryRefusal, "use restart-clean", "the API's refusal is shown in the dialog")
	o = st.admin("GET", "/api/v1/admin/onboardings/"+stuck, nil, http.StatusOK)
	assert.EqualValues(t, 2, o["attempt"], "the button ran the rerun: a new attempt")
	assert.Contains(t, attemptRun, "2 / ", "the page shows the new attempt")

	// The completed host's node is decommissioned from its page: the mode
	// and a reason in the confirmation dialog, then the decommission's own
	// page follows it live to its end.
	goodOb := st.admin("GET", "/api/v1/admin/onboardings/"+good, nil, http.StatusOK)
	nodeID := goodOb["node_id"].(string)
	var decomTitle, decomText, decomHref string
	run(t, ctx,
		chromedp.Navigate(console+"#/nodes/"+nodeID),
		chromedp.WaitVisible("#node-decommission", chromedp.ByQuery),
		chromedp.Focus("#node-decommission", chromedp.ByQuery),
		chromedp.KeyEvent("\r"),
		chromedp.WaitVisible("#decom-mode", chromedp.ByQuery),
		text("#confirm-title", &decomTitle),
		text("#confirm-text", &decomText),
		chromedp.SetValue("#decom-mode", "storage_cleanup", chromedp.ByQuery),
		chromedp.SendKeys("#confirm-reason", "disk health check", chromedp.ByQuery),
		chromedp.Click("#confirm-ok", chromedp.ByQuery),
		waitJS(`!document.getElementById("confirm").open`),
		waitJS(`document.querySelector('#view a[href^="#/decommissions/"]') !== null`),
		chromedp.AttributeValue(`#view a[href^="#/decommissions/"]`, "href", &decomHref, nil, chromedp.ByQuery),
	)
	assert.Equal(t, "Decommission gpu-b1?", decomTitle)
	assert.Contains(t, decomText, "its disks are erased")
	require.NotEmpty(t, decomHref)
	var decomView string
	run(t, ctx,
		chromedp.Navigate(console+decomHref),
		waitJS(`document.querySelector("#view h1") && document.querySelector("#view h1").textContent === "Decommission gpu-b1"`),
		waitJS(`document.querySelector(".facts .status") && document.querySelector(".facts .status").textContent === "completed"`),
		text("#view", &decomView),
	)
	assert.Contains(t, decomView, "storage_cleanup")
	assert.Contains(t, decomView, "drain", "the decommission's stages are drawn")
	decomShot := screenshot(t, ctx, shots, "console-decommission.png")
	d := st.admin("GET", "/api/v1/admin/nodes/"+nodeID, nil, http.StatusOK)
	assert.Equal(t, "retired", d["status"], "a storage clean-up retires the node")

	// The other pages draw what the API holds. The sites list, open
	// before a site is added, shows it without a reload: pushed by the
	// list's stream.
	var sitesView, nodeView, sitesLive string
	var sitesSame, sitesPolls bool
	run(t, ctx,
		chromedp.Navigate(console+"#/sites"),
		waitJS(`document.querySelector("#view h1") && document.querySelector("#view h1").textContent === "Sites, profiles and SKUs"`),
		waitJS(`document.querySelector(".live-state") && document.querySelector(".live-state").textContent.startsWith("Live")`),
		chromedp.Evaluate(`window.sameDocument = "sites"; true`, nil),
	)
	st.admin("POST", "/api/v1/admin/maas-sites", map[string]any{"name": "rack-pushed", "maas_url": st.s.SimURL}, http.StatusCreated)
	run(t, ctx,
		waitJS(`document.querySelector('section[aria-label="Site rack-pushed"]') !== null`),
		chromedp.Evaluate(`window.sameDocument === "sites"`, &sitesSame),
		chromedp.Evaluate(`noStreams`, &sitesPolls),
		text(".live-state", &sitesLive),
		text("#view", &sitesView),
		chromedp.Navigate(console+"#/nodes/"+nodeID),
		waitJS(`document.getElementById("node-reactivate") !== null`),
		text("#view", &nodeView),
	)
	assert.True(t, sitesSame, "the new site arrived without a reload")
	assert.False(t, sitesPolls, "the sites list follows its stream, it does not poll")
	assert.Equal(t, "Live: the server pushes each change.", sitesLive)
	assert.Contains(t, sitesView, "gpu-jammy")
	assert.Contains(t, sitesView, "h100-8x")
	assert.Contains(t, nodeView, "retired")
	assert.Contains(t, nodeView, "storage_cleanup", "the node names its last decommission")
	nodeShot := screenshot(t, ctx, shots, "console-node.png")

	assert.Empty(t, problems(), "the page ran without errors")
	copyToDocs(t, graphShot, "console-graph.png")
	copyToDocs(t, decomShot, "console-decommission.png")
	copyToDocs(t, nodeShot, "console-node.png")
	copyToDocs(t, overviewShot, "console-overview.png")
	copyToDocs(t, runShot, "console-run.png")
	copyToDocs(t, stoppedShot, "console-run-stopped.png")
}
