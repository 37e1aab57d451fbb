package activities_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/activities/onboarding"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
	"github.com/maasflow/maasflow/shared/store"
)

func TestBoundaryKeepsTheNamesTheStateMachineMatches(t *testing.T) {
	tests := []struct {
		name string
		in   error
		want string
	}{
		{"declared type wrapped", fmt.Errorf("discover: %w", &onboarding.AmbiguousMachineMatchError{Rule: "hostname"}), "AmbiguousMachineMatchError"},
		{"maas 503 wrapped", fmt.Errorf("read machine: %w", &maas.MAASUnavailableError{StatusCode: 503}), "MAASUnavailableError"},
		{"maas timeout", &maas.MAASTimeoutError{Op: "get"}, "MAASTimeoutError"},
		{"maas transport", &maas.MAASTransportError{Op: "get"}, "MAASTransportError"},
		{"maas state conflict", &maas.MAASConflictError{Op: "deploy", Message: "Can't deploy a machine that is in the 'Deployed' state"}, "MAASConflictError"},
		{"maas bad request", &maas.MAASBadRequestError{Op: "deploy"}, "MAASBadRequestError"},
		{"maas forbidden", &maas.MAASForbiddenError{Op: "deploy"}, "MAASForbiddenError"},
		{"maas not found", &maas.MAASNotFoundError{Op: "get"}, "MAASNotFoundError"},
		{"maas unauthorized", &maas.MAASUnauthorizedError{Op: "get"}, "MAASUnauthorizedError"},
		{"maas unexpected", &maas.MAASUnexpectedResponseError{Op: "get"}, "MAASUnexpectedResponseError"},
		{"deadline", fmt.Errorf("x: %w", context.DeadlineExceeded), "MAASTimeoutError"},
		{"anything else", errors.New("boom"), "ActivityFailedError"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := activities.Boundary("Test", tc.in)
			assert.Equal(t, tc.want, activities.ErrorName(got))
			assert.Contains(t, onboarding.ErrorRoutes(), tc.want)
		})
	}
	assert.NoError(t, activities.Boundary("Test", nil))
}

func TestStoreErrorsNeverCrossUnderMAASNames(t *testing.T) {
	tests := []struct {
		in   error
		want string
	}{
		{&store.ItemNotFoundError{Kind: "site", ID: "s"}, "RecordNotFoundError"},
		{fmt.Errorf("x: %w", &store.ItemConflictError{Kind: "onboarding", ID: "o"}), "RecordConflictError"},
		{&store.InvalidRecordError{Kind: "node", Field: "id"}, "ActivityFailedError"},
		{&onboarding.StaleAttemptError{OnboardingID: "o", Attempt: 1, Current: 2}, "StaleAttemptError"},
		{errors.New("throttled"), "StoreUnavailableError"},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, activities.ErrorName(activities.StoreError("op", tc.in)), "%v", tc.in)
	}
	assert.NoError(t, activities.StoreError("op", nil))
}

func TestPollWait(t *testing.T) {
	var got []int
	for n := range 9 {
		got = append(got, activities.PollWait(n))
	}
	assert.Equal(t, []int{15, 22, 33, 50, 75, 113, 120, 120, 120}, got)
	assert.Equal(t, 120, activities.PollWait(10000))
}

func TestFailureFrom(t *testing.T) {
	assert.Equal(t, &domain.Failure{Code: "X", Message: "boom", Stage: "deploy"},
		activities.FailureFrom(&activities.CatchResult{Error: "X", Cause: `{"errorMessage":"boom","errorType":"X"}`}, "deploy"))
	assert.Equal(t, &domain.Failure{Code: "States.Timeout", Message: "States.Timeout", Stage: "s"},
		activities.FailureFrom(&activities.CatchResult{Error: "States.Timeout", Cause: ""}, "s"))
	assert.Equal(t, "Unknown", activities.FailureFrom(nil, "s").Code)
	long := activities.FailureFrom(&activities.CatchResult{Error: "X", Cause: string(make([]byte, 5000))}, "s")
	assert.LessOrEqual(t, len(long.Message), activities.MaxFailureMessage+len("…"))
}
