package domain

// DecommissionRecovery is the decommission's recovery table. It differs
// from the onboarding's where a decommission differs:
//
//   - pending/running: the run is live; it can only be frozen or
//     cancelled.
//   - manual_intervention: retry needs a stage that stopped; resume
//     continues from the stage's checkpoint once MAAS agrees; rerun starts
//     a new attempt from the drain; adopt takes a machine MAAS already
//     shows released, only once the drain finished (before it, adopt would
//     skip the tenants' allocations, so it is not listed); cancel gives up.
//   - failed: nothing. Its lock was freed, and its node got its status
//     back only if no attempt released the machine and MAAS showed it
//     Deployed (MayReturnToService), else it is retired; a new
//     decommission is the way on.
//   - completed, cancelled: nothing; the node is where the outcome left
//     it.
//
// restart-clean is never allowed: a decommission already releases the
// machine with erase from the top, so rerun is its clean restart.
var DecommissionRecovery = RecoveryTable[DecommissionStatus, DecommissionStage]{
	{Status: DecommissionPending, Op: OpCancel},
	{Status: DecommissionPending, Op: OpMarkManualIntervention},
	{Status: DecommissionRunning, Op: OpCancel},
	{Status: DecommissionRunning, Op: OpMarkManualIntervention},
	{Status: DecommissionManualIntervention, Op: OpRetry, When: func(stage DecommissionStage) bool {
		return stage != "" && stage != DecomStageFinish
	}},
	{Status: DecommissionManualIntervention, Op: OpResume},
	{Status: DecommissionManualIntervention, Op: OpRerun},
	{Status: DecommissionManualIntervention, Op: OpAdopt, When: DecommissionDrained},
	{Status: DecommissionManualIntervention, Op: OpCancel},
}

// DecommissionAllowedOperations is DecommissionRecovery's list for a
// decommission in status st, stopped at stage.
func DecommissionAllowedOperations(st DecommissionStatus, stage DecommissionStage) []RecoveryOperation {
	return DecommissionRecovery.Allowed(st, stage)
}

// DecommissionAllows reports whether op is among
// DecommissionAllowedOperations(st, stage).
func DecommissionAllows(st DecommissionStatus, stage DecommissionStage, op RecoveryOperation) bool {
	return DecommissionRecovery.Allows(st, stage, op)
}

// DecommissionRetryStage is where retry enters the decommission ASL to run
// the stage that stopped it again: the stage itself, except that a run
// stopped before its first stage began (start) runs the drain.
func DecommissionRetryStage(stage DecommissionStage) DecommissionStage {
	if stage == DecomStageStart || stage == "" {
		return DecomStageDrain
	}
	return stage
}

// DecommissionAdoptStage is where adopt enters once MAAS shows the
// machine released: the step the mode takes after Ready.
func DecommissionAdoptStage(mode string) DecommissionStage {
	switch mode {
	case DecommissionFull:
		return DecomStageDelete
	case DecommissionReimage:
		return DecomStageReimage
	}
	return DecomStageFinish
}

// DecommissionDrained reports whether a decommission at stage has finished
// its drain: every stage after it does.
func DecommissionDrained(stage DecommissionStage) bool {
	switch stage {
	case "", DecomStageStart, DecomStageDrain:
		return false
	}
	return true
}
