package domain

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestDecommissionAllowedOperations(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		status OnboardingStatus
		stage  DecommissionStage
		want   []RecoveryOperation
	}{
		{"pending", OnboardingPending, DecomStageStart, []RecoveryOperation{OpCancel, OpMarkManualIntervention}},
		{"running", OnboardingRunning, DecomStageRelease, []RecoveryOperation{OpCancel, OpMarkManualIntervention}},
		{"manual intervention at a stage", OnboardingManualIntervention, DecomStageRelease,
			[]RecoveryOperation{OpRetry, OpResume, OpRerun, OpAdopt, OpCancel}},
		{"manual intervention without a stage", OnboardingManualIntervention, "",
			[]RecoveryOperation{OpResume, OpRerun, OpAdopt, OpCancel}},
		{"failed", OnboardingFailed, DecomStageStart, []RecoveryOperation{}},
		{"completed", OnboardingCompleted, DecomStageFinish, []RecoveryOperation{}},
		{"cancelled", OnboardingCancelled, DecomStageRelease, []RecoveryOperation{}},
	}
	all := []RecoveryOperation{OpRetry, OpResume, OpRerun, OpRestartClean, OpAdopt, OpCancel, OpMarkManualIntervention}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tc.want, DecommissionAllowedOperations(tc.status, tc.stage))
			for _, op := range all {
				assert.Equal(t, contains(tc.want, op), DecommissionAllows(tc.status, tc.stage, op), "%s", op)
			}
			assert.False(t, DecommissionAllows(tc.status, tc.stage, OpRestartClean), "restart-clean never applies to a decommission")
		})
	}
}

func TestDecommissionRecoveryStages(t *testing.T) {
	t.Parallel()
	assert.Equal(t, DecomStageDrain, DecommissionRetryStage(DecomStageStart))
	assert.Equal(t, DecomStageRelease, DecommissionRetryStage(DecomStageRelease))
	assert.Equal(t, DecomStageDelete, DecommissionAdoptStage(DecommissionFull))
	assert.Equal(t, DecomStageReimage, DecommissionAdoptStage(DecommissionReimage))
	assert.Equal(t, DecomStageFinish, DecommissionAdoptStage(DecommissionStorageCleanup))
	assert.False(t, DecommissionDrained(DecomStageDrain))
	assert.True(t, DecommissionDrained(DecomStageRelease))
}
