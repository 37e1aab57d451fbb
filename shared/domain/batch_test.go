package domain

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestBatchStatus(t *testing.T) {
	cases := []struct {
		statuses []string
		want     string
	}{
		{[]string{string(OnboardingCompleted), string(OnboardingRunning), string(OnboardingManualIntervention)}, BatchRunning},
		{[]string{string(OnboardingPending)}, BatchRunning},
		{[]string{string(OnboardingCompleted), string(OnboardingManualIntervention), string(OnboardingFailed)}, BatchManualIntervention},
		{[]string{string(OnboardingCompleted), string(OnboardingCompleted)}, BatchCompleted},
		{[]string{string(OnboardingCompleted), BatchItemRejected}, BatchFailed},
		{[]string{string(OnboardingCancelled)}, BatchFailed},
		{nil, BatchFailed},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, BatchStatus(tc.statuses), tc.statuses)
	}
}
