package api

import (
	"context"
	"fmt"
	"net/http"

	"github.com/maasflow/maasflow/shared/domain"
)

// reopening is how one recovery operation reopens a stopped onboarding and
// where its execution enters the state machine.
type reopening struct {
	op domain.RecoveryOperation
	// newAttempt starts attempt + 1 from the stage before discovery (rerun,
	// restart-clean); otherwise the same attempt runs again (Run + 1:
	// retry, resume, adopt), keeping its stage, checkpoint and token row.
	newAttempt bool
	// start is where the execution enters the state machine; "" is the top.
	start domain.Stage
	// change adjusts the reopened record, when set.
	change func(*domain.Onboarding)
	// detail is the timeline note's text, given the record as it was and
	// as it is reopened.
	detail func(prev, reopened domain.Onboarding) string
	// beforeStart, when set, runs after the record is reopened and before
	// the execution starts; an error closes the run unstarted.
	beforeStart func(ctx context.Context) error
}

// restartCleanOnboarding is restart-clean: an explicit reset. Refused for
// an active node (undoing an onboarded node is a decommission). The record
// is reopened as a new attempt (taking the host lock), every enrollment
// token of the node is revoked, so no bootstrap handed out before the
// reset can enroll it, and the attempt starts at the state machine's reset
// entry, which releases the MAAS machine with the
// policy's erase before commissioning it afresh (the order is the ASL's;
// this handler touches no MAAS).
func restartCleanOnboarding(s *server, rq *request, o domain.Onboarding, reason string) (domain.Onboarding, error) {
	if _, _, err := s.restartCleanRefusal(rq.ctx(), o); err != nil {
		return o, err
	}
	if reason == "" {
		reason = "restart-clean by " + rq.actor
	}
	// The tokens are revoked once the reopened record holds the host, so a
	// restart-clean refused because another onboarding of the host runs
	// never touches that onboarding's token.
	revoke := func(ctx context.Context) error {
		if o.NodeID != "" {
			node, err := s.store.GetNode(ctx, o.NodeID)
			if err != nil {
				return err
			}
			if err := s.revokeAllTokens(ctx, node, ""); err != nil {
				return err
			}
		}
		return s.store.RevokeEnrollmentToken(ctx, o.EnrollmentTokenHash, s.clock.Now().UTC())
	}
	return s.reopen(rq, o, reopening{op: domain.OpRestartClean, newAttempt: true, start: domain.StageReset, beforeStart: revoke,
		detail: func(prev, reopened domain.Onboarding) string {
			return fmt.Sprintf("attempt %d started clean by %s after attempt %d was %s at stage %s; every enrollment token of the node revoked: %s",
				reopened.Attempt, rq.actor, prev.Attempt, prev.Status, stageOrStart(string(prev.Stage)), reason)
		}})
}

// adoptOnboarding is adopt: the same attempt runs again from the state
// machine's adopt entry, whose activity reads MAAS and the node and maps
// what it finds to the stage to continue from, recording what it adopted.
// A MAAS state with no stage to continue from (anything but Ready or
// Deployed) is refused here first with a 409 naming what MAAS shows and
// the operation that fits, when the API can read MAAS; the activity
// decides the rest (Deployed without an enrolled node needs an operator).
// The node keeps its status: an active node stays active only if the
// completion gates then pass.
func adoptOnboarding(s *server, rq *request, o domain.Onboarding, reason string) (domain.Onboarding, error) {
	if s.machines != nil {
		observed, err := s.observeMachine(rq, o)
		if err != nil {
			return o, err
		}
		if observed != domain.MAASStatusReady && observed != domain.MAASStatusDeployed {
			return o, adoptRefused(o, observed)
		}
	}
	if reason == "" {
		reason = "adopt by " + rq.actor
	}
	return s.reopen(rq, o, reopening{op: domain.OpAdopt, start: domain.StageAdopt,
		change: func(cur *domain.Onboarding) {
			// The adopt entry decides the stage from what MAAS shows.
			cur.Stage = domain.StageValidate
			cur.DeployAttempts = 0
		},
		detail: func(prev, _ domain.Onboarding) string {
			return fmt.Sprintf("adopt of attempt %d requested by %s after it was %s at stage %s: %s",
				prev.Attempt, rq.actor, prev.Status, stageOrStart(string(prev.Stage)), reason)
		}})
}

