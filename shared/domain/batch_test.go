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
		{[]string{OnboardingCompleted, OnboardingRunning, OnboardingManualIntervention}, BatchRunning},
		{[]string{OnboardingPending}, BatchRunning},
		{[]string{OnboardingCompleted, OnboardingManualIntervention, OnboardingFailed}, BatchManualIntervention},
		{[]string{OnboardingCompleted, OnboardingCompleted}, BatchCompleted},
		{[]string{OnboardingCompleted, BatchItemRejected}, BatchFailed},
		{[]string{OnboardingCancelled}, BatchFailed},
		{nil, BatchFailed},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, BatchStatus(tc.statuses), tc.statuses)
	}
}
