package events

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	schemas "github.com/maasflow/maasflow/events"
)

func sampleDecommission(detailType string) DecommissionDetail {
	d := DecommissionDetail{SiteID: "site-1", DecommissionID: "dec-1", NodeID: "node-1", MAASSystemID: "k3tgaq",
		Hostname: "gpu-01", Mode: "reimage", CorrelationID: "corr-1", Attempt: 1, Stage: "release", OccurredAt: t0}
	switch detailType {
	case DecommissionStarted:
		d.Status = "running"
	case DecommissionCompleted:
		d.Status, d.EraseOutcome, d.OnboardingID = "completed", "erased", "onb-2"
	case DecommissionFailed:
		d.Status, d.EraseOutcome, d.OnboardingID = "failed", "pending", "onb-2"
		d.Error = &ErrorDetail{Code: "NodeNotDecommissionableError", Message: "node is removed"}
	case DecommissionManualInterventionRequired:
		d.Status, d.EraseOutcome, d.OnboardingID = "manual_intervention", "failed", "onb-2"
		d.Error = &ErrorDetail{Code: "EraseFailed", Message: "Failed disk erasing"}
	}
	return d
}

// Every json key of DecommissionDetail is a property of each decommission
// schema and the other way round, once the optional fields are set.
func TestDecommissionDetailMatchesSchemas(t *testing.T) {
	for _, dt := range []string{DecommissionStarted, DecommissionCompleted, DecommissionFailed, DecommissionManualInterventionRequired} {
		t.Run(dt, func(t *testing.T) {
			raw, err := EncodeDetail(dt, sampleDecommission(dt))
			require.NoError(t, err)
			var schema struct {
				Properties map[string]json.RawMessage `json:"properties"`
			}
			doc, err := schemas.Schema(dt)
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(doc, &schema))
			var got map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(raw, &got))
			assert.ElementsMatch(t, sortedKeys(schema.Properties), sortedKeys(got))
		})
	}
}
