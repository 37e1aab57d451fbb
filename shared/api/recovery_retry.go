package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/logfield"
	"github.com/maasflow/maasflow/shared/maas"
)

// MachineReader reads what MAAS shows of one machine of a site, with the
// site's credentials over its network path. Resume re-reads the machine
// before it continues from a checkpoint.
type MachineReader interface {
	GetMachine(ctx context.Context, siteID, systemID string) (maas.Machine, error)
}

// stageStarter starts an onboarding's current attempt at a stage (after
// the guardrails); the workflow starters (shared/workflow) have it.
type stageStarter interface {
	StartOnboardingAt(ctx context.Context, o domain.Onboarding, start domain.Stage) (executionID string, err error)
}

// startedRun recognises an onboarding whose current run op started: it is
// open, in a run after the first, and the last note on its timeline that
// started a run of this attempt is op's.
func startedRun(op domain.RecoveryOperation) func(s *server, rq *request, o domain.Onboarding) bool {
	return startedWhere(onboardingKind, func(st recordState, rows []timelineNote) bool {
		if st.run == 0 {
			return false
		}
		last := ""
		for _, r := range rows {
			if r.attempt == st.attempt && r.kind == domain.TimelineNote && domain.StartsRun(r.source) {
				last = r.source
			}
		}
		return last == string(op)
	})
}

// retryOnboarding is retry: the stage that stopped the run runs again, and
// nothing before it, in the same attempt (a new run, Run + 1). Where the
// execution enters is domain.RetryEntry: a deploy is retried through
// recover_deploy, whose activity releases a machine MAAS shows in Failed
// deployment (or aborts one still Deploying) before the deploy hands the
// node a new enrollment token; the close that stopped the run revoked the
// earlier one. An enrollment wait is retried only for a node that enrolled
// (the gates then run): a node that never did holds a revoked token, and
// waiting again cannot succeed.
func retryOnboarding(s *server, rq *request, o domain.Onboarding, reason string) (domain.Onboarding, error) {
	entry, ok := domain.RetryEntry(o.Stage)
	if !ok {
		return o, notAllowed(o, domain.OpRetry)
	}
	if entry == domain.StageWaitEnrollment {
		enrolled, err := s.nodeEnrolled(rq.ctx(), o)
		if err != nil {
			return o, err
		}
		if !enrolled {
			return o, conflictf("onboarding %s stopped at stage %s and node %s never enrolled; its enrollment token was revoked when the run stopped, so waiting again cannot succeed: use restart-clean",
				o.ID, o.Stage, orNone(o.NodeID))
		}
	}
	detail := fmt.Sprintf("retry of stage %s (entering at %s)", o.Stage, entry)
	return s.continueRun(rq, o, domain.OpRetry, entry, reason, detail, func(cur *domain.Onboarding) {
		if entry == domain.StageRecoverDeploy {
			// The operator's retry is a new run: its deploys get the
			// policy's automatic retries afresh.
			cur.DeployAttempts = 0
		}
	})
}

// resumeOnboarding is resume: the run continues from its last safe
// checkpoint (domain.Checkpoint), once MAAS has been read again and still
// shows what the checkpoint left. An attempt that passed no checkpoint
// continues from its start: discovery adopts the machine MAAS may already
// have. When MAAS shows something else, 409 names what it shows, what the
// checkpoint expects, and the operations that fit (domain.OperationsForMAAS).
func resumeOnboarding(s *server, rq *request, o domain.Onboarding, reason string) (domain.Onboarding, error) {
	if o.Checkpoint == "" {
		return s.continueRun(rq, o, domain.OpResume, "", reason, "resume from the start of the attempt (no checkpoint passed)", nil)
	}
	rule, ok := domain.RuleFor(o.Checkpoint)
	if !ok {
		return o, conflictf("onboarding %s names an unknown checkpoint %q: use retry or rerun", o.ID, o.Checkpoint)
	}
	observed, err := s.observeMachine(rq, o)
	if err != nil {
		return o, err
	}
	if !rule.Matches(observed) {
		return o, checkpointMismatch(o, rule, observed)
	}
	if o.Checkpoint == domain.CheckpointDeployed {
		enrolled, err := s.nodeEnrolled(rq.ctx(), o)
		if err != nil {
			return o, err
		}
		if !enrolled {
			return o, conflictf("onboarding %s cannot resume: MAAS shows machine %s %s as the checkpoint %s expects, but node %s never enrolled and its enrollment token was revoked when the run stopped: use restart-clean",
				o.ID, o.MAASSystemID, observed, o.Checkpoint, orNone(o.NodeID))
		}
	}
	detail := fmt.Sprintf("resume from checkpoint %s at stage %s (MAAS shows machine %s %s)", o.Checkpoint, rule.Continue, o.MAASSystemID, observed)
	return s.continueRun(rq, o, domain.OpResume, rule.Continue, reason, detail, nil)
}

