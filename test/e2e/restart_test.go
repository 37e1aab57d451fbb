package e2e

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/maas"
)

// TestStateSurvivesARestart restarts the stack on the same data directory:
// records come back, and an onboarding whose execution died with the old
// process is closed with a reason instead of holding its host for ever.
func TestStateSurvivesARestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first := startStackIn(t, dir)
	f := first.setup(nil, map[string]any{"enrollment_timeout_seconds": 86400})
	first.hardware("gpu-r1", "10.10.1.11", "52:54:00:00:11:01", map[string]any{"never_enrolls": true})
	id := first.onboard(f, "gpu-r1", "10.10.1.11")
	require.NoError(t, first.stack.Close())

	second := startStackIn(t, dir)
	site := second.admin("GET", "/api/v1/admin/maas-sites/"+f.SiteID, nil, http.StatusOK)
	assert.Equal(t, true, site["credentials_set"])
	second.admin("GET", "/api/v1/admin/skus/"+f.SKUID, nil, http.StatusOK)

	o := second.admin("GET", "/api/v1/admin/onboardings/"+id, nil, http.StatusOK)
	assert.Equal(t, "failed", o["status"])
	assert.Equal(t, "LocalStackRestarted", errorCode(o))
}

// TestInterruptedDecommissionAfterARestart: a decommission whose execution
// died with the old process (here erasing) is not left running without an
// execution: it stops for an operator with the reason, its timeline note
// and its event, and a cancel then retires the node rather than handing a
// half-erased machine back to service.
func TestInterruptedDecommissionAfterARestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first := startStackIn(t, dir)
	f := first.setup(map[string]any{"erase_timeout_seconds": 3 * 24 * 3600}, nil)
	nodeID, systemID := first.onboarded(f, "gpu-r2", "10.10.1.21", "52:54:00:00:12:01", map[string]any{"erase_hangs": 1})
	id := first.decommission(nodeID, "full")
	first.waitDecomStage(id, "release", systemID, func(s maas.Status) bool { return s == maas.StatusDiskErasing })
	require.NoError(t, first.stack.Close())

	second := startStackIn(t, dir)
	d := second.admin("GET", "/api/v1/admin/decommissions/"+id, nil, http.StatusOK)
	assert.Equal(t, "manual_intervention", d["status"], "never running without an execution")
	assert.Equal(t, "LocalStackRestarted", errorCode(d))
	assert.Contains(t, d["allowed_operations"], "cancel")
	notes := second.decomNotes(id, "restart")
	require.Len(t, notes, 1)
	assert.Contains(t, notes[0], "the local stack stopped while this decommission ran")
	assert.Contains(t, second.decommissionEvents(id, 2), "node.decommission.manual_intervention_required")
	assert.Equal(t, "decommissioning", second.node(nodeID)["status"], "held while an operator decides")

	second.admin("POST", "/api/v1/admin/decommissions/"+id+"/cancel", map[string]any{"reason": "after the restart"}, http.StatusOK)
	assert.Equal(t, "retired", second.node(nodeID)["status"], "the release went out before the restart")
}
