package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// timelineRows returns the rows of the onboarding's timeline whose detail
// contains text.
func timelineRows(o map[string]any, text string) []map[string]any {
	var out []map[string]any
	tl, _ := o["timeline"].([]any)
	for _, r := range tl {
		row := r.(map[string]any)
		if d, _ := row["detail"].(string); strings.Contains(d, text) {
			out = append(out, row)
		}
	}
	return out
}

// awaitTimelineRow reads the onboarding until its timeline holds a row
// whose detail contains text (the closing row can land a moment after the
// status), and returns the onboarding as last read.
func (e *env) awaitTimelineRow(id, text string) map[string]any {
	e.t.Helper()
	deadline := time.Now().Add(terminalWait)
	for {
		o := e.onboarding(id)
		if len(timelineRows(o, text)) > 0 || time.Now().After(deadline) {
			return o
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A host that hangs on its first power-on (requirements readiness §4.1 step 5) is
// power-cycled once through MAAS and the onboarding completes.
func TestMachineThatDoesNotBootIsPowerCycledOnce(t *testing.T) {
	t.Parallel()
	e := startStack(t)
	f := e.setup(nil, nil)
	e.hardware("gpu-pc1", "10.10.1.11", "52:54:00:01:01:01", map[string]any{"no_boot_until_power_cycle": true})

	o := e.waitTerminal(e.onboard(f, "gpu-pc1", "10.10.1.11"))

	assert.Equal(t, "completed", o["status"], o["error"])
	calls := e.simCalls()
	assert.Equal(t, 1, callsWithOp(calls, "power_off"), "one cycle: %v", calls)
	assert.Equal(t, 1, callsWithOp(calls, "power_on"), "one cycle: %v", calls)
	cycled := timelineRows(o, "power-cycled machine")
	if assert.Len(t, cycled, 1, "the cycle is on the timeline") {
		assert.Equal(t, "wait_ready", cycled[0]["stage"])
		assert.Contains(t, cycled[0]["detail"], "no boot")
	}
	assert.NotEmpty(t, timelineRows(o, "Performing PXE boot"), "MAAS saw the host boot after the cycle")
}

// A host that does not boot even after the cycle needs an operator: the
// workflow gives up with MachineNeverBooted, the cycle and the give-up
// both on the timeline, before MAAS's own node_timeout.
func TestMachineThatNeverBootsNeedsAnOperatorAfterOneCycle(t *testing.T) {
	t.Parallel()
	// The two boot deadlines (2 × 12 min) leave six simulated minutes
	// before MAAS's node_timeout: at the suite's time scale that is 0.6 s of
	// wall time, which a loaded machine can spend between the watch's
	// rounds and the checks they wake. A quarter of the speed gives 2.4 s.
	e := startStackAt(t, timeScale/4)
	f := e.setup(nil, nil)
	e.hardware("gpu-pc2", "10.10.1.12", "52:54:00:01:01:02", map[string]any{"never_boots": true})

	id := e.onboard(f, "gpu-pc2", "10.10.1.12")
	e.waitTerminal(id)
	o := e.awaitTimelineRow(id, "not booted after a power cycle")

	assert.Equal(t, "manual_intervention", o["status"])
	assert.Equal(t, "MachineNeverBooted", errorCode(o))
	assert.Equal(t, "wait_ready", o["stage"])
	calls := e.simCalls()
	assert.Equal(t, 1, callsWithOp(calls, "power_off"), "cycled once only: %v", calls)
	assert.Equal(t, 1, callsWithOp(calls, "power_on"), "cycled once only: %v", calls)
	assert.Zero(t, callsWithOp(calls, "deploy"))
	assert.Len(t, timelineRows(o, "power-cycled machine"), 1, "the cycle is on the timeline")
	assert.NotEmpty(t, timelineRows(o, "not booted after a power cycle"), "the give-up is on the timeline")
	assert.Empty(t, timelineRows(o, "timed out after 30 minutes"), "the workflow decided before MAAS's node_timeout")
}
