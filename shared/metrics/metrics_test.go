package metrics

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/events"
)

func scrape(t *testing.T, p *Prometheus) string {
	t.Helper()
	rec := httptest.NewRecorder()
	p.Handler().ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), "GET", "/metrics", nil))
	b, err := io.ReadAll(rec.Body)
	require.NoError(t, err)
	return string(b)
}

func TestPrometheus(t *testing.T) {
	p := NewPrometheus()
	p.ObserveEvent(events.Envelope{DetailType: events.OnboardingStarted})
	p.ObserveEvent(events.Envelope{DetailType: events.OnboardingStarted})
	p.ObserveEvent(events.Envelope{DetailType: events.OnboardingCompleted})
	p.ObserveEvent(events.Envelope{DetailType: events.DecommissionStarted})
	p.ObserveEvent(events.Envelope{DetailType: events.DriftDetected}) // counted by RecordSite instead
	p.RecordSite(domain.SiteRunInfo{SiteID: "s1", NodesChecked: 3, New: 2, MAASCalls: 2, PowerQueries: 1,
		DriftByKind: map[string]int{"power_off": 1, "status_mismatch": 1}})
	out := scrape(t, p)
	for _, want := range []string{
		`maasflow_onboarding_events_total{event="started"} 2`,
		`maasflow_onboarding_events_total{event="completed"} 1`,
		`maasflow_decommission_events_total{event="started"} 1`,
		`maasflow_drift_open{kind="power_off",site_id="s1"} 1`,
		`maasflow_drift_detected_total{site_id="s1"} 2`,
		`maasflow_reconcile_nodes_checked{site_id="s1"} 3`,
		`maasflow_reconcile_maas_calls_total{call="list",site_id="s1"} 2`,
	} {
		assert.Contains(t, out, want)
	}

	// A kind that is gone reads zero, not its last value.
	p.RecordSite(domain.SiteRunInfo{SiteID: "s1", NodesChecked: 3, DriftByKind: map[string]int{"status_mismatch": 1}})
	out = scrape(t, p)
	assert.Contains(t, out, `maasflow_drift_open{kind="power_off",site_id="s1"} 0`)
	assert.Contains(t, out, `maasflow_reconcile_site_runs_total{result="ok",site_id="s1"} 2`)
	assert.NotContains(t, out, "go_goroutines", "no process collectors")
}

func TestEMF(t *testing.T) {
	var buf bytes.Buffer
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	NewEMF(&buf, func() time.Time { return at }).RecordSite(domain.SiteRunInfo{SiteID: "s1", NodesChecked: 5, New: 1,
		DriftByKind: map[string]int{"power_off": 2, "machine_missing": 1}})
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 3, "site totals and one line per kind")
	var site map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &site))
	assert.EqualValues(t, 3, site["DriftOpen"])
	assert.EqualValues(t, 5, site["NodesChecked"])
	meta := site["_aws"].(map[string]any)
	assert.EqualValues(t, at.UnixMilli(), meta["Timestamp"])
	directive := meta["CloudWatchMetrics"].([]any)[0].(map[string]any)
	assert.Equal(t, "maasflow", directive["Namespace"])
	// Every metric a directive names is a member of the line (EMF rule).
	for _, m := range directive["Metrics"].([]any) {
		assert.Contains(t, site, m.(map[string]any)["Name"])
	}
	var kind map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &kind))
	assert.Equal(t, "machine_missing", kind["Kind"])
	assert.EqualValues(t, 1, kind["DriftOpen"])
}
