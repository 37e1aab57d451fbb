package api

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/logfield"
)

// recoveryOp is a recovery operation on an onboarding.
type recoveryOp = recoveryOpOf[domain.Onboarding]

// onboardingKind is the onboarding's recoveryKind.
func onboardingKind() recoveryKind[domain.Onboarding] {
	return recoveryKind[domain.Onboarding]{
		name: "onboarding",
		get: func(s *server, ctx context.Context, id string) (domain.Onboarding, error) {
			return s.store.GetOnboarding(ctx, id)
		},
		state: func(o domain.Onboarding) recordState {
			return recordState{id: o.ID, status: string(o.Status), stage: string(o.Stage), attempt: o.Attempt, run: o.Run,
				executionID: o.ExecutionID,
				open:        o.Status == domain.OnboardingPending || o.Status == domain.OnboardingRunning,
				frozen:      o.Status == domain.OnboardingManualIntervention && o.Error != nil && o.Error.Code == domain.FrozenCode,
				cancelled:   o.Status == domain.OnboardingCancelled}
		},
		allows: func(o domain.Onboarding, op domain.RecoveryOperation) bool {
			return domain.Allows(o.Status, o.Stage, op)
		},
		served: servedOperations,
		update: func(s *server, ctx context.Context, id string, change func(*domain.Onboarding) error) (domain.Onboarding, error) {
			return s.store.UpdateOnboarding(ctx, id, change)
		},
		// The run's enrollment token is revoked with the freeze
		// (store.CloseOnboarding); the operation that continues the run
		// hands out a new one. The host lock is kept: manual_intervention
		// is open.
		close: func(s *server, ctx context.Context, id string, change func(*domain.Onboarding) error) (domain.Onboarding, error) {
			return s.store.CloseOnboarding(ctx, id, change)
		},
		freeze: func(cur *domain.Onboarding, reason string, now time.Time) {
			cur.Status = domain.OnboardingManualIntervention
			cur.Error = &domain.Failure{Code: domain.FrozenCode, Message: reason, Stage: cur.Stage}
			cur.UpdatedAt = now
			// The wait it belonged to is gone with the execution.
			cur.EnrollmentTaskToken = ""
		},
		setExecution: func(cur *domain.Onboarding, id string) { cur.ExecutionID = id },
		stopper: func(s *server) (func(ctx context.Context, executionID, cause string) error, error) {
			return s.stopper.StopOnboarding, nil
		},
		note: func(s *server, ctx context.Context, o domain.Onboarding, op domain.RecoveryOperation, detail string) error {
			return s.store.AppendOnboardingEvents(ctx, domain.TimelineEntry{
				OnboardingID: o.ID, Time: s.clock.Now().UTC(), Attempt: o.Attempt, Kind: domain.TimelineNote, Stage: o.Stage,
				Outcome: string(o.Status), Source: string(op), Detail: detail,
			})
		},
		timeline: func(s *server, ctx context.Context, id string) ([]timelineNote, error) {
			rows, err := s.store.ListOnboardingEvents(ctx, id)
			out := make([]timelineNote, len(rows))
			for i, r := range rows {
				out[i] = timelineNote{attempt: r.Attempt, kind: r.Kind, source: r.Source, outcome: r.Outcome, detail: r.Detail}
			}
			return out, err
		},
		log: func(rq *request, o domain.Onboarding) *slog.Logger {
			return rq.log.With(logfield.OnboardingID, o.ID, logfield.SiteID, o.SiteID, logfield.NodeID, o.NodeID, logfield.Hostname, o.Hostname)
		},
	}
}

// onboardingRecoveryOps are the operations served under
// POST /api/v1/admin/onboardings/{id}/<op>. cancel has its own handler
// (cancel.go) and route; it is listed so allowed_operations names it.
func onboardingRecoveryOps() []recoveryOp {
	return []recoveryOp{
		freezeOp(onboardingKind),
		{op: domain.OpRerun, handle: rerunOnboarding, done: startedBy(domain.OpRerun)},
		{op: domain.OpRetry, handle: retryOnboarding, done: startedRun(domain.OpRetry)},
		{op: domain.OpResume, handle: resumeOnboarding, done: startedRun(domain.OpResume)},
		{op: domain.OpRestartClean, handle: restartCleanOnboarding, done: startedLast(domain.OpRestartClean)},
		{op: domain.OpAdopt, handle: adoptOnboarding, done: startedLast(domain.OpAdopt)},
	}
}