// observeMachine is the MAAS status label of the onboarding's machine; ""
// when MAAS no longer has it. A MAAS that cannot be read answers 503 and
// nothing changes.
func (s *server) observeMachine(rq *request, o domain.Onboarding) (string, error) {
	if o.MAASSystemID == "" {
		return "", nil
	}
	if s.machines == nil {
		return "", &StatusError{Status: http.StatusServiceUnavailable, Code: CodeUnavailable,
			Message: fmt.Sprintf("MAAS cannot be read from this service; onboarding %s was not changed", o.ID)}
	}
	m, err := s.machines.GetMachine(rq.ctx(), o.SiteID, o.MAASSystemID)
	var gone *maas.MAASNotFoundError
	switch {
	case errors.As(err, &gone):
		return "", nil
	case err != nil:
		// The error names MAAS's answer, never the site's key.
		rq.log.WarnContext(rq.ctx(), "read MAAS machine for resume", logfield.OnboardingID, o.ID, logfield.MAASSystemID, o.MAASSystemID,
			"error_type", fmt.Sprintf("%T", err))
		return "", &StatusError{Status: http.StatusServiceUnavailable, Code: CodeUnavailable,
			Message: fmt.Sprintf("MAAS of site %s could not be read; onboarding %s was not changed, retry later", o.SiteID, o.ID)}
	}
	if m.StatusName != "" {
		return m.StatusName, nil
	}
	return m.Status.String(), nil
}

// checkpointMismatch is the 409 of a resume whose checkpoint MAAS no
// longer matches.
func checkpointMismatch(o domain.Onboarding, rule domain.CheckpointRule, observed string) *StatusError {
	shows := fmt.Sprintf("MAAS shows machine %s %s", o.MAASSystemID, observed)
	if observed == "" {
		shows = fmt.Sprintf("MAAS no longer has machine %s", o.MAASSystemID)
	}
	ops := domain.OperationsForMAAS(observed)
	names := make([]string, len(ops))
	for i, op := range ops {
		names[i] = string(op)
	}
	return conflictf("onboarding %s cannot resume: %s, the checkpoint %s expects %s: use %s"+byMAAS,
		o.ID, shows, o.Checkpoint, strings.Join(rule.Expects, " or "), strings.Join(names, " or "), domain.OpResume)
}

// nodeEnrolled reports whether the onboarding's node enrolled: active with
// an enrollment time. The enrollment wait checks the run's token itself.
func (s *server) nodeEnrolled(ctx context.Context, o domain.Onboarding) (bool, error) {
	if o.NodeID == "" {
		return false, nil
	}
	n, err := s.store.GetNode(ctx, o.NodeID)
	if err != nil {
		return false, err
	}
	return n.Status == domain.NodeActive && n.EnrolledAt != nil, nil
}

// continueRun starts a new run of the onboarding's current attempt at
// stage entry ("" is the start), for retry and resume (reopen): Run + 1,
// so the execution gets a new name; change adjusts the reopened record.
// The note on the timeline also tells the run's terminal event apart from
// the earlier run's.
func (s *server) continueRun(rq *request, o domain.Onboarding, op domain.RecoveryOperation, entry domain.Stage,
	reason, detail string, change func(*domain.Onboarding)) (domain.Onboarding, error) {
	if reason == "" {
		reason = string(op) + " by " + rq.actor
	}
	return s.reopen(rq, o, reopening{op: op, start: entry, change: change,
		detail: func(prev, reopened domain.Onboarding) string {
			return fmt.Sprintf("run %d of attempt %d started by %s after it was %s at stage %s: %s; %s",
				reopened.Run, reopened.Attempt, rq.actor, prev.Status, stageOrStart(string(prev.Stage)), detail, reason)
		}})
}

// conflictf is a 409 with a formatted message.
func conflictf(format string, args ...any) *StatusError {
	return &StatusError{Status: http.StatusConflict, Code: CodeConflict, Message: fmt.Sprintf(format, args...)}
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
