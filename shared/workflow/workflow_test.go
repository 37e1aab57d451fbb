package workflow

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/asl"
	"github.com/maasflow/maasflow/shared/clock"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/run"
)

var onboarding = domain.Onboarding{
	ID: "ob-1", SiteID: "site-1", Hostname: "c07u31", Attempt: 2, CorrelationID: "corr-1",
}

const wantInput = `{"onboarding_id":"ob-1","site_id":"site-1","hostname":"c07u31","attempt":2,"run":0,"correlation_id":"corr-1"}`

type fakeEngine struct {
	arn, name string
	input     []byte
	token     string
	err       error

	stopped          string // execution ARN, error and cause of the last stop
	stopErr, stopWhy string
	stopResult       error
}

func (f *fakeEngine) StartExecution(_ context.Context, arn, name string, input []byte) (string, error) {
	f.arn, f.name, f.input = arn, name, input
	return "exec-arn", f.err
}

func (f *fakeEngine) SendTaskSuccess(token string, _ []byte) error {
	f.token = token
	return f.err
}

func (f *fakeEngine) StopExecution(arn, errName, cause string) error {
	f.stopped, f.stopErr, f.stopWhy = arn, errName, cause
	return f.stopResult
}

func TestLocalStartOnboarding(t *testing.T) {
	e := &fakeEngine{}
	arn, err := NewLocal(e, "sm-arn").StartOnboarding(context.Background(), onboarding)
	require.NoError(t, err)
	assert.Equal(t, "exec-arn", arn)
	assert.Equal(t, "sm-arn", e.arn)
	assert.Equal(t, "onboarding-ob-1-2", e.name)
	assert.JSONEq(t, wantInput, string(e.input))
}

func TestLocalErrorsAreAnnotated(t *testing.T) {
	e := &fakeEngine{err: errors.New("boom")}
	_, err := NewLocal(e, "sm").StartOnboarding(context.Background(), onboarding)
	require.ErrorContains(t, err, "start onboarding ob-1: boom")
	require.ErrorContains(t, NewLocal(e, "sm").CompleteEnrollment(context.Background(), "tok", nil), "boom")
	assert.Equal(t, "tok", e.token)
}

type fakeSFN struct {
	start   *sfn.StartExecutionInput
	success *sfn.SendTaskSuccessInput
	stop    *sfn.StopExecutionInput
	err     error
}

func (f *fakeSFN) StartExecution(_ context.Context, in *sfn.StartExecutionInput, _ ...func(*sfn.Options)) (*sfn.StartExecutionOutput, error) {
	f.start = in
	return &sfn.StartExecutionOutput{ExecutionArn: aws.String("arn:exec")}, f.err
}

func (f *fakeSFN) SendTaskSuccess(_ context.Context, in *sfn.SendTaskSuccessInput, _ ...func(*sfn.Options)) (*sfn.SendTaskSuccessOutput, error) {
	f.success = in
	return &sfn.SendTaskSuccessOutput{}, f.err
}

func (f *fakeSFN) StopExecution(_ context.Context, in *sfn.StopExecutionInput, _ ...func(*sfn.Options)) (*sfn.StopExecutionOutput, error) {
	f.stop = in
	if f.err != nil {
		return nil, f.err
	}
	return &sfn.StopExecutionOutput{}, nil
}

func TestStepFunctionsStartOnboarding(t *testing.T) {
	c := &fakeSFN{}
	arn, err := NewStepFunctions(c, "arn:sm").StartOnboarding(context.Background(), onboarding)
	require.NoError(t, err)
	assert.Equal(t, "arn:exec", arn)
	assert.Equal(t, "arn:sm", aws.ToString(c.start.StateMachineArn))
	assert.Equal(t, "onboarding-ob-1-2", aws.ToString(c.start.Name))
	assert.JSONEq(t, wantInput, aws.ToString(c.start.Input))
}

func TestStepFunctionsCompleteEnrollment(t *testing.T) {
	tests := []struct {
		name    string
		err     error
		wantErr any
	}{
		{name: "ok"},
		{name: "task gone", err: &sfntypes.TaskDoesNotExist{}, wantErr: new(*run.TaskEndedError)},
		{name: "task timed out", err: &sfntypes.TaskTimedOut{}, wantErr: new(*run.TaskEndedError)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &fakeSFN{err: tc.err}
			err := NewStepFunctions(c, "arn:sm").CompleteEnrollment(context.Background(), "tok", []byte(`{"a":1}`))
			assert.Equal(t, "tok", aws.ToString(c.success.TaskToken))
			assert.JSONEq(t, `{"a":1}`, aws.ToString(c.success.Output))
			if tc.wantErr == nil {
				assert.NoError(t, err)
				return
			}
			assert.ErrorAs(t, err, tc.wantErr)
		})
	}
}

func TestLocalStopOnboarding(t *testing.T) {
	tests := []struct {
		name    string
		result  error
		wantErr string
	}{
		{name: "running or already ended"},
		{name: "execution unknown to the runtime", result: &asl.ExecutionDoesNotExistError{ARN: "exec-arn"}},
		{name: "other failure", result: errors.New("boom"), wantErr: "stop onboarding execution exec-arn: boom"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := &fakeEngine{stopResult: tc.result}
			err := NewLocal(e, "sm").StopOnboarding(context.Background(), "exec-arn", "cancelled by alice")
			assert.Equal(t, "exec-arn", e.stopped)
			assert.Equal(t, "OnboardingCancelled", e.stopErr)
			assert.Equal(t, "cancelled by alice", e.stopWhy)
			if tc.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			assert.EqualError(t, err, tc.wantErr)
		})
	}
}

