package schemas

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

const (
	decomStarted   = "node.decommission.started"
	decomCompleted = "node.decommission.completed"
	decomFailed    = "node.decommission.failed"
	decomManual    = "node.decommission.manual_intervention_required"
)

func decomDetail(dt string) map[string]any {
	d := map[string]any{
		"site_id": "site-1", "decommission_id": "dec-01", "node_id": "node-1", "maas_system_id": "k3tgaq",
		"hostname": "gpu-01", "mode": "full", "correlation_id": "corr-1", "attempt": 1,
		"occurred_at": "2026-01-02T03:04:05Z",
	}
	switch dt {
	case decomCompleted:
		d["status"], d["erase_outcome"] = "completed", "erased"
	case decomFailed:
		d["status"] = "failed"
		d["error"] = map[string]any{"code": "NodeNotDecommissionableError", "message": "node is removed"}
	case decomManual:
		d["status"], d["erase_outcome"] = "manual_intervention", "failed"
		d["error"] = map[string]any{"code": "EraseFailed", "message": "Failed disk erasing"}
	}
	return d
}

func TestDecommissionSchemas(t *testing.T) {
	for _, dt := range []string{decomStarted, decomCompleted, decomFailed, decomManual} {
		t.Run(dt, func(t *testing.T) {
			raw, err := json.Marshal(decomDetail(dt))
			require.NoError(t, err)
			require.NoError(t, Validate(dt, raw))

			for _, field := range []string{"decommission_id", "node_id", "mode", "hostname", "attempt"} {
				d := decomDetail(dt)
				delete(d, field)
				raw, _ := json.Marshal(d)
				require.Error(t, Validate(dt, raw), "without %s", field)
			}
			d := decomDetail(dt)
			d["mode"] = "sideways"
			raw, _ = json.Marshal(d)
			require.Error(t, Validate(dt, raw), "unknown mode")
			d = decomDetail(dt)
			d["token"] = "s3cret"
			raw, _ = json.Marshal(d)
			require.Error(t, Validate(dt, raw), "no secret can ride along")
		})
	}
	raw, _ := json.Marshal(decomDetail(decomFailed))
	require.Error(t, Validate(decomCompleted, raw), "error only on failed and manual intervention")
	d := decomDetail(decomFailed)
	delete(d, "error")
	raw, _ = json.Marshal(d)
	require.Error(t, Validate(decomFailed, raw), "a failure says why")
}