// servedOperations is what allowed_operations lists: the domain's rule,
// narrowed to the operations this API carries out.
func servedOperations(o domain.Onboarding) []domain.RecoveryOperation {
	out := []domain.RecoveryOperation{}
	for _, op := range domain.AllowedOperations(o.Status, o.Stage) {
		if (op == domain.OpCancel || findRecoveryOp(op) != nil) && !recordRulesOut(o, op) {
			out = append(out, op)
		}
	}
	return out
}

func findRecoveryOp(op domain.RecoveryOperation) *recoveryOp {
	for _, r := range onboardingRecoveryOps() {
		if r.op == op {
			return &r
		}
	}
	return nil
}

// recoveryRoutes is one route per served onboarding operation.
func recoveryRoutes(obs string) []route {
	return recoveryRoutesOf(obs, onboardingKind, onboardingRecoveryOps(), (*server).recoverOnboarding)
}

// recoverOnboarding runs an onboarding's recovery operation in the frame.
func (s *server) recoverOnboarding(rq *request, op recoveryOp) (int, any, error) {
	if op.op == domain.OpRestartClean {
		if dry, err := dryRun(rq); err != nil || dry {
			return s.planRestartClean(rq, err)
		}
	}
	return runRecovery(s, rq, onboardingKind(), op)
}

// byMAAS ends a 409 that what MAAS shows decided, not the record: the
// operation is in allowed_operations (which reads the record alone), so
// the refusal says it depends on MAAS and may pass once MAAS moves. Its
// verb is the operation.
const byMAAS = " (the record allows %s; this refusal depends on what MAAS shows now)"

// recordRulesOut is what the record itself rules out beyond its status and
// stage, so allowed_operations never lists it: resume of a checkpoint no
// rule knows.
func recordRulesOut(o domain.Onboarding, op domain.RecoveryOperation) bool {
	if op == domain.OpResume && o.Checkpoint != "" {
		_, known := domain.RuleFor(o.Checkpoint)
		return !known
	}
	return false
}

// notAllowed is the 409 for an operation the onboarding's state refuses.
func notAllowed(o domain.Onboarding, op domain.RecoveryOperation) *StatusError {
	return onboardingKind().refuse(o, op)
}

// startedBy recognises an onboarding whose current attempt op started: it
// is open and its timeline holds op's note for this attempt.
func startedBy(op domain.RecoveryOperation) func(s *server, rq *request, o domain.Onboarding) bool {
	return startedWhere(onboardingKind, func(st recordState, rows []timelineNote) bool {
		for _, r := range rows {
			if r.source == string(op) && r.attempt == st.attempt && r.kind == domain.TimelineNote {
				return true
			}
		}
		return false
	})
}

// rerunOnboarding is rerun: a new attempt (attempt + 1) from the top, for
// the same node. Discovery finds the machine MAAS already has and adopts
// it; the deploy of the new attempt hands the node a new enrollment token,
// and the close that stopped the previous attempt already revoked its own
// (store.CloseOnboarding). Reopening takes the host lock again when a
// failure had released it; a host another onboarding holds answers 409.
func rerunOnboarding(s *server, rq *request, o domain.Onboarding, reason string) (domain.Onboarding, error) {
	if reason == "" {
		reason = "rerun by " + rq.actor
	}
	return s.reopen(rq, o, reopening{op: domain.OpRerun, newAttempt: true,
		detail: func(prev, reopened domain.Onboarding) string {
			return fmt.Sprintf("attempt %d started by %s after attempt %d was %s at stage %s: %s",
				reopened.Attempt, rq.actor, prev.Attempt, prev.Status, stageOrStart(string(prev.Stage)), reason)
		}})
}