// localOnAWait is Local over an embedded runtime whose onboarding machine
// is one Wait the fake clock never reaches the end of.
func localOnAWait(t *testing.T) (*asl.Engine, *Local) {
	t.Helper()
	engine := asl.NewEngine(asl.Options{Clock: clock.NewFake(time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC))})
	sm, err := asl.Parse([]byte(`{"StartAt":"Wait","States":{"Wait":{"Type":"Wait","Seconds":3600,"End":true}}}`), nil)
	require.NoError(t, err)
	smARN, err := engine.CreateStateMachine("onboarding", sm)
	require.NoError(t, err)
	return engine, NewLocal(engine, smARN)
}

// TestLocalStopOnboardingOnTheRuntime stops a real execution parked in a
// Wait (the fake clock never reaches its end), then stops it again.
func TestLocalStopOnboardingOnTheRuntime(t *testing.T) {
	engine, l := localOnAWait(t)
	arn, err := l.StartOnboarding(context.Background(), onboarding)
	require.NoError(t, err)

	require.NoError(t, l.StopOnboarding(context.Background(), arn, "cancelled by alice"))
	ex, err := engine.DescribeExecution(arn)
	require.NoError(t, err)
	assert.Equal(t, asl.StatusAborted, ex.Status)
	assert.Equal(t, "OnboardingCancelled", ex.Error)
	assert.Equal(t, "cancelled by alice", ex.Cause)

	require.NoError(t, l.StopOnboarding(context.Background(), arn, "again"), "an ended execution")
	ex, err = engine.DescribeExecution(arn)
	require.NoError(t, err)
	assert.Equal(t, "cancelled by alice", ex.Cause, "the first stop stands")
	assert.NoError(t, l.StopOnboarding(context.Background(), "arn:unknown", "x"))
}

func TestStepFunctionsStopOnboarding(t *testing.T) {
	tests := []struct {
		name    string
		err     error
		wantErr bool
	}{
		{name: "ok"},
		{name: "execution gone", err: &sfntypes.ExecutionDoesNotExist{}},
		{name: "invalid arn", err: &sfntypes.InvalidArn{}, wantErr: true},
		{name: "transport", err: errors.New("dial tcp: timeout"), wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &fakeSFN{err: tc.err}
			err := NewStepFunctions(c, "arn:sm").StopOnboarding(context.Background(), "arn:exec", "operator: host re-cabled")
			require.NotNil(t, c.stop)
			assert.Equal(t, "arn:exec", aws.ToString(c.stop.ExecutionArn))
			assert.Equal(t, "OnboardingCancelled", aws.ToString(c.stop.Error))
			assert.Equal(t, "operator: host re-cabled", aws.ToString(c.stop.Cause))
			if tc.wantErr {
				assert.ErrorContains(t, err, "stop onboarding execution arn:exec")
				return
			}
			assert.NoError(t, err)
		})
	}
}

// Every run of an attempt gets its own execution name; the first keeps the
// name executions had before runs were counted, so a repeated start of the
// same run is still refused as a duplicate.
func TestExecutionNamesCountRuns(t *testing.T) {
	o := onboarding
	assert.Equal(t, "onboarding-ob-1-2", ExecutionName(o))
	o.Run = 3
	assert.Equal(t, "onboarding-ob-1-2-r3", ExecutionName(o))
	d := domain.Decommission{ID: "dc-1", Attempt: 1}
	assert.Equal(t, "decommission-dc-1-1", DecommissionExecutionName(d))
	d.Run = 1
	assert.Equal(t, "decommission-dc-1-1-r1", DecommissionExecutionName(d))

	long := domain.Onboarding{ID: "0190c3d2-9a7b-7c3e-8f1a-2b3c4d5e6f70", Attempt: 999, Run: 999}
	assert.LessOrEqual(t, len(ExecutionName(long)), 80, "Step Functions caps execution names at 80 characters")
}

// TestOnboardingExecutionIDIsTheStartedOne starts real executions on the
// embedded runtime, a first run and a later one, and checks the predicted
// id is the ARN the runtime gives; on Step Functions the prediction follows
// the documented execution ARN format.
func TestOnboardingExecutionIDIsTheStartedOne(t *testing.T) {
	_, l := localOnAWait(t)
	for _, run := range []int{0, 3} {
		o := onboarding
		o.Run = run
		arn, err := l.StartOnboarding(context.Background(), o)
		require.NoError(t, err)
		assert.Equal(t, arn, l.OnboardingExecutionID(o), "run %d", run)
		require.NoError(t, l.StopOnboarding(context.Background(), arn, "done"))
	}

	sfnOnboardings := NewStepFunctions(&fakeSFN{}, "arn:aws:states:eu-west-1:123456789012:stateMachine:maasflow-onboarding")
	assert.Equal(t, "arn:aws:states:eu-west-1:123456789012:execution:maasflow-onboarding:onboarding-ob-1-2",
		sfnOnboardings.OnboardingExecutionID(onboarding))
}
