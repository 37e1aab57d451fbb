package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBatchOfTenWithOneFailingHost onboards a rack of ten through one
// batch: one host fails commissioning, which must not stop or fail the
// other nine, and the batch's counts follow its onboardings.
func TestBatchOfTenWithOneFailingHost(t *testing.T) {
	e := startStack(t)
	f := e.setup(nil, nil)
	var nodes []any
	for i := 1; i <= 10; i++ {
		host, bmc := fmt.Sprintf("rack-%02d", i), fmt.Sprintf("10.50.0.%d", i)
		var faults map[string]any
		if i == 4 {
			faults = map[string]any{"commission_failures": 1}
		}
		e.hardware(host, bmc, fmt.Sprintf("52:54:00:50:00:%02x", i), faults)
		nodes = append(nodes, map[string]any{"hostname": host, "ipmi_ip": bmc})
	}
	b := e.admin("POST", "/api/v1/admin/onboardings/batch", map[string]any{
		"site_id": f.SiteID, "profile_id": f.ProfileID, "sku_id": f.SKUID, "nodes": nodes,
	}, http.StatusAccepted)
	id := b["id"].(string)
	require.Len(t, b["items"], 10)
	started := 0.0
	for status, n := range b["counts"].(map[string]any) {
		assert.Contains(t, []string{"pending", "running"}, status, "every row started")
		started += n.(float64)
	}
	assert.InDelta(t, 10.0, started, 0)

	deadline := time.Now().Add(terminalWait)
	for b["status"] == "running" {
		require.True(t, time.Now().Before(deadline), "batch still running: %v", b["counts"])
		time.Sleep(50 * time.Millisecond)
		b = e.batch(id)
	}
	assert.Equal(t, "manual_intervention", b["status"])
	assert.Equal(t, map[string]any{"completed": 9.0, "manual_intervention": 1.0}, b["counts"])

	// One execution ran the batch, each row as its child: the batch
	// execution succeeded although a node failed, and every child is the
	// execution its onboarding records.
	eng := e.stack.Engine
	// The batch record turns terminal when its last row does; the batch
	// execution ends a few states later.
	runs := eng.ListExecutions(eng.StateMachineARN("batch-onboarding"), "")
	require.Len(t, runs, 1)
	for runs[0].Status == "RUNNING" {
		require.True(t, time.Now().Before(deadline), "batch execution still running")
		time.Sleep(50 * time.Millisecond)
		runs = eng.ListExecutions(eng.StateMachineARN("batch-onboarding"), "")
	}
	assert.Equal(t, "batch-"+id, runs[0].Name)
	assert.Equal(t, "SUCCEEDED", runs[0].Status, "one node's failure does not fail the batch")
	children := eng.ListExecutions(eng.StateMachineARN("onboarding"), "")
	assert.Len(t, children, 10)
	for _, raw := range e.admin("GET", "/api/v1/admin/onboardings?batch_id="+id, nil, http.StatusOK)["items"].([]any) {
		o := raw.(map[string]any)
		x, err := eng.DescribeExecution(o["execution_id"].(string))
		require.NoError(t, err, "the onboarding names its child execution")
		assert.Equal(t, "onboarding-"+o["id"].(string)+"-1", x.Name)
	}
	for _, raw := range b["items"].([]any) {
		it := raw.(map[string]any)
		if it["hostname"] == "rack-04" {
			assert.Equal(t, "manual_intervention", it["status"])
			assert.NotEmpty(t, it["error"], "the item says why")
		} else {
			assert.Equal(t, "completed", it["status"], it)
			assert.Equal(t, "done", it["stage"])
		}
	}
	obs := e.admin("GET", "/api/v1/admin/onboardings?batch_id="+id+"&status=completed", nil, http.StatusOK)["items"].([]any)
	assert.Len(t, obs, 9)
	for _, o := range obs {
		assert.Equal(t, id, o.(map[string]any)["batch_id"])
	}

	// The events carry the batch id.
	first := obs[0].(map[string]any)["id"].(string)
	require.Len(t, e.emitted(first, 2), 2)
	envs, err := e.stack.Bus.ReadAll()
	require.NoError(t, err)
	carried := 0
	for _, ev := range envs {
		if strings.Contains(string(ev.Detail), `"onboarding_id":"`+first+`"`) {
			assert.Contains(t, string(ev.Detail), `"batch_id":"`+id+`"`, ev.DetailType)
			carried++
		}
	}
	assert.Equal(t, 2, carried, "started and completed")
}

// TestBatchValidationOverHTTP: a bad row is a 400 naming nodes[i].field and
// nothing starts; a busy host is reported on its row while the rest start.
func TestBatchValidationOverHTTP(t *testing.T) {
	e := startStack(t)
	f := e.setup(nil, nil)
	batch := func(nodes ...any) map[string]any {
		return map[string]any{"site_id": f.SiteID, "profile_id": f.ProfileID, "sku_id": f.SKUID, "nodes": nodes}
	}
	n := func(host, ip string) map[string]any { return map[string]any{"hostname": host, "ipmi_ip": ip} }

	for _, tc := range []struct {
		body  map[string]any
		field string
	}{
		{batch(n("gpu-01", "10.60.0.1"), n("gpu-01", "10.60.0.2")), "nodes[1].hostname"},
		{batch(n("gpu-01", "10.60.0.1"), n("gpu-02", "not-an-ip")), "nodes[1].ipmi_ip"},
		{batch(), "nodes"},
	} {
		out := e.admin("POST", "/api/v1/admin/onboardings/batch", tc.body, http.StatusBadRequest)
		assert.Equal(t, tc.field, out["error"].(map[string]any)["field"])
	}
	assert.Empty(t, e.admin("GET", "/api/v1/admin/onboardings", nil, http.StatusOK)["items"], "nothing started")

	e.hardware("gpu-01", "10.60.0.1", "52:54:00:60:00:01", nil)
	e.hardware("gpu-02", "10.60.0.2", "52:54:00:60:00:02", nil)
	busy := e.onboard(f, "gpu-01", "10.60.0.1")
	out := e.admin("POST", "/api/v1/admin/onboardings/batch", batch(n("gpu-01", "10.60.0.1"), n("gpu-02", "10.60.0.2")), http.StatusAccepted)
	items := out["items"].([]any)
	first, second := items[0].(map[string]any), items[1].(map[string]any)
	assert.Equal(t, "rejected", first["status"])
	assert.Contains(t, first["error"].(map[string]any)["message"], busy)
	// The row's workflow may have begun by the time the answer is read.
	assert.Contains(t, []any{"pending", "running"}, second["status"])
	assert.Equal(t, "completed", e.waitTerminal(second["onboarding_id"].(string))["status"])
}
