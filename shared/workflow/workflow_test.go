package workflow

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
)

var onboarding = domain.Onboarding{
	ID: "ob-1", SiteID: "site-1", Hostname: "c07u31", Attempt: 2, CorrelationID: "corr-1",
}

const wantInput = `{"onboarding_id":"ob-1","site_id":"site-1","hostname":"c07u31","attempt":2,"correlation_id":"corr-1"}`

type fakeEngine struct {
	arn, name string
	input     []byte
	token     string
	err       error
}

func (f *fakeEngine) StartExecution(_ context.Context, arn, name string, input []byte) (string, error) {
	f.arn, f.name, f.input = arn, name, input
	return "exec-arn", f.err
}

func (f *fakeEngine) SendTaskSuccess(token string, _ []byte) error {
	f.token = token
	return f.err
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
		{name: "task gone", err: &sfntypes.TaskDoesNotExist{}, wantErr: new(*TaskEndedError)},
		{name: "task timed out", err: &sfntypes.TaskTimedOut{}, wantErr: new(*TaskEndedError)},
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
