package events

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/clock"
)

// fakeEventBridge records PutEvents calls and answers with out/err.
type fakeEventBridge struct {
	mu    sync.Mutex
	calls []*eventbridge.PutEventsInput
	out   *eventbridge.PutEventsOutput
	err   error
}

func (f *fakeEventBridge) PutEvents(_ context.Context, in *eventbridge.PutEventsInput, _ ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, in)
	if f.err != nil {
		return nil, f.err
	}
	if f.out != nil {
		return f.out, nil
	}
	return &eventbridge.PutEventsOutput{Entries: []ebtypes.PutEventsResultEntry{{EventId: aws.String("eb-1")}}}, nil
}

var _ EventBridgeAPI = (*fakeEventBridge)(nil)
var _ EventBridgeAPI = (*eventbridge.Client)(nil)

func TestEventBridgeBuildsTheEntry(t *testing.T) {
	fake := &fakeEventBridge{}
	pub := NewEventBridge(fake, "maasflow-bus", "", WithClock(clock.NewFake(t0)))

	d := sampleDetail(OnboardingManualInterventionRequired)
	require.NoError(t, pub.Publish(context.Background(), OnboardingManualInterventionRequired, d))

	require.Len(t, fake.calls, 1)
	require.Len(t, fake.calls[0].Entries, 1)
	e := fake.calls[0].Entries[0]
	assert.Equal(t, "maasflow-bus", aws.ToString(e.EventBusName))
	assert.Equal(t, Source, aws.ToString(e.Source), "empty source means maasflow")
	assert.Equal(t, OnboardingManualInterventionRequired, aws.ToString(e.DetailType))
	assert.JSONEq(t, `{"site_id":"site-1","onboarding_id":"onb-1","batch_id":"batch-1","node_id":"node-1","maas_system_id":"abc123",
		"hostname":"gpu-01","correlation_id":"corr-1","attempt":1,"status":"manual_intervention","stage":"deploy",
		"error":{"code":"DeployFailedError","message":"deployment failed: curtin error"},
		"occurred_at":"2025-03-04T05:06:07Z"}`, aws.ToString(e.Detail))
	require.NotNil(t, e.Time)
	assert.True(t, t0.Equal(*e.Time))
	assert.Empty(t, e.Resources)
}

func TestEventBridgeCustomSource(t *testing.T) {
	fake := &fakeEventBridge{}
	pub := NewEventBridge(fake, "bus", "maasflow.staging")
	require.NoError(t, pub.Publish(context.Background(), OnboardingStarted, sampleDetail(OnboardingStarted)))
	require.Len(t, fake.calls, 1)
	assert.Equal(t, "maasflow.staging", aws.ToString(fake.calls[0].Entries[0].Source))
}

func TestEventBridgeFailures(t *testing.T) {
	apiErr := errors.New("RequestError: send request failed")
	tests := []struct {
		name      string
		out       *eventbridge.PutEventsOutput
		err       error
		wantCode  string
		wantCount int32
		wantIs    error
	}{
		{
			name: "failed entry",
			out: &eventbridge.PutEventsOutput{FailedEntryCount: 1, Entries: []ebtypes.PutEventsResultEntry{{
				ErrorCode: aws.String("ThrottlingException"), ErrorMessage: aws.String("Rate exceeded"),
			}}},
			wantCode: "ThrottlingException", wantCount: 1,
		},
		{
			name:     "count without entries",
			out:      &eventbridge.PutEventsOutput{FailedEntryCount: 1},
			wantCode: "", wantCount: 1,
		},
		{
			name: "entry error without count",
			out: &eventbridge.PutEventsOutput{Entries: []ebtypes.PutEventsResultEntry{{
				ErrorCode: aws.String("InternalFailure"), ErrorMessage: aws.String("oops"),
			}}},
			wantCode: "InternalFailure", wantCount: 1,
		},
		{name: "client error", err: apiErr, wantIs: apiErr},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &fakeEventBridge{out: tt.out, err: tt.err}
			pub := NewEventBridge(fake, "bus", Source)
			err := pub.Publish(context.Background(), OnboardingFailed, sampleDetail(OnboardingFailed))
			require.Error(t, err, "a partial failure is never silent")
			if tt.wantIs != nil {
				assert.ErrorIs(t, err, tt.wantIs)
				return
			}
			var fe *PutEventsFailedError
			require.ErrorAs(t, err, &fe)
			assert.Equal(t, tt.wantCode, fe.ErrorCode)
			assert.Equal(t, tt.wantCount, fe.FailedEntryCount)
			assert.Equal(t, OnboardingFailed, fe.DetailType)
			assert.Equal(t, "bus", fe.Bus)
		})
	}
}

func TestEventBridgeRejectsInvalidDetailWithoutCalling(t *testing.T) {
	fake := &fakeEventBridge{}
	pub := NewEventBridge(fake, "bus", Source)
	err := pub.Publish(context.Background(), OnboardingStarted, map[string]any{"api_key": seedSecret})
	require.Error(t, err)
	assert.True(t, IsInvalidDetail(err))
	assert.NotContains(t, err.Error(), seedSecret)
	assert.Empty(t, fake.calls)
}
