package domain

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRetryEntry(t *testing.T) {
	tests := []struct {
		stage Stage
		want  Stage
		ok    bool
	}{
		{"", "", false},
		{StageDone, "", false},
		{StageValidate, StageValidate, true},
		{StageDiscover, StageDiscover, true},
		{StageCommission, StageCommission, true},
		{StageWaitReady, StageCommission, true},
		{StageStorage, StageStorage, true},
		{StagePXEPreflight, StagePXEPreflight, true},
		{StageRoCE, StageRoCE, true},
		{StageHardening, StageHardening, true},
		{StageRenderPayload, StageRecoverDeploy, true},
		{StageDeploy, StageRecoverDeploy, true},
		{StageWaitDeployed, StageRecoverDeploy, true},
		{StageRecoverDeploy, StageRecoverDeploy, true},
		{StageWaitEnrollment, StageWaitEnrollment, true},
		{StageCompletionGates, StageWaitEnrollment, true},
	}
	for _, tt := range tests {
		got, ok := RetryEntry(tt.stage)
		assert.Equal(t, tt.ok, ok, "stage %q", tt.stage)
		assert.Equal(t, tt.want, got, "stage %q", tt.stage)
	}
}

func TestCheckpointRules(t *testing.T) {
	tests := []struct {
		cp       Checkpoint
		cont     Stage
		matches  []string
		refusals []string
	}{
		{CheckpointDiscovered, StageCommission, []string{MAASStatusNew, MAASStatusCommissioning, MAASStatusReady},
			[]string{MAASStatusFailedCommissioning, MAASStatusDeployed, ""}},
		{CheckpointCommissioned, StageVerifyHardware, []string{MAASStatusReady},
			[]string{MAASStatusAllocated, MAASStatusDeploying, MAASStatusNew}},
		{CheckpointDeployed, StageWaitEnrollment, []string{MAASStatusDeployed},
			[]string{MAASStatusReady, MAASStatusFailedDeployment}},
	}
	for _, tt := range tests {
		r, ok := RuleFor(tt.cp)
		if !assert.True(t, ok, tt.cp) {
			continue
		}
		assert.Equal(t, tt.cont, r.Continue)
		for _, st := range tt.matches {
			assert.True(t, r.Matches(st), "%s should match %q", tt.cp, st)
		}
		for _, st := range tt.refusals {
			assert.False(t, r.Matches(st), "%s should refuse %q", tt.cp, st)
		}
	}
	_, ok := RuleFor("elsewhere")
	assert.False(t, ok)
}

func TestOperationsForMAAS(t *testing.T) {
	assert.Equal(t, []RecoveryOperation{OpRerun}, OperationsForMAAS(""))
	assert.Equal(t, []RecoveryOperation{OpAdopt, OpRetry}, OperationsForMAAS(MAASStatusReady))
	assert.Equal(t, []RecoveryOperation{OpRetry, OpRestartClean}, OperationsForMAAS(MAASStatusFailedDeployment))
	assert.Equal(t, []RecoveryOperation{OpRestartClean}, OperationsForMAAS(MAASStatusBroken))
	// Every suggestion is an operation the stopped record allows.
	for _, st := range []string{"", MAASStatusNew, MAASStatusReady, MAASStatusDeploying, MAASStatusBroken} {
		for _, op := range OperationsForMAAS(st) {
			assert.True(t, Allows(OnboardingManualIntervention, StageStorage, op), "%s for %q", op, st)
		}
	}
}

// A run's terminal event is owed again after a retry, resume or adopt
// started a new run of the same attempt; a rerun's new attempt has its own
// markers; another attempt's markers never count.
func TestPublishedInRun(t *testing.T) {
	const ev = "node.onboarding.manual_intervention_required"
	marker := func(attempt int) TimelineEntry {
		return TimelineEntry{Attempt: attempt, Kind: TimelineNote, Source: "event", Detail: ev}
	}
	start := func(attempt int, op RecoveryOperation) TimelineEntry {
		return TimelineEntry{Attempt: attempt, Kind: TimelineNote, Source: string(op)}
	}
	tests := []struct {
		name string
		rows []TimelineEntry
		want bool
	}{
		{"published", []TimelineEntry{marker(1)}, true},
		{"nothing yet", nil, false},
		{"retry started a new run", []TimelineEntry{marker(1), start(1, OpRetry)}, false},
		{"resume, then published again", []TimelineEntry{marker(1), start(1, OpResume), marker(1)}, true},
		{"adopt", []TimelineEntry{marker(1), start(1, OpAdopt)}, false},
		{"a freeze does not start a run", []TimelineEntry{marker(1), start(1, OpMarkManualIntervention)}, true},
		{"another attempt's marker", []TimelineEntry{marker(2)}, false},
		{"another attempt's retry", []TimelineEntry{marker(1), start(2, OpRetry)}, true},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, PublishedInRun(tt.rows, 1, "event", ev), tt.name)
	}
}
