package domain

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestAllowedOperations(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		status OnboardingStatus
		stage  Stage
		want   []RecoveryOperation
	}{
		{"pending", OnboardingPending, "", []RecoveryOperation{OpCancel, OpMarkManualIntervention}},
		{"running", OnboardingRunning, StageDeploy, []RecoveryOperation{OpCancel, OpMarkManualIntervention}},
		{"manual intervention at a stage", OnboardingManualIntervention, StageWaitDeployed,
			[]RecoveryOperation{OpRetry, OpResume, OpRerun, OpRestartClean, OpAdopt, OpCancel}},
		{"manual intervention before any stage", OnboardingManualIntervention, "",
			[]RecoveryOperation{OpResume, OpRerun, OpRestartClean, OpAdopt, OpCancel}},
		{"failed at a stage", OnboardingFailed, StageCommission, []RecoveryOperation{OpRetry, OpRerun, OpRestartClean, OpAdopt}},
		{"failed before any stage", OnboardingFailed, "", []RecoveryOperation{OpRerun, OpRestartClean, OpAdopt}},
		{"completed", OnboardingCompleted, StageDone, []RecoveryOperation{}},
		{"cancelled", OnboardingCancelled, StageDeploy, []RecoveryOperation{}},
		{"unknown status", OnboardingStatus("bogus"), StageDeploy, []RecoveryOperation{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tc.want, AllowedOperations(tc.status, tc.stage))
			for _, op := range []RecoveryOperation{OpRetry, OpResume, OpRerun, OpRestartClean, OpAdopt, OpCancel, OpMarkManualIntervention} {
				assert.Equal(t, contains(tc.want, op), Allows(tc.status, tc.stage, op), "%s", op)
			}
		})
	}
}

func contains(ops []RecoveryOperation, op RecoveryOperation) bool {
	for _, o := range ops {
		if o == op {
			return true
		}
	}
	return false
}
