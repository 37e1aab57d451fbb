package eventstest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/clock"
	"github.com/maasflow/maasflow/shared/events"
)

// reportingTB captures Errorf so a test can check the Recorder reports
// invalid events without failing itself.
type reportingTB struct {
	testing.TB
	mu   sync.Mutex
	msgs []string
}

func (r *reportingTB) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, fmt.Sprintf(format, args...))
}

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func detail(attempt int) events.OnboardingDetail {
	return events.OnboardingDetail{
		SiteID: "site-1", OnboardingID: "onb-1", NodeID: "node-1", MAASSystemID: "",
		Hostname: "gpu-01", CorrelationID: "corr-1", Attempt: attempt, Status: "running", OccurredAt: t0,
	}
}

func TestRecorderRecordsValidEvents(t *testing.T) {
	r := NewRecorder(t)
	r.Clock = clock.NewFake(t0)
	require.NoError(t, r.Publish(context.Background(), events.OnboardingStarted, detail(1)))
	require.NoError(t, r.Publish(context.Background(), events.OnboardingStarted, detail(2)))

	got := r.Events()
	require.Len(t, got, 2)
	assert.Equal(t, "evt-000001", got[0].ID)
	assert.Equal(t, events.Source, got[0].Source)
	assert.True(t, t0.Equal(got[0].Time))
	assert.Equal(t, []string{events.OnboardingStarted, events.OnboardingStarted}, r.DetailTypes())

	details, err := r.OnboardingDetails(events.OnboardingStarted)
	require.NoError(t, err)
	assert.Equal(t, []events.OnboardingDetail{detail(1), detail(2)}, details)
	none, err := r.OnboardingDetails(events.OnboardingCompleted)
	require.NoError(t, err)
	assert.Empty(t, none)

	r.Reset()
	assert.Empty(t, r.Events())
}

func TestRecorderRejectsAndReportsInvalidEvents(t *testing.T) {
	tb := &reportingTB{TB: t}
	r := NewRecorder(tb)
	err := r.Publish(context.Background(), events.OnboardingStarted, detail(0))
	require.Error(t, err)
	assert.True(t, events.IsInvalidDetail(err))
	assert.Empty(t, r.Events(), "invalid events are not recorded")
	require.Len(t, tb.msgs, 1, "the test is told even if the caller drops the error")
	assert.Contains(t, tb.msgs[0], "/attempt: minimum")

	var zero Recorder
	err = zero.Publish(context.Background(), events.DecommissionStarted, detail(1))
	assert.True(t, events.IsInvalidDetail(err), "the zero value validates too")
}

func TestRecorderFailWith(t *testing.T) {
	var r Recorder
	outage := errors.New("bus down")
	r.FailWith(outage)
	require.ErrorIs(t, r.Publish(context.Background(), events.OnboardingStarted, detail(1)), outage)
	assert.Empty(t, r.Events())
	r.FailWith(nil)
	require.NoError(t, r.Publish(context.Background(), events.OnboardingStarted, detail(1)))
	assert.Len(t, r.Events(), 1)
}

func TestRecorderConcurrent(t *testing.T) {
	r := NewRecorder(t)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			errs[i] = r.Publish(context.Background(), events.OnboardingStarted, detail(i+1))
			_ = r.Events()
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	assert.Len(t, r.Events(), 8)
}
