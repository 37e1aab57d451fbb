package api

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/logfield"
)

// recoveryOpOf is a recovery operation the API carries out on a record of
// kind R (an onboarding, a decommission): handle carries it out on a record
// the operation is allowed for; done recognises a record the operation
// already moved, so a repeated request answers that record instead of
// running a second time.
type recoveryOpOf[R any] struct {
	op     domain.RecoveryOperation
	handle func(s *server, rq *request, r R, reason string) (R, error)
	done   func(s *server, rq *request, r R) bool
}

// recoveryOp is a recovery operation on an onboarding.
type recoveryOp = recoveryOpOf[domain.Onboarding]

// recoveryKind is what the frame needs of a record kind: how to read one,
// the domain's rule of what it allows, the 409 naming its state and the
// operations allowed from it, and the answer's form (nil: the record).
type recoveryKind[R any] struct {
	get        func(s *server, rq *request, id string) (R, error)
	allows     func(r R, op domain.RecoveryOperation) bool
	notAllowed func(r R, op domain.RecoveryOperation) *StatusError
	view       func(r R) any
	// starting, when set, refuses to answer a repeat with a run whose
	// execution is not recorded yet: a concurrent request is starting it,
	// and a 2xx carries the run's execution id (409 names the run).
	starting func(r R, op domain.RecoveryOperation) *StatusError
}

// onboardingRecovery is the onboarding's recoveryKind.
var onboardingRecovery = recoveryKind[domain.Onboarding]{
	get: func(s *server, rq *request, id string) (domain.Onboarding, error) {
		return s.store.GetOnboarding(rq.ctx(), id)
	},
	allows: func(o domain.Onboarding, op domain.RecoveryOperation) bool {
		return domain.Allows(o.Status, o.Stage, op)
	},
	notAllowed: notAllowed,
	starting: func(o domain.Onboarding, op domain.RecoveryOperation) *StatusError {
		if runStarting(op, o.ExecutionID) {
			return conflictf("onboarding %s: a concurrent %s is starting attempt %d run %d and has not recorded its execution yet; read it again",
				o.ID, op, o.Attempt, o.Run)
		}
		return nil
	},
}

// runStarting reports whether a repeat of op finds the run it would answer
// still without its execution: its starter has not answered yet.
func runStarting(op domain.RecoveryOperation, executionID string) bool {
	return op != domain.OpCancel && op != domain.OpMarkManualIntervention && executionID == ""
}

