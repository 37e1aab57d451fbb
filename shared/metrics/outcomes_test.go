package metrics_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/events"
	"github.com/maasflow/maasflow/shared/metrics"
)

type recordingBus struct {
	published []string
	err       error
}

func (b *recordingBus) Publish(_ context.Context, detailType string, _ any) error {
	if b.err != nil {
		return b.err
	}
	b.published = append(b.published, detailType)
	return nil
}

type fixedTimelines struct {
	asked []string
	spans []metrics.StageSpan
	err   error
}

func (f *fixedTimelines) StageSpans(_ context.Context, workflow, runID string) ([]metrics.StageSpan, error) {
	f.asked = append(f.asked, workflow+"/"+runID)
	return f.spans, f.err
}

// emfLines decodes what an EMF writer wrote and checks each line is valid
// embedded metric format: every dimension and metric it declares is a
// top-level member of the line.
func emfLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m), l)
		aws, ok := m["_aws"].(map[string]any)
		require.True(t, ok, "line has _aws: %s", l)
		for _, d := range aws["CloudWatchMetrics"].([]any) {
			dir := d.(map[string]any)
			assert.Equal(t, metrics.Namespace, dir["Namespace"])
			for _, set := range dir["Dimensions"].([]any) {
				for _, dim := range set.([]any) {
					assert.Contains(t, m, dim.(string), "dimension %s is a member of the line", dim)
				}
			}
			for _, mt := range dir["Metrics"].([]any) {
				assert.Contains(t, m, mt.(map[string]any)["Name"].(string))
			}
		}
		lines = append(lines, m)
	}
	return lines
}

func TestOutcomesWriteOneRunLinePerClosedRunWithItsStages(t *testing.T) {
	var out bytes.Buffer
	bus := &recordingBus{}
	tl := &fixedTimelines{spans: []metrics.StageSpan{{Stage: "commission", Duration: 90 * time.Second}, {Stage: "deploy", Duration: 7 * time.Minute}}}
	o := metrics.NewOutcomes(bus, metrics.NewEMF(&out, func() time.Time { return time.UnixMilli(1700000000000) }), tl, nil)
	ctx := context.Background()

	require.NoError(t, o.Publish(ctx, events.OnboardingStarted, events.OnboardingDetail{SiteID: "s1", OnboardingID: "o1"}))
	assert.Empty(t, out.String(), "a run that has not closed is not an outcome")

	require.NoError(t, o.Publish(ctx, events.OnboardingCompleted, events.OnboardingDetail{SiteID: "s1", OnboardingID: "o1"}))
	require.NoError(t, o.Publish(ctx, events.DecommissionManualInterventionRequired,
		&events.DecommissionDetail{SiteID: "s2", DecommissionID: "d1", Error: &events.ErrorDetail{Code: "EraseIncompleteError", Message: "m"}}))
	assert.Equal(t, []string{events.OnboardingStarted, events.OnboardingCompleted, events.DecommissionManualInterventionRequired}, bus.published)
	assert.Equal(t, []string{"onboarding/o1", "decommission/d1"}, tl.asked)

	lines := emfLines(t, out.String())
	require.Len(t, lines, 6, "a run line and two stage lines per closed run")
	assert.Equal(t, map[string]any{"Workflow": "onboarding", "Outcome": "completed", "SiteId": "s1", "Runs": 1.0}, without(lines[0], "_aws"))
	assert.Equal(t, map[string]any{"Workflow": "onboarding", "Stage": "commission", "StageDuration": 90000.0}, without(lines[1], "_aws"))
	assert.Equal(t, map[string]any{"Workflow": "onboarding", "Stage": "deploy", "StageDuration": 420000.0}, without(lines[2], "_aws"))
	assert.Equal(t, map[string]any{"Workflow": "decommission", "Outcome": "manual_intervention", "SiteId": "s2",
		"Reason": "EraseIncompleteError", "Runs": 1.0}, without(lines[3], "_aws"))
	dims := lines[3]["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)[0].(map[string]any)["Dimensions"]
	assert.Equal(t, []any{[]any{"Workflow", "Outcome"}, []any{"SiteId", "Workflow", "Outcome"}, []any{"Workflow", "Reason"}}, dims)
	assert.EqualValues(t, 1700000000000, lines[3]["_aws"].(map[string]any)["Timestamp"])
}

func TestOutcomesCountOnlyWhatWasPublished(t *testing.T) {
	var out bytes.Buffer
	bus := &recordingBus{err: errors.New("PutEvents refused")}
	o := metrics.NewOutcomes(bus, metrics.NewEMF(&out, nil), nil, nil)
	err := o.Publish(context.Background(), events.OnboardingFailed, events.OnboardingDetail{SiteID: "s1", OnboardingID: "o1"})
	require.EqualError(t, err, "PutEvents refused", "the bus's error is the caller's")
	assert.Empty(t, out.String())
}

func TestOutcomesKeepTheRunLineWhenItsTimelineCannotBeRead(t *testing.T) {
	var out bytes.Buffer
	o := metrics.NewOutcomes(&recordingBus{}, metrics.NewEMF(&out, nil), &fixedTimelines{err: errors.New("throttled")}, nil)
	require.NoError(t, o.Publish(context.Background(), events.OnboardingFailed, events.OnboardingDetail{SiteID: "s1", OnboardingID: "o1"}))
	lines := emfLines(t, out.String())
	require.Len(t, lines, 1)
	assert.Equal(t, "failed", lines[0]["Outcome"])
}

func TestSpansFromTimelinePairsEachEntryWithItsExit(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rows := []domain.TimelineEntry{
		{Kind: domain.TimelineStageEntered, Stage: "commission", Time: t0},
		{Kind: "maas_event", Stage: "commission", Time: t0.Add(time.Second)},
		{Kind: domain.TimelineStageExited, Stage: "commission", Time: t0.Add(time.Minute)},
		{Kind: domain.TimelineStageEntered, Stage: "deploy", Time: t0.Add(time.Minute)},
		{Kind: domain.TimelineStageExited, Stage: "deploy", Outcome: "retry", Time: t0.Add(3 * time.Minute)},
		{Kind: domain.TimelineStageEntered, Stage: "deploy", Time: t0.Add(4 * time.Minute)},
		{Kind: domain.TimelineStageExited, Stage: "deploy", Time: t0.Add(9 * time.Minute)},
		{Kind: domain.TimelineStageEntered, Stage: "finish", Time: t0.Add(9 * time.Minute)}, // still open: no span
	}
	spans := metrics.SpansFromTimeline(rows, func(r domain.TimelineEntry) (domain.TimelineKind, string, time.Time) {
		return r.Kind, string(r.Stage), r.Time
	})
	assert.Equal(t, []metrics.StageSpan{
		{Stage: "commission", Duration: time.Minute},
		{Stage: "deploy", Duration: 2 * time.Minute},
		{Stage: "deploy", Duration: 5 * time.Minute},
	}, spans)
}

func without(m map[string]any, key string) map[string]any {
	c := map[string]any{}
	for k, v := range m {
		if k != key {
			c[k] = v
		}
	}
	return c
}
