package events

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	schemas "github.com/maasflow/maasflow/events"
)

// seedSecret must never appear in an error or an emitted event.
const seedSecret = "SEEDSECRET-bmc-pw-51x"

var t0 = time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)

func sampleDetail(detailType string) OnboardingDetail {
	d := OnboardingDetail{
		SiteID:        "site-1",
		OnboardingID:  "onb-1",
		BatchID:       "batch-1",
		NodeID:        "node-1",
		MAASSystemID:  "abc123",
		Hostname:      "gpu-01",
		CorrelationID: "corr-1",
		Attempt:       1,
		Stage:         "deploy",
		OccurredAt:    t0,
	}
	switch detailType {
	case OnboardingStarted:
		d.Status = "running"
	case OnboardingCompleted:
		d.Status = "completed"
	case OnboardingFailed:
		d.Status = "failed"
		d.Error = &ErrorDetail{Code: "SiteProbeUnhealthyError", Message: "site probe is not healthy"}
	case OnboardingManualInterventionRequired:
		d.Status = "manual_intervention"
		d.Error = &ErrorDetail{Code: "DeployFailedError", Message: "deployment failed: curtin error"}
	}
	return d
}

func TestDetailTypeConstantsHaveSchemas(t *testing.T) {
	assert.ElementsMatch(t, []string{
		OnboardingStarted, OnboardingCompleted, OnboardingFailed, OnboardingManualInterventionRequired, DriftDetected,
		DecommissionStarted, DecommissionCompleted, DecommissionFailed, DecommissionManualInterventionRequired,
	}, schemas.DetailTypes())
}

func TestOnboardingDetailMatchesSchemas(t *testing.T) {
	for _, dt := range schemas.DetailTypes() {
		if !strings.HasPrefix(dt, "node.onboarding.") {
			continue // other shapes: drift_test.go
		}
		t.Run(dt, func(t *testing.T) {
			d := sampleDetail(dt)
			if dt == OnboardingManualInterventionRequired {
				// Only a failed hardware verification carries a diff.
				d.HardwareDiff = []HardwareMismatch{{Field: "gpus_total", Want: "8", Got: "6"}}
			}
			raw, err := EncodeDetail(dt, d)
			require.NoError(t, err)

			// Every json key of OnboardingDetail is a schema property and
			// the other way round (error only where the schema has it).
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

func TestEncodeDetail(t *testing.T) {
	full := sampleDetail(OnboardingStarted)
	js, err := json.Marshal(full)
	require.NoError(t, err)
	indented, err := json.MarshalIndent(full, "", "  ")
	require.NoError(t, err)

	tests := []struct {
		name    string
		detail  any
		wantErr func(error) bool
	}{
		{name: "struct", detail: full},
		{name: "pointer", detail: &full},
		{name: "raw message", detail: json.RawMessage(js)},
		{name: "bytes, indented", detail: indented},
		{name: "nil", detail: nil, wantErr: IsInvalidDetail},
		{name: "missing attempt", detail: func() any { d := full; d.Attempt = 0; return d }(), wantErr: IsInvalidDetail},
		{name: "a secret in an extra field", detail: map[string]any{
			"site_id": "s", "onboarding_id": "o", "node_id": "", "maas_system_id": "", "hostname": "h",
			"correlation_id": "c", "attempt": 1, "occurred_at": t0, "bmc_password": seedSecret,
		}, wantErr: IsInvalidDetail},
		{name: "unmarshalable", detail: map[string]any{"f": func() {}}, wantErr: func(err error) bool { return err != nil && !IsInvalidDetail(err) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := EncodeDetail(OnboardingStarted, tt.detail)
			if tt.wantErr != nil {
				require.Error(t, err)
				assert.True(t, tt.wantErr(err), err.Error())
				assert.NotContains(t, err.Error(), seedSecret)
				assert.Nil(t, raw)
				return
			}
			require.NoError(t, err)
			assert.JSONEq(t, string(js), string(raw))
			assert.NotContains(t, string(raw), "\n", "one line")
		})
	}
}

func TestIsInvalidDetail(t *testing.T) {
	_, err := EncodeDetail("node.retirement.started", map[string]any{})
	assert.True(t, IsInvalidDetail(err), "no schema")
	_, err = EncodeDetail(DecommissionStarted, map[string]any{})
	assert.True(t, IsInvalidDetail(err), "schema mismatch")
	assert.False(t, IsInvalidDetail(fmt.Errorf("disk full")))
	assert.False(t, IsInvalidDetail(nil))
}

func sortedKeys(m map[string]json.RawMessage) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
