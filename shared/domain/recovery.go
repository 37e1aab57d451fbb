package domain

// RecoveryOperation is an operator's way out of a stopped or stuck
// workflow (requirements API boundary §4.3/§4.4). Each has its own meaning; docs/recovery.md
// holds the table.
type RecoveryOperation string

// Recovery operations, in the order they are listed to an operator.
const (
	OpRetry                  RecoveryOperation = "retry"
	OpResume                 RecoveryOperation = "resume"
	OpRerun                  RecoveryOperation = "rerun"
	OpRestartClean           RecoveryOperation = "restart-clean"
	OpAdopt                  RecoveryOperation = "adopt"
	OpCancel                 RecoveryOperation = "cancel"
	OpMarkManualIntervention RecoveryOperation = "mark-manual-intervention"
)

// FrozenCode is the failure code of an onboarding an operator froze with
// mark-manual-intervention; a repeated freeze recognises its own work by it.
const FrozenCode = "FrozenByOperator"

// AllowedOperations is the one rule of which recovery operations an
// onboarding in status st, stopped at stage, accepts. A pure function of
// the record, so the API's 409, the GET's allowed_operations and the CLI
// always agree.
//
//   - pending/running: the run is live; it can only be frozen or cancelled.
//   - manual_intervention/failed: retry needs a stage that stopped (nothing
//     to run again otherwise); resume needs a frozen or stopped run, which
//     a failed one is not (its stage failed: retry or rerun it); rerun,
//     restart-clean and adopt start or take over a run; cancel only while
//     the record is open.
//   - completed: nothing — the node is active; undoing it is a
//     decommission.
//   - cancelled: the host was freed; a new onboarding is the way on.
func AllowedOperations(st OnboardingStatus, stage Stage) []RecoveryOperation {
	switch st {
	case OnboardingPending, OnboardingRunning:
		return []RecoveryOperation{OpCancel, OpMarkManualIntervention}
	case OnboardingManualIntervention:
		ops := []RecoveryOperation{}
		if stage != "" {
			ops = append(ops, OpRetry)
		}
		return append(ops, OpResume, OpRerun, OpRestartClean, OpAdopt, OpCancel)
	case OnboardingFailed:
		ops := []RecoveryOperation{}
		if stage != "" {
			ops = append(ops, OpRetry)
		}
		return append(ops, OpRerun, OpRestartClean, OpAdopt)
	}
	return []RecoveryOperation{}
}

// Allows reports whether op is among AllowedOperations(st, stage).
func Allows(st OnboardingStatus, stage Stage, op RecoveryOperation) bool {
	for _, a := range AllowedOperations(st, stage) {
		if a == op {
			return true
		}
	}
	return false
}
