package schemas

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const drift = "node.drift.detected"

func driftDetail() map[string]any {
	return map[string]any{
		"drift_id":       "run-1-0a1b2c3d4e5f6a7b",
		"run_id":         "run-1",
		"site_id":        "site-1",
		"node_id":        "node-9",
		"hostname":       "gpu-c07u31",
		"maas_system_id": "4y3h7n",
		"kind":           "status_mismatch",
		"expected":       "Deployed",
		"observed":       "Broken",
		"first_seen":     "2025-01-02T03:04:05Z",
		"occurred_at":    "2025-01-02T03:04:05.678Z",
	}
}

func TestDriftDetectedSchema(t *testing.T) {
	require.NoError(t, Validate(drift, mustJSON(t, driftDetail())))
	d := driftDetail()
	d["node_id"], d["maas_system_id"], d["kind"] = "maas:abc123", "abc123", "unknown_machine"
	require.NoError(t, Validate(drift, mustJSON(t, d)), "a machine without a node")

	tests := []struct {
		name string
		edit func(map[string]any)
		want string
	}{
		{"unknown kind", func(d map[string]any) { d["kind"] = seedSecret }, "/kind: enum"},
		{"no drift id", func(d map[string]any) { delete(d, "drift_id") }, "/: missing properties drift_id"},
		{"no observed", func(d map[string]any) { delete(d, "observed") }, "/: missing properties observed"},
		{"a secret field", func(d map[string]any) { d["bmc_password"] = seedSecret }, "/: unexpected properties bmc_password"},
		{"first_seen not a time", func(d map[string]any) { d["first_seen"] = "soon " + seedSecret }, "/first_seen: not a valid date-time"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := driftDetail()
			tt.edit(d)
			err := Validate(drift, mustJSON(t, d))
			var se *DetailSchemaError
			require.ErrorAs(t, err, &se)
			assert.Contains(t, se.Problems, tt.want)
			assert.NotContains(t, err.Error(), seedSecret)
		})
	}
}
