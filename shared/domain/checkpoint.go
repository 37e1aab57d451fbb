package domain

import "slices"

// Checkpoint is a stage boundary of the onboarding workflow declared safe
// to continue from: everything before it is done and what it left is
// visible in MAAS, so resume can check MAAS and go on from there instead of
// from the top. The activity that completes the stage records it on the
// onboarding in the same write as its own status change.
type Checkpoint string

// The safe checkpoints, in the order a run passes them.
const (
	// CheckpointDiscovered: the machine is known to MAAS and recorded
	// on the onboarding (discover).
	CheckpointDiscovered Checkpoint = "discovered"
	// CheckpointCommissioned: commissioning and testing ended in MAAS
	// Ready (wait_ready).
	CheckpointCommissioned Checkpoint = "commissioned"
	// CheckpointDeployed: MAAS shows the machine Deployed and the run waits
	// for the node to enroll (wait_deployed).
	CheckpointDeployed Checkpoint = "deployed"
)

// CheckpointRule is what resume needs of a checkpoint: the stage the run
// continues at and the MAAS statuses that still match what the checkpoint
// left.
type CheckpointRule struct {
	Checkpoint Checkpoint
	// Continue is the start stage of the resumed execution.
	Continue Stage
	// Expects are the MAAS status labels under which continuing is safe.
	Expects []string
}

// checkpointRules: after discovery the machine may be anywhere in
// commissioning (CommissionMachine starts it from New or leaves a running
// or finished one alone); after commissioning only Ready lets storage be
// configured, after the hardware is verified again against what MAAS
// shows now; after the deploy only Deployed lets the enrollment wait go on.
var checkpointRules = []CheckpointRule{
	{Checkpoint: CheckpointDiscovered, Continue: StageCommission,
		Expects: []string{MAASStatusNew, MAASStatusCommissioning, MAASStatusTesting, MAASStatusReady}},
	{Checkpoint: CheckpointCommissioned, Continue: StageVerifyHardware, Expects: []string{MAASStatusReady}},
	{Checkpoint: CheckpointDeployed, Continue: StageWaitEnrollment, Expects: []string{MAASStatusDeployed}},
}

// RuleFor returns the rule of checkpoint c; false for an unknown one.
func RuleFor(c Checkpoint) (CheckpointRule, bool) {
	for _, r := range checkpointRules {
		if r.Checkpoint == c {
			return r, true
		}
	}
	return CheckpointRule{}, false
}

// Matches reports whether MAAS showing status still matches the checkpoint.
func (r CheckpointRule) Matches(status string) bool {
	return slices.Contains(r.Expects, status)
}

// OperationsForMAAS names the operations that fit a machine MAAS shows in
// status when resume cannot continue: a failed or half-done MAAS action is
// for retry (which releases or aborts a deploy first); a machine further on
// than the checkpoint (Ready, Allocated, Deployed) for adopt, or retry to
// redo the stage; a machine gone from MAAS (status "") for rerun, whose
// discovery finds or creates it again; anything else for restart-clean.
func OperationsForMAAS(status string) []RecoveryOperation {
	switch status {
	case "":
		return []RecoveryOperation{OpRerun}
	case MAASStatusFailedCommissioning, MAASStatusFailedTesting, MAASStatusFailedDeployment, MAASStatusDeploying:
		return []RecoveryOperation{OpRetry, OpRestartClean}
	case MAASStatusNew, MAASStatusCommissioning, MAASStatusTesting, MAASStatusReady, MAASStatusAllocated, MAASStatusDeployed:
		return []RecoveryOperation{OpAdopt, OpRetry}
	}
	return []RecoveryOperation{OpRestartClean}
}

// RetryEntry is the stage a retry of a run stopped at stage starts at: the
// stage itself, or the one whose action the stopped stage waits on (a wait
// that observed a failure would only observe it again). A deploy, its
// render and its waits start at recover_deploy, which brings the machine
// back to a deployable state as MAAS requires (release from Failed
// deployment, abort a deploy still running) before the deploy hands the
// node a new enrollment token. The enrollment wait and the completion
// gates start at the wait, which completes at once for a node that
// enrolled. False for a stage that cannot be retried (none, done).
func RetryEntry(stage Stage) (Stage, bool) {
	switch stage {
	case "", StageDone:
		return "", false
	case StageWaitReady:
		return StageCommission, true
	case StageVerifyHardware:
		// MAAS records hardware only when it commissions: a retry after
		// the hardware was repaired commissions again before it verifies
		// (Onboarding.RecommissionReady).
		return StageCommission, true
	case StageRenderPayload, StageDeploy, StageWaitDeployed, StageRecoverDeploy:
		return StageRecoverDeploy, true
	case StageCompletionGates:
		return StageWaitEnrollment, true
	}
	return stage, true
}

// StartsRun reports whether a timeline note from source (the operation
// that wrote it) starts a new run of its attempt: retry, resume and adopt
// run the same attempt again. A run owes its own terminal event, so the
// markers of events published before such a note belong to an earlier run.
func StartsRun(source string) bool {
	switch RecoveryOperation(source) {
	case OpRetry, OpResume, OpAdopt:
		return true
	}
	return false
}

// PublishedInRun reports whether rows (a timeline in order) hold the
// marker of detailType published for attempt, written by its current run:
// a marker of source markerSource with detail detailType after the last
// note that started a run of the attempt.
func PublishedInRun(rows []TimelineEntry, attempt int, markerSource, detailType string) bool {
	done := false
	for _, r := range rows {
		if r.Attempt != attempt || r.Kind != TimelineNote {
			continue
		}
		switch {
		case StartsRun(r.Source):
			done = false
		case r.Source == markerSource && r.Detail == detailType:
			done = true
		}
	}
	return done
}
