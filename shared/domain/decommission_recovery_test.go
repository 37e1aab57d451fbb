package domain

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestDecommissionAllowedOperations(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		status DecommissionStatus
		stage  DecommissionStage
		want   []RecoveryOperation
	}{
		{"pending", DecommissionPending, DecomStageStart, []RecoveryOperation{OpCancel, OpMarkManualIntervention}},
		{"running", DecommissionRunning, DecomStageRelease, []RecoveryOperation{OpCancel, OpMarkManualIntervention}},
		{"manual intervention at a stage", DecommissionManualIntervention, DecomStageRelease,
			[]RecoveryOperation{OpRetry, OpResume, OpRerun, OpAdopt, OpCancel}},
		{"manual intervention without a stage", DecommissionManualIntervention, "",
			[]RecoveryOperation{OpResume, OpRerun, OpCancel}},
		{"manual intervention in the drain: adopt would skip the allocations", DecommissionManualIntervention, DecomStageDrain,
			[]RecoveryOperation{OpRetry, OpResume, OpRerun, OpCancel}},
		{"failed", DecommissionFailed, DecomStageStart, []RecoveryOperation{}},
		{"completed", DecommissionCompleted, DecomStageFinish, []RecoveryOperation{}},
		{"cancelled", DecommissionCancelled, DecomStageRelease, []RecoveryOperation{}},
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

// TestReleaseStartedReadsTheWholeHistory: whether the machine may have
// left the tenant's OS is read from the record and every attempt's
// timeline, so a rerun (back at the drain, evidence cleared) or a retry
// (erase start cleared) still knows an earlier attempt released it.
func TestReleaseStartedReadsTheWholeHistory(t *testing.T) {
	sent := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(stage DecommissionStage) Decommission {
		return Decommission{Stage: stage, Attempt: 2, NodeStatusBefore: NodeActive}
	}
	assert.False(t, at(DecomStageDrain).ReleaseStarted(nil), "the drain sends nothing to MAAS")
	assert.False(t, at(DecomStageRelease).ReleaseStarted([]DecommissionEvent{{Stage: DecomStageRelease, Kind: TimelineStageEntered}}),
		"entering the release stage sends nothing by itself")
	recorded := at(DecomStageDrain)
	recorded.ReleaseStartedAt = &sent
	assert.True(t, recorded.ReleaseStarted(nil), "an earlier attempt's release, kept across rerun")
	erased := at(DecomStageRelease)
	erased.Erase.StartedAt = &sent
	assert.True(t, erased.ReleaseStarted(nil))
	assert.True(t, at(DecomStageDelete).ReleaseStarted(nil))

	// Records written before release_started_at existed: the timeline.
	attempt1 := []DecommissionEvent{
		{Attempt: 1, Stage: DecomStageDrain, Kind: TimelineStageEntered},
		{Attempt: 1, Stage: DecomStageRelease, Kind: TimelineNote, Source: "maas", Detail: "release sent (erase secure)"},
	}
	assert.True(t, at(DecomStageStart).ReleaseStarted(attempt1), "attempt 1 released; attempt 2 is back at the start")
	assert.True(t, at(DecomStageStart).ReleaseStarted([]DecommissionEvent{{Attempt: 1, Stage: DecomStageRelease, Kind: TimelineMAASEvent}}))
	assert.True(t, at(DecomStageStart).ReleaseStarted([]DecommissionEvent{{Attempt: 1, Stage: DecomStageFallback, Kind: TimelineStageEntered}}))

	untouched := at(DecomStageDrain)
	assert.True(t, untouched.MayReturnToService(nil, true))
	assert.False(t, untouched.MayReturnToService(nil, false), "MAAS shows anything but Deployed, or could not be read")
	assert.False(t, at(DecomStageStart).MayReturnToService(attempt1, true), "an earlier attempt released it")
	assert.False(t, Decommission{Stage: DecomStageDrain}.MayReturnToService(nil, true), "no status to return to")
}