// onboardingRecoveryOps are the operations served under
// POST /api/v1/admin/onboardings/{id}/<op>. cancel has its own handler
// (cancel.go) and route; it is listed so allowed_operations names it.
func onboardingRecoveryOps() []recoveryOp {
	return []recoveryOp{
		{op: domain.OpMarkManualIntervention, handle: freezeOnboarding, done: isFrozen},
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

// recoveryRoutes is one route per served operation, so each has its own
// audit action (onboarding.<op>) and an unknown operation is a 404.
func recoveryRoutes(obs string) []route {
	ops := onboardingRecoveryOps()
	out := make([]route, 0, len(ops))
	for _, r := range ops {
		op := r
		out = append(out, route{method: http.MethodPost, pattern: obs + "/{id}/" + string(op.op),
			action: "onboarding." + string(op.op), target: "onboarding:{id}",
			handle: func(s *server, rq *request) (int, any, error) { return s.recoverOnboarding(rq, op) }})
	}
	return out
}

// recoverOnboarding runs an onboarding's recovery operation in the frame.
func (s *server) recoverOnboarding(rq *request, op recoveryOp) (int, any, error) {
	if op.op == domain.OpRestartClean {
		if dry, err := dryRun(rq); err != nil || dry {
			return s.planRestartClean(rq, err)
		}
	}
	return runRecovery(s, rq, onboardingRecovery, op)
}

// runRecovery is the frame every recovery operation shares, whatever the
// record kind: the optional reason, the repeat check, the 409 naming the
// state and the operations allowed from it, then the operation itself.
func runRecovery[R any](s *server, rq *request, kind recoveryKind[R], op recoveryOpOf[R]) (int, any, error) {
	in, err := decodeCancel(rq)
	if err != nil {
		return 0, nil, err
	}
	r, err := kind.get(s, rq, rq.r.PathValue("id"))
	if err != nil {
		return 0, nil, err
	}
	answer := func(r R) any {
		if kind.view == nil {
			return r
		}
		return kind.view(r)
	}
	if op.done(s, rq, r) {
		if kind.starting != nil {
			if err := kind.starting(r, op.op); err != nil {
				return 0, nil, err
			}
		}
		return http.StatusOK, answer(r), nil
	}
	if !kind.allows(r, op.op) {
		return 0, nil, kind.notAllowed(r, op.op)
	}
	updated, err := op.handle(s, rq, r, in.Reason)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, answer(updated), nil
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

// notAllowed is the 409 for an operation the record's state refuses.
func notAllowed(o domain.Onboarding, op domain.RecoveryOperation) *StatusError {
	allowed := servedOperations(o)
	names := make([]string, len(allowed))
	for i, a := range allowed {
		names[i] = string(a)
	}
	list := "none"
	if len(names) > 0 {
		list = strings.Join(names, ", ")
	}
	return &StatusError{Status: http.StatusConflict, Code: CodeConflict,
		Message: fmt.Sprintf("onboarding %s is %s at stage %s: %s is not allowed; allowed operations: %s",
			o.ID, o.Status, stageOrStart(string(o.Stage)), op, list)}
}

// isFrozen recognises an onboarding mark-manual-intervention already froze.
func isFrozen(_ *server, _ *request, o domain.Onboarding) bool {
	return o.Status == domain.OnboardingManualIntervention && o.Error != nil && o.Error.Code == domain.FrozenCode
}

// freezeOnboarding is mark-manual-intervention: the execution is stopped
// first (as for cancel, so no later state of it writes the record), then
// the record becomes manual_intervention with the operator's reason. The
// host lock is kept: manual_intervention is open, and nothing may touch the
// machine until an operator resolves it. The run's enrollment token is
// revoked with the write (store.CloseOnboarding); the operation that
// continues the run hands out a new one.
func freezeOnboarding(s *server, rq *request, o domain.Onboarding, reason string) (domain.Onboarding, error) {
	ctx := rq.ctx()
	if reason == "" {
		reason = "frozen by " + rq.actor
	}
	log := rq.log.With(logfield.OnboardingID, o.ID, logfield.SiteID, o.SiteID, logfield.NodeID, o.NodeID, logfield.Hostname, o.Hostname)
	if o.ExecutionID != "" {
		if err := s.auditAhead(rq); err != nil { // the stop is a change no store write carries
			return o, err
		}
		if err := s.stopper.StopOnboarding(ctx, o.ExecutionID, reason); err != nil {
			log.ErrorContext(ctx, "stop onboarding workflow", "execution_id", o.ExecutionID, "error", err.Error())
			return o, &StatusError{Status: http.StatusServiceUnavailable, Code: CodeUnavailable,
				Message: fmt.Sprintf("the workflow service is unavailable; onboarding %s was not changed, retry later", o.ID)}
		}
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.DetachedWriteTimeout)
	defer cancel()
	now := s.clock.Now().UTC()
	prevStatus := o.Status
	updated, err := s.store.CloseOnboarding(wctx, o.ID, func(cur *domain.Onboarding) error {
		if cur.Attempt != o.Attempt || !domain.Allows(cur.Status, cur.Stage, domain.OpMarkManualIntervention) {
			// The run ended or moved on between the read and the stop.
			return notAllowed(*cur, domain.OpMarkManualIntervention)
		}
		prevStatus = cur.Status
		cur.Status = domain.OnboardingManualIntervention
		cur.Error = &domain.Failure{Code: domain.FrozenCode, Message: reason, Stage: cur.Stage}
		cur.UpdatedAt = now
		// The wait it belonged to is gone with the execution.
		cur.EnrollmentTaskToken = ""
		return nil
	})
	if err != nil {
		return o, err
	}
	if err := s.store.AppendOnboardingEvents(wctx, domain.TimelineEntry{
		OnboardingID: updated.ID, Time: now, Attempt: updated.Attempt, Kind: domain.TimelineNote, Stage: updated.Stage,
		Outcome: string(domain.OnboardingManualIntervention), Source: string(domain.OpMarkManualIntervention),
		Detail: fmt.Sprintf("frozen by %s (was %s) at stage %s: %s", rq.actor, prevStatus, stageOrStart(string(updated.Stage)), reason),
	}); err != nil {
		log.ErrorContext(ctx, "record the freeze on the timeline", "error", err.Error())
	}
	log.InfoContext(ctx, "onboarding frozen", "previous_status", prevStatus, "stage", updated.Stage)
	return updated, nil
}

// startedBy recognises an onboarding whose current attempt op started: it
// is open and its timeline holds op's note for this attempt.
func startedBy(op domain.RecoveryOperation) func(s *server, rq *request, o domain.Onboarding) bool {
	return func(s *server, rq *request, o domain.Onboarding) bool {
		if o.Status != domain.OnboardingPending && o.Status != domain.OnboardingRunning {
			return false
		}
		rows, err := s.store.ListOnboardingEvents(rq.ctx(), o.ID)
		if err != nil {
			return false
		}
		for _, r := range rows {
			if r.Source == string(op) && r.Attempt == o.Attempt && r.Kind == domain.TimelineNote {
				return true
			}
		}
		return false
	}
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