// reopen is how a recovery operation reopens a stopped onboarding, in the
// frame's startRun: the conditional write counts the new attempt or run
// (so the execution gets a new name) and reopens the record — status
// pending, error and completed_at cleared, the host lock taken again when
// a failure had released it (409 if another onboarding holds the host) —
// then the note on the timeline, the node back into onboarding unless it
// is active, and the execution started at r.start. A start that fails
// closes the run as failed (503).
func (s *server) reopen(rq *request, o domain.Onboarding, r reopening) (domain.Onboarding, error) {
	start := s.starter.StartOnboarding
	if starter, ok := s.starter.(stageStarter); ok {
		start = func(ctx context.Context, o domain.Onboarding) (string, error) {
			return starter.StartOnboardingAt(ctx, o, r.start)
		}
	} else if r.start != "" {
		return o, &StatusError{Status: http.StatusServiceUnavailable, Code: CodeUnavailable,
			Message: fmt.Sprintf("the workflow service cannot start at a stage; onboarding %s was not changed", o.ID)}
	}
	kind := onboardingKind()
	log := kind.log(rq, o)
	now := s.clock.Now().UTC()
	return startRun(s, rq, kind, o, runStart[domain.Onboarding]{
		op: r.op, at: string(r.start), start: start, note: r.detail,
		reopen: func(cur *domain.Onboarding) {
			if r.newAttempt {
				cur.Attempt++
				cur.Run = 0
				cur.Stage = domain.StageValidate
				cur.DeployAttempts = 0
				cur.Checkpoint = ""
				cur.EnrollmentTokenHash = ""
			} else {
				cur.Run++
			}
			cur.Status = domain.OnboardingPending
			cur.Error = nil
			cur.CompletedAt = nil
			cur.ExecutionID = ""
			cur.EnrollmentTaskToken = ""
			cur.CorrelationID = rq.correlationID
			cur.UpdatedAt = now
			if r.change != nil {
				r.change(cur)
			}
		},
		prepare: func(ctx context.Context, reopened domain.Onboarding) (string, error) {
			if o.NodeID != "" {
				if _, err := s.store.UpdateNode(ctx, o.NodeID, func(n *domain.Node) error {
					// An enrolled node stays active: the enrollment wait and the
					// gates of the new run read it as it is.
					if n.Status != domain.NodeActive {
						n.Status = domain.NodeOnboarding
					}
					n.OnboardingID = o.ID
					n.UpdatedAt = now
					return nil
				}); err != nil {
					return "the node record could not be updated", err
				}
			}
			if r.beforeStart != nil {
				if err := r.beforeStart(ctx); err != nil {
					return "the run could not be prepared: " + string(r.op) + " did not finish", err
				}
			}
			return "", nil
		},
		unstarted: func(rq *request, reopened domain.Onboarding, why string) {
			s.closeUnstarted(rq, log, reopened.ID, why)
		},
		failed: func(reopened domain.Onboarding) error {
			return &StatusError{Status: http.StatusServiceUnavailable, Code: CodeUnavailable,
				Message: fmt.Sprintf("the workflow service is unavailable; attempt %d (run %d) of onboarding %s was closed as failed, retry later", reopened.Attempt, reopened.Run, reopened.ID)}
		},
	})
}

// startedLast recognises an onboarding op reopened: it is open, and op is
// the newest recovery operation on its timeline for the current attempt.
// (A new attempt's first note is op's own; a run of the same attempt is
// told apart from the runs other operations started.)
func startedLast(op domain.RecoveryOperation) func(s *server, rq *request, o domain.Onboarding) bool {
	return startedWhere(onboardingKind, func(st recordState, rows []timelineNote) bool {
		last := ""
		for _, r := range rows {
			if r.kind == domain.TimelineNote && r.attempt == st.attempt && r.outcome == string(domain.OnboardingPending) && isRecoveryOp(r.source) {
				last = r.source
			}
		}
		return last == string(op)
	})
}

func isRecoveryOp(source string) bool {
	for _, op := range []domain.RecoveryOperation{domain.OpRetry, domain.OpResume, domain.OpRerun, domain.OpRestartClean, domain.OpAdopt} {
		if source == string(op) {
			return true
		}
	}
	return false
}

// adoptRefused is adopt's 409 for a machine MAAS shows in a state no stage
// continues from ("" is no machine), with the operation that fits.
func adoptRefused(o domain.Onboarding, observed string) *StatusError {
	shows := fmt.Sprintf("MAAS shows machine %s %s", o.MAASSystemID, observed)
	fits := "restart-clean starts over from a released machine"
	switch observed {
	case "":
		shows, fits = "MAAS has no machine for it", "rerun discovers the server again"
		if o.MAASSystemID != "" {
			shows = fmt.Sprintf("MAAS no longer has machine %s", o.MAASSystemID)
		}
	case domain.MAASStatusCommissioning, domain.MAASStatusTesting, domain.MAASStatusDeploying, "Releasing", "Disk erasing":
		fits = "wait until MAAS settles, then adopt again"
	case domain.MAASStatusFailedDeployment:
		fits = "retry deploys again (releasing first), or restart-clean"
	case domain.MAASStatusNew, domain.MAASStatusFailedCommissioning, domain.MAASStatusFailedTesting:
		fits = "rerun or restart-clean commissions it"
	case domain.MAASStatusBroken:
		fits = "mark it fixed in MAAS, then adopt again"
	}
	return conflictf("onboarding %s cannot be adopted: %s, and only Ready (continue at storage) or Deployed (completion gates) can be taken over: %s"+byMAAS,
		o.ID, shows, fits, domain.OpAdopt)
}
