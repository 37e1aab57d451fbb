package events

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	schemas "github.com/maasflow/maasflow/events"
)

func TestDriftDetailMatchesSchema(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	raw, err := EncodeDetail(DriftDetected, DriftDetail{
		DriftID: "run-1-0a1b2c3d", RunID: "run-1", SiteID: "site-1", NodeID: "node-9", Hostname: "gpu9",
		MAASSystemID: "abc123", OnboardingID: "onb-1", Kind: "power_off", Expected: "on", Observed: "off",
		FirstSeen: at, OccurredAt: at,
	})
	require.NoError(t, err)
	var schema struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	doc, err := schemas.Schema(DriftDetected)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(doc, &schema))
	var got map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &got))
	assert.ElementsMatch(t, sortedKeys(schema.Properties), sortedKeys(got), "every field is in the schema and the other way round")
}
