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

// RecoveryRule is one row of a workflow's recovery table: a record in
// Status accepts Op when the stage it stopped at passes When (nil: at any
// stage).
type RecoveryRule[St ~string, S ~string] struct {
	Status St
	Op     RecoveryOperation
	When   func(stage S) bool
}

// RecoveryTable is a workflow's one rule of which recovery operations a
// record accepts, by its status and the stage it stopped at. Its rows are
// in the order the operations are listed to an operator. A pure function
// of the record, so the API's 409, the GET's allowed_operations and the
// CLI always agree. Every workflow states its own table; the reading of it
// is this one.
type RecoveryTable[St ~string, S ~string] []RecoveryRule[St, S]

// Allowed lists the operations a record in status st, stopped at stage,
// accepts (never nil).
func (t RecoveryTable[St, S]) Allowed(st St, stage S) []RecoveryOperation {
	ops := []RecoveryOperation{}
	for _, r := range t {
		if r.Status == st && (r.When == nil || r.When(stage)) {
			ops = append(ops, r.Op)
		}
	}
	return ops
}

// Allows reports whether op is among Allowed(st, stage).
func (t RecoveryTable[St, S]) Allows(st St, stage S, op RecoveryOperation) bool {
	for _, r := range t {
		if r.Status == st && r.Op == op && (r.When == nil || r.When(stage)) {
			return true
		}
	}
	return false
}

// stopped is true of a record that stopped at a stage (not before the
// first): only then is there a stage to retry.
func stopped[S ~string](stage S) bool { return stage != "" }

// OnboardingRecovery is the onboarding's recovery table:
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
var OnboardingRecovery = RecoveryTable[OnboardingStatus, Stage]{
	{Status: OnboardingPending, Op: OpCancel},
	{Status: OnboardingPending, Op: OpMarkManualIntervention},
	{Status: OnboardingRunning, Op: OpCancel},
	{Status: OnboardingRunning, Op: OpMarkManualIntervention},
	{Status: OnboardingManualIntervention, Op: OpRetry, When: stopped[Stage]},
	{Status: OnboardingManualIntervention, Op: OpResume},
	{Status: OnboardingManualIntervention, Op: OpRerun},
	{Status: OnboardingManualIntervention, Op: OpRestartClean},
	{Status: OnboardingManualIntervention, Op: OpAdopt},
	{Status: OnboardingManualIntervention, Op: OpCancel},
	{Status: OnboardingFailed, Op: OpRetry, When: stopped[Stage]},
	{Status: OnboardingFailed, Op: OpRerun},
	{Status: OnboardingFailed, Op: OpRestartClean},
	{Status: OnboardingFailed, Op: OpAdopt},
}

// AllowedOperations is OnboardingRecovery's list for an onboarding in
// status st, stopped at stage.
func AllowedOperations(st OnboardingStatus, stage Stage) []RecoveryOperation {
	return OnboardingRecovery.Allowed(st, stage)
}

// Allows reports whether op is among AllowedOperations(st, stage).
func Allows(st OnboardingStatus, stage Stage, op RecoveryOperation) bool {
	return OnboardingRecovery.Allows(st, stage, op)
}
