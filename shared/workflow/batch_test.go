package workflow

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
)

func TestStepFunctionsStartBatchNamesEveryChild(t *testing.T) {
	c := &fakeSFN{}
	second := onboarding
	second.ID = "ob-2"
	sf := NewStepFunctions(c, "arn:aws:states:eu-west-1:1:stateMachine:onboarding").WithBatch("arn:aws:states:eu-west-1:1:stateMachine:batch")
	exec, children, err := sf.StartBatch(context.Background(), "b-1", []domain.Onboarding{onboarding, second})
	require.NoError(t, err)
	assert.Equal(t, "arn:exec", exec)
	assert.Equal(t, "batch-b-1", aws.ToString(c.start.Name))
	assert.Equal(t, "arn:aws:states:eu-west-1:1:stateMachine:batch", aws.ToString(c.start.StateMachineArn))
	assert.Equal(t, map[string]string{
		"ob-1": "arn:aws:states:eu-west-1:1:execution:onboarding:onboarding-ob-1-2",
		"ob-2": "arn:aws:states:eu-west-1:1:execution:onboarding:onboarding-ob-2-2",
	}, children)
	var in BatchInput
	require.NoError(t, json.Unmarshal([]byte(aws.ToString(c.start.Input)), &in))
	require.Len(t, in.Onboardings, 2)
	assert.Equal(t, "onboarding-ob-2-2", in.Onboardings[1].ExecutionName)
	assert.Equal(t, "ob-2", in.Onboardings[1].Input.OnboardingID)
}

func TestStartBatchWithoutBatchMachineIsRefused(t *testing.T) {
	assert.False(t, NewLocal(&fakeEngine{}, "sm").BatchStarterEnabled())
	_, _, err := NewLocal(&fakeEngine{}, "sm").StartBatch(context.Background(), "b-1", []domain.Onboarding{onboarding})
	require.ErrorIs(t, err, errNoBatchMachine)
	assert.True(t, NewStepFunctions(&fakeSFN{}, "sm").WithBatch("b").BatchStarterEnabled())
}
