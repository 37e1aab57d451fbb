package browser

import (
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// waitStatus polls the API until the onboarding has one of the statuses and
// returns it.
func (st *stack) waitStatus(id string, statuses ...string) map[string]any {
	st.t.Helper()
	deadline := time.Now().Add(uiWait)
	for {
		o := st.admin("GET", "/api/v1/admin/onboardings/"+id, nil, http.StatusOK)
		for _, s := range statuses {
			if o["status"] == s {
				return o
			}
		}
		if time.Now().After(deadline) {
			st.t.Fatalf("onboarding %s still %v at stage %v, waiting for %v", id, o["status"], o["stage"], statuses)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A run that FAILED (a guardrail, not an operator's freeze) is retried
// from its button once the cause is fixed, and its page follows the retry
// to completion; a run stopped by a failed commissioning shows what MAAS's
// failed script printed.
func TestConsoleRetriesAFailedRunAndShowsScriptOutput(t *testing.T) {
	ctx, problems := browser(t)
	st := startStack(t)
	shots := t.ArtifactDir()
	fx := st.fixture()
	site := fx["site_id"].(string)
	console := st.s.APIURL + "/console/"
	run(t, ctx,
		chromedp.Navigate(console),
		chromedp.WaitVisible("#token", chromedp.ByQuery),
		chromedp.SendKeys("#token", st.s.AdminToken, chromedp.ByQuery),
		chromedp.Click(`#signin-form button[type="submit"]`, chromedp.ByQuery),
		waitJS(`document.querySelector("#view h1") && document.querySelector("#view h1").textContent === "Fleet overview"`),
	)

	// A commissioning that fails: the run stops, and its page shows the
	// output of the script that failed, as MAAS kept it.
	broken := st.onboard(fx, "gpu-c3", "10.10.8.13", "52:54:00:00:81:03", map[string]any{"commission_failures": 1})
	o := st.waitStatus(broken, "manual_intervention", "failed")
	require.NotEmpty(t, o["diagnostics"].(map[string]any)["script_results"], "the stopped run carries the failed script's output: %v", o["diagnostics"])
	var scripts string
	run(t, ctx,
		chromedp.Navigate(console+"#/onboardings/"+broken),
		waitJS(`document.getElementById("script-output") !== null`),
		text(`section.script-result`, &scripts),
	)
	assert.Contains(t, scripts, "50-maas-01-commissioning")
	assert.Contains(t, scripts, "input/output error", "the script's own output")
	scriptShot := screenshot(t, ctx, shots, "console-script-output.png")

	// One onboarding at a time on the site: a second waits for the
	// first's slot, and meanwhile the site's key is rotated, which leaves
	// the site unprobed. When the slot frees, the waiting run's guardrail
	// refuses the unprobed site: it FAILS.
	st.admin("PATCH", "/api/v1/admin/maas-sites/"+site, map[string]any{"policy": map[string]any{"max_concurrent_onboardings": 1}}, http.StatusOK)
	holder := st.onboard(fx, "gpu-c1", "10.10.8.11", "52:54:00:00:81:01", map[string]any{"never_enrolls": true})
	st.waitStage(holder, "wait_enrollment")
	queued := st.onboard(fx, "gpu-c2", "10.10.8.12", "52:54:00:00:81:02", nil)
	st.waitStage(queued, "queued")
	st.admin("POST", "/api/v1/admin/maas-sites/"+site+"/credentials", map[string]any{
		"maas_api_key": st.s.SimAPIKey, "bmc_username": "maasflow", "bmc_password": "bmc-secret-2",
	}, http.StatusOK)
	st.admin("POST", "/api/v1/admin/onboardings/"+holder+"/cancel", map[string]any{"reason": "make room"}, http.StatusOK)
	failed := st.waitStatus(queued, "failed", "manual_intervention", "completed")
	require.Equal(t, "failed", failed["status"], "the guardrail fails the run: %v", failed["error"])

	// Its page: failed, the guardrail's error, retry offered.
	var failure, status string
	run(t, ctx,
		chromedp.Navigate(console+"#/onboardings/"+queued),
		waitJS(`document.querySelector(".facts .status") && document.querySelector(".facts .status").textContent === "failed"`),
		chromedp.WaitVisible(`button[data-op="retry"]`, chromedp.ByQuery),
		text("#failure", &failure),
		chromedp.Evaluate(`window.sameDocument = "failed-run"; true`, nil),
	)
	assert.Contains(t, failure, "GuardrailError")
	failedShot := screenshot(t, ctx, shots, "console-run-failed.png")

	// The operator probes the site (the cause), then retries from the
	// button with a reason; the page follows the retried run, pushed, to
	// completion.
	st.admin("POST", "/api/v1/admin/maas-sites/"+site+"/probe", nil, http.StatusOK)
	var retryTitle string
	var same bool
	run(t, ctx,
		clickJS(`button[data-op="retry"]`),
		chromedp.WaitVisible("#confirm-reason", chromedp.ByQuery),
		text("#confirm-title", &retryTitle),
		chromedp.SendKeys("#confirm-reason", "site probed after the key rotation", chromedp.ByQuery),
		chromedp.Click("#confirm-ok", chromedp.ByQuery),
		waitJS(`!document.getElementById("confirm").open`),
		waitJS(`document.querySelector(".facts .status") && document.querySelector(".facts .status").textContent === "completed"`),
		text(".facts .status", &status),
		chromedp.Evaluate(`window.sameDocument === "failed-run"`, &same),
	)
	assert.Equal(t, "Run retry?", retryTitle)
	assert.Equal(t, "completed", status)
	assert.True(t, same, "the retried run was followed without a reload")
	o = st.admin("GET", "/api/v1/admin/onboardings/"+queued, nil, http.StatusOK)
	assert.Equal(t, "completed", o["status"], "the button ran the retry")
	assert.EqualValues(t, 1, o["attempt"], "a retry runs the same attempt again")
	// run is left out while 0, the first run.
	runOf := func(m map[string]any) float64 { n, _ := m["run"].(float64); return n }
	assert.Greater(t, runOf(o), runOf(failed), "as a new run")
	retriedShot := screenshot(t, ctx, shots, "console-run-retried.png")

	assert.Empty(t, problems(), "the page ran without errors")
	copyToDocs(t, scriptShot, "console-script-output.png")
	copyToDocs(t, failedShot, "console-run-failed.png")
	_ = retriedShot
}
