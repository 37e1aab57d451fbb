package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/logfield"
	"github.com/maasflow/maasflow/shared/maas"
)

// DecommissionRunner starts a decommission run at a stage and stops one
// (shared/workflow's decommission starters). The recovery operations need
// it of the Decommissions port; a starter without it answers 503.
type DecommissionRunner interface {
	StartDecommissionAt(ctx context.Context, d domain.Decommission, start domain.DecommissionStage) (executionID string, err error)
	StopDecommission(ctx context.Context, executionID, cause string) error
}

// MachineOps is what the decommission recovery operations read of MAAS and
// the one thing they ask of it (activities.SiteConnector).
type MachineOps interface {
	MachineReader
	AbortMachine(ctx context.Context, siteID, systemID, comment string) (maas.Machine, error)
}

// decommissionView is a decommission with the recovery operations it
// accepts now: the answer of every recovery operation.
type decommissionView struct {
	domain.Decommission
	AllowedOperations []domain.RecoveryOperation `json:"allowed_operations"`
}

func viewDecommission(d domain.Decommission) any {
	return decommissionView{Decommission: normalizeErase(d),
		AllowedOperations: domain.DecommissionAllowedOperations(d.Status, d.Stage)}
}

// decommissionKind is the decommission's recoveryKind.
func decommissionKind() recoveryKind[domain.Decommission] {
	return recoveryKind[domain.Decommission]{
		name: "decommission",
		get: func(s *server, ctx context.Context, id string) (domain.Decommission, error) {
			return s.store.GetDecommission(ctx, id)
		},
		state: func(d domain.Decommission) recordState {
			return recordState{id: d.ID, status: string(d.Status), stage: string(d.Stage), attempt: d.Attempt, run: d.Run,
				executionID: d.ExecutionID,
				open:        d.Status == domain.DecommissionPending || d.Status == domain.DecommissionRunning,
				frozen:      d.Status == domain.DecommissionManualIntervention && d.Error != nil && d.Error.Code == domain.FrozenCode,
				cancelled:   d.Status == domain.DecommissionCancelled}
		},
		allows: func(d domain.Decommission, op domain.RecoveryOperation) bool {
			return domain.DecommissionAllows(d.Status, d.Stage, op)
		},
		served: func(d domain.Decommission) []domain.RecoveryOperation {
			return domain.DecommissionAllowedOperations(d.Status, d.Stage)
		},
		why: func(d domain.Decommission, op domain.RecoveryOperation) string {
			if op == domain.OpAdopt && d.Status == domain.DecommissionManualIntervention && !domain.DecommissionDrained(d.Stage) {
				return " (it stopped before its drain finished, and adopt would skip the tenants' allocations: resume or retry drains first)"
			}
			return ""
		},
		view: viewDecommission,
		update: func(s *server, ctx context.Context, id string, change func(*domain.Decommission) error) (domain.Decommission, error) {
			return s.store.UpdateDecommission(ctx, id, change)
		},
		freeze: func(cur *domain.Decommission, reason string, _ time.Time) {
			// The node stays out of service and held. A reimage's onboarding
			// is its own workflow and is left as it is (its own operations
			// freeze it).
			cur.Status = domain.DecommissionManualIntervention
			cur.Error = &domain.Failure{Code: domain.FrozenCode, Message: reason, Stage: domain.Stage(cur.Stage)}
		},
		setExecution: func(cur *domain.Decommission, id string) { cur.ExecutionID = id },
		stopper: func(s *server) (func(ctx context.Context, executionID, cause string) error, error) {
			runner, err := s.decommissionRunner()
			if err != nil {
				return nil, err
			}
			return runner.StopDecommission, nil
		},
		note: func(s *server, ctx context.Context, d domain.Decommission, op domain.RecoveryOperation, detail string) error {
			return s.store.AppendDecommissionEvents(ctx, domain.DecommissionEvent{
				DecommissionID: d.ID, Time: s.clock.Now().UTC(), Attempt: d.Attempt, Kind: domain.TimelineNote, Stage: d.Stage,
				Outcome: string(d.Status), Source: string(op), Detail: detail,
			})
		},
		timeline: func(s *server, ctx context.Context, id string) ([]timelineNote, error) {
			rows, err := s.store.ListDecommissionEvents(ctx, id)
			out := make([]timelineNote, len(rows))
			for i, r := range rows {
				out[i] = timelineNote{attempt: r.Attempt, kind: r.Kind, source: r.Source, outcome: r.Outcome, detail: r.Detail}
			}
			return out, err
		},
		log: func(rq *request, d domain.Decommission) *slog.Logger {
			return rq.log.With("decommission_id", d.ID, logfield.NodeID, d.NodeID, logfield.SiteID, d.SiteID, logfield.Hostname, d.Hostname)
		},
	}
}

// decommissionRecoveryOps are the operations served under
// POST /api/v1/admin/decommissions/{id}/<op>. restart-clean is absent: a
// decommission releases with erase from the top anyway, so rerun is its
// clean restart (docs/recovery.md).
func decommissionRecoveryOps() []recoveryOpOf[domain.Decommission] {
	return []recoveryOpOf[domain.Decommission]{
		freezeOp(decommissionKind),
		{op: domain.OpCancel, handle: cancelDecommission, done: isDecommissionCancelled},
		{op: domain.OpRetry, handle: retryDecommission, done: runStartedBy(domain.OpRetry)},
		{op: domain.OpResume, handle: resumeDecommission, done: runStartedBy(domain.OpResume)},
		{op: domain.OpRerun, handle: rerunDecommission, done: runStartedBy(domain.OpRerun)},
		{op: domain.OpAdopt, handle: adoptDecommission, done: runStartedBy(domain.OpAdopt)},
	}
}

// decommissionRecoveryRoutes is one route per operation, each audited as
// decommission.<op> on the decommission.
func decommissionRecoveryRoutes(decoms string) []route {
	return recoveryRoutesOf(decoms, decommissionKind, decommissionRecoveryOps(),
		func(s *server, rq *request, op recoveryOpOf[domain.Decommission]) (int, any, error) {
			return runRecovery(s, rq, decommissionKind(), op)
		})
}

// decommissionNotAllowed is the 409 for an operation the decommission's
// state refuses, naming the state and what it allows.
func decommissionNotAllowed(d domain.Decommission, op domain.RecoveryOperation) *StatusError {
	return decommissionKind().refuse(d, op)
}

func decomStage(s domain.DecommissionStage) string { return stageOrStart(string(s)) }

func (s *server) decomLog(rq *request, d domain.Decommission) *slog.Logger {
	return decommissionKind().log(rq, d)
}

// decommissionRunner is the Decommissions port as a runner, or the 503
// when the deployment has none.
func (s *server) decommissionRunner() (DecommissionRunner, error) {
	r, ok := s.lifecycle.decoms.(DecommissionRunner)
	if !ok {
		return nil, &StatusError{Status: http.StatusServiceUnavailable, Code: CodeUnavailable, Message: errNoDecommissionStarter.Error()}
	}
	return r, nil
}

// decomNote records an operation on the decommission's timeline. The
// record is already written: a missing note is logged, not answered.
func (s *server) decomNote(ctx context.Context, rq *request, d domain.Decommission, op domain.RecoveryOperation, detail string) {
	noteOp(s, ctx, rq, decommissionKind(), d, op, detail)
}

// reasonOr is the operator's reason, or what the operation says by
// default.
func reasonOr(reason, def string) string {
	if reason == "" {
		return def
	}
	return reason
}

// isDecommissionCancelled recognises a decommission cancel already closed.
func isDecommissionCancelled(_ *server, _ *request, d domain.Decommission) bool {
	return d.Status == domain.DecommissionCancelled
}

// abortable are the statuses MAAS's abort accepts (maas-behaviour §5):
// Disk erasing → Failed disk erasing, Deploying → Allocated, Commissioning
// → New, Testing → its previous status. A release (Releasing) cannot be
// aborted; it ends in Ready on its own.
var abortable = map[maas.Status]bool{
	maas.StatusDiskErasing: true, maas.StatusDeploying: true, maas.StatusCommissioning: true, maas.StatusTesting: true,
}

// cancelDecommission is cancel, best effort outside maasflow and exact
// inside it:
//  1. the execution is stopped, so nothing of the run acts after;
//  2. MAAS's operation in progress is aborted where MAAS allows it
//     (abortable); what MAAS showed and what was sent goes on the timeline;
//  3. a reimage's onboarding still open is stopped and cancelled, which
//     revokes its enrollment token, and every unconsumed token of the node
//     the reimage handed out is revoked;
//  4. the record is closed as cancelled (the node's lock is freed), and the
//     node leaves decommissioning: back to the status it had while MAAS was
//     untouched, retired (unschedulable, identity kept) once the release
//     went out — its machine no longer runs the tenant's OS, so it must not
//     return to the pool by itself (docs/decisions.md).
func cancelDecommission(s *server, rq *request, d domain.Decommission, reason string) (domain.Decommission, error) {
	reason = reasonOr(reason, "cancelled by "+rq.actor)
	if err := stopRun(s, rq, decommissionKind(), d, reason); err != nil {
		return d, err
	}
	wctx, cancel := detachedCtx(s, rq)
	defer cancel()
	log := s.decomLog(rq, d)
	observed, notes := s.abortMachine(wctx, d, reason)
	revoked, err := s.cancelReimage(wctx, rq, d, reason)
	if err != nil {
		return d, err
	}
	notes = append(notes, revoked...)
	now := s.clock.Now().UTC()
	prev := d.Status
	updated, err := s.store.UpdateDecommission(wctx, d.ID, func(cur *domain.Decommission) error {
		if cur.Attempt != d.Attempt || !domain.DecommissionAllows(cur.Status, cur.Stage, domain.OpCancel) {
			return decommissionNotAllowed(*cur, domain.OpCancel)
		}
		prev = cur.Status
		cur.Status = domain.DecommissionCancelled
		cur.Error = &domain.Failure{Code: cancelledCode, Message: reason, Stage: domain.Stage(cur.Stage)}
		cur.CompletedAt = &now
		return nil
	})
	if err != nil {
		return d, err
	}
	if note, err := s.settleCancelledNode(wctx, updated, observed); err != nil {
		log.ErrorContext(rq.ctx(), "settle the node of a cancelled decommission", "error", err.Error())
		notes = append(notes, "the node's status could not be settled: "+err.Error())
	} else if note != "" {
		notes = append(notes, note)
	}
	detail := fmt.Sprintf("status cancelled (was %s) at stage %s by %s: %s", prev, decomStage(updated.Stage), rq.actor, reason)
	if len(notes) > 0 {
		detail += "; " + strings.Join(notes, "; ")
	}
	s.decomNote(wctx, rq, updated, domain.OpCancel, detail)
	log.InfoContext(rq.ctx(), "decommission cancelled", "previous_status", prev, "stage", updated.Stage)
	return updated, nil
}

// abortMachine aborts the MAAS operation in progress where MAAS allows it
// and says what it did; observed is the status MAAS showed, nil when it
// could not be read. Best effort: MAAS unreachable is noted, not fatal —
// the run is already stopped, and the operator reads the note.
func (s *server) abortMachine(ctx context.Context, d domain.Decommission, reason string) (observed *maas.Status, notes []string) {
	if d.MAASSystemID == "" {
		return nil, nil
	}
	if s.machines == nil {
		return nil, []string{"MAAS is not reachable from the API: nothing aborted"}
	}
	m, err := s.machines.GetMachine(ctx, d.SiteID, d.MAASSystemID)
	var nf *maas.MAASNotFoundError
	switch {
	case errors.As(err, &nf):
		return nil, []string{"MAAS no longer has machine " + d.MAASSystemID}
	case err != nil:
		return nil, []string{fmt.Sprintf("MAAS could not be read (%T): nothing aborted", rootCause(err))}
	case !abortable[m.Status]:
		return &m.Status, []string{fmt.Sprintf("MAAS shows %s: nothing to abort", m.Status)}
	}
	if _, err := s.machines.AbortMachine(ctx, d.SiteID, d.MAASSystemID, "maasflow decommission "+d.ID+" cancelled: "+reason); err != nil {
		return &m.Status, []string{fmt.Sprintf("MAAS showed %s; its abort was refused (%T)", m.Status, rootCause(err))}
	}
	return &m.Status, []string{fmt.Sprintf("MAAS showed %s: abort sent", m.Status)}
}

// cancelReimage cancels the reimage's onboarding while it is open (which
// revokes its enrollment token) and revokes every unconsumed token of the
// node: a reimage revoked the node's earlier ones when it began, so what
// is left is what it handed out. A decommission that never reached the
// reimage handed out no token and revokes nothing.
func (s *server) cancelReimage(ctx context.Context, rq *request, d domain.Decommission, reason string) ([]string, error) {
	if d.OnboardingID == "" {
		return nil, nil
	}
	var notes []string
	o, err := s.store.GetOnboarding(ctx, d.OnboardingID)
	switch {
	case isNotFound(err):
	case err != nil:
		return nil, err
	case domain.IsOpenStatus(o.Status):
		if o.ExecutionID != "" {
			if err := s.auditAhead(rq); err != nil { // the stop is a change no store write carries
				return nil, err
			}
			if err := s.stopper.StopOnboarding(ctx, o.ExecutionID, reason); err != nil {
				return nil, &StatusError{Status: http.StatusServiceUnavailable, Code: CodeUnavailable,
					Message: fmt.Sprintf("the workflow service is unavailable; decommission %s was not changed, retry later", d.ID)}
			}
		}
		now := s.clock.Now().UTC()
		if _, err := s.store.CloseOnboarding(ctx, o.ID, func(cur *domain.Onboarding) error {
			if !domain.IsOpenStatus(cur.Status) {
				return nil
			}
			cur.Status = domain.OnboardingCancelled
			cur.Error = &domain.Failure{Code: cancelledCode, Message: "decommission " + d.ID + " cancelled: " + reason, Stage: cur.Stage}
			cur.CompletedAt = &now
			cur.EnrollmentTaskToken = ""
			return nil
		}); err != nil {
			return nil, err
		}
		notes = append(notes, "reimage onboarding "+o.ID+" cancelled")
	}
	node, err := s.store.GetNode(ctx, d.NodeID)
	if err != nil {
		return nil, err
	}
	hashes, err := s.store.NodeTokenHashes(ctx, node)
	if err != nil {
		return nil, err
	}
	now := s.clock.Now().UTC()
	for _, h := range hashes {
		if err := s.store.RevokeEnrollmentToken(ctx, h, now); err != nil {
			return nil, err
		}
	}
	return append(notes, "the reimage's enrollment tokens revoked"), nil
}

// settleCancelledNode moves the node out of decommissioning (or the
// reimage's onboarding) once its decommission is cancelled: back to the
// status it had only when no attempt of the decommission released the
// machine — read from the record and its whole timeline, never from the
// current attempt's stage alone — and MAAS showed it Deployed (observed;
// nil when MAAS could not be read). Otherwise retired, saying why.
func (s *server) settleCancelledNode(ctx context.Context, d domain.Decommission, observed *maas.Status) (string, error) {
	node, err := s.store.GetNode(ctx, d.NodeID)
	if err != nil {
		return "", err
	}
	if node.Status != domain.NodeDecommissioning && node.Status != domain.NodeOnboarding {
		return "", nil
	}
	history, err := s.store.ListDecommissionEvents(ctx, d.ID)
	if err != nil {
		return "", err
	}
	target, why := domain.NodeRetired, ""
	deployed := observed != nil && *observed == maas.StatusDeployed
	switch {
	case d.MayReturnToService(history, deployed):
		target, why = d.NodeStatusBefore, "MAAS still shows the machine Deployed and no attempt released it"
	case d.ReleaseStarted(history):
		why = "an attempt of this decommission released the machine, so it no longer runs the tenant's OS"
	case observed == nil:
		why = "MAAS could not confirm the machine is still Deployed"
	case !deployed:
		why = "MAAS shows the machine " + observed.String() + ", not Deployed"
	}
	if _, err := s.store.UpdateNode(ctx, node.ID, func(n *domain.Node) error {
		n.Status = target
		n.UpdatedAt = s.clock.Now().UTC()
		return nil
	}); err != nil {
		return "", err
	}
	note := fmt.Sprintf("node %s: %s → %s", node.ID, node.Status, target)
	if why != "" {
		note += " (" + why + ")"
	}
	return note, nil
}

// runStartedBy recognises a decommission whose current run op started: it
// is pending or running, and its timeline holds op's note for this
// attempt and run.
func runStartedBy(op domain.RecoveryOperation) func(s *server, rq *request, d domain.Decommission) bool {
	return startedWhere(decommissionKind, func(st recordState, rows []timelineNote) bool {
		mark := runMark(st.attempt, st.run)
		for _, r := range rows {
			if r.kind == domain.TimelineNote && r.source == string(op) && r.attempt == st.attempt && strings.HasPrefix(r.detail, mark) {
				return true
			}
		}
		return false
	})
}

// runMark opens the note of the operation that started a run, so a repeat
// recognises it.
func runMark(attempt, run int) string { return fmt.Sprintf("attempt %d run %d: ", attempt, run) }

// startRun is what retry, resume, rerun and adopt share, in the frame's
// startRun: one conditional write that reopens the record as pending for
// the new run (change sets what differs), the note, then the execution
// entering at stage. A run that does not start leaves the record in
// manual_intervention saying so.
func (s *server) startRun(rq *request, d domain.Decommission, op domain.RecoveryOperation, stage domain.DecommissionStage,
	change func(cur *domain.Decommission), detail string) (domain.Decommission, error) {
	runner, err := s.decommissionRunner()
	if err != nil {
		return d, err
	}
	return startRun(s, rq, decommissionKind(), d, runStart[domain.Decommission]{
		op: op, at: string(stage),
		reopen: func(cur *domain.Decommission) {
			cur.Run++
			cur.Status = domain.DecommissionPending
			cur.Error = nil
			cur.ExecutionID = ""
			cur.CorrelationID = rq.correlationID
			change(cur)
		},
		note: func(prev, reopened domain.Decommission) string {
			return runMark(reopened.Attempt, reopened.Run) +
				fmt.Sprintf("started by %s after %s at stage %s, entering at %s: %s", rq.actor, prev.Status, decomStage(prev.Stage), stage, detail)
		},
		start: func(ctx context.Context, reopened domain.Decommission) (string, error) {
			return runner.StartDecommissionAt(ctx, reopened, stage)
		},
		unstarted: func(rq *request, reopened domain.Decommission, _ string) {
			wctx, cancel := detachedCtx(s, rq)
			defer cancel()
			s.unstartedRun(wctx, rq, reopened)
		},
		failed: func(reopened domain.Decommission) error {
			return &StatusError{Status: http.StatusServiceUnavailable, Code: CodeUnavailable,
				Message: fmt.Sprintf("the workflow service is unavailable; decommission %s is back in manual_intervention, retry later", reopened.ID)}
		},
	})
}

// unstartedRun puts a decommission whose new run never started back in
// manual_intervention: the node is already drained and out of service, so
// failing it (which would hand the node back) is not an option.
func (s *server) unstartedRun(ctx context.Context, rq *request, d domain.Decommission) {
	if _, err := s.store.UpdateDecommission(ctx, d.ID, func(cur *domain.Decommission) error {
		if cur.Attempt != d.Attempt || cur.Run != d.Run || cur.Status != domain.DecommissionPending {
			return nil
		}
		cur.Status = domain.DecommissionManualIntervention
		cur.Error = &domain.Failure{Code: startFailure, Message: "the decommission workflow could not be started", Stage: domain.Stage(cur.Stage)}
		return nil
	}); err != nil {
		rq.log.ErrorContext(ctx, "return an unstarted decommission run to manual_intervention", "error", err.Error())
	}
}

// reimageOnboarding is the reimage's onboarding, if the decommission has
// one.
func (s *server) reimageOnboarding(ctx context.Context, d domain.Decommission) (domain.Onboarding, bool, error) {
	if d.OnboardingID == "" {
		return domain.Onboarding{}, false, nil
	}
	o, err := s.store.GetOnboarding(ctx, d.OnboardingID)
	if isNotFound(err) {
		return domain.Onboarding{}, false, nil
	}
	return o, err == nil, err
}

// refuseOpenReimage is the 409 while the reimage's onboarding is stopped
// for an operator: it is its own workflow, recovered with its own
// operations; the decommission follows it once it runs again.
func (s *server) refuseOpenReimage(ctx context.Context, d domain.Decommission, op domain.RecoveryOperation) error {
	o, ok, err := s.reimageOnboarding(ctx, d)
	if err != nil || !ok {
		return err
	}
	if o.Status == domain.OnboardingManualIntervention {
		return conflictf("decommission %s: its reimage onboarding %s is manual_intervention at stage %s; recover it with the onboarding operations (%s), then resume the decommission; %s would start a second onboarding of the host",
			d.ID, o.ID, stageOrStart(string(o.Stage)), opList(servedOperations(o)), op)
	}
	if op == domain.OpRerun && domain.IsOpenStatus(o.Status) {
		return conflictf("decommission %s: its reimage onboarding %s is still %s; cancel or finish it first", d.ID, o.ID, o.Status)
	}
	return nil
}

// retryDecommission is retry: the stage that stopped the run runs again,
// nothing before it, in the same attempt (Run + 1). What the stage had
// done is reset so it does it again: the release sends a new erasing
// release (MAAS releases again from Failed disk erasing, maas-behaviour
// §5), the reimage starts a new onboarding when the last one ended without
// completing.
func retryDecommission(s *server, rq *request, d domain.Decommission, reason string) (domain.Decommission, error) {
	ctx := rq.ctx()
	stage := domain.DecommissionRetryStage(d.Stage)
	if err := s.refuseOpenReimage(ctx, d, domain.OpRetry); err != nil {
		return d, err
	}
	newReimage := false
	if stage == domain.DecomStageReimage {
		o, ok, err := s.reimageOnboarding(ctx, d)
		if err != nil {
			return d, err
		}
		newReimage = ok && !domain.IsOpenStatus(o.Status) && o.Status != domain.OnboardingCompleted
	}
	return s.startRun(rq, d, domain.OpRetry, stage, func(cur *domain.Decommission) {
		if stage == domain.DecomStageRelease {
			cur.Erase.StartedAt = nil
			cur.Erase.Outcome = domain.ErasePending
			cur.Erase.Detail = "the erasing release is retried"
		}
		if newReimage {
			cur.OnboardingID = ""
		}
	}, reasonOr(reason, "retry by "+rq.actor))
}

// resumeDecommission is resume: the run continues from its last safe
// checkpoint — the start of the stage it stopped in, each stage judging
// from MAAS what is left to do — once MAAS shows what that checkpoint
// expects; otherwise 409 naming what MAAS shows and which operation fits.
func resumeDecommission(s *server, rq *request, d domain.Decommission, reason string) (domain.Decommission, error) {
	ctx := rq.ctx()
	stage := domain.DecommissionRetryStage(d.Stage)
	if stage == domain.DecomStageReimage {
		if err := s.refuseOpenReimage(ctx, d, domain.OpResume); err != nil {
			return d, err
		}
		if o, ok, err := s.reimageOnboarding(ctx, d); err != nil {
			return d, err
		} else if ok && (o.Status == domain.OnboardingFailed || o.Status == domain.OnboardingCancelled) {
			return d, conflictf("decommission %s: its reimage onboarding %s is %s, so there is nothing to resume; retry starts a new reimage onboarding",
				d.ID, o.ID, o.Status)
		}
	} else {
		m, gone, err := s.readMachine(ctx, d)
		if err != nil {
			return d, err
		}
		if err := resumeMatches(d, stage, m, gone); err != nil {
			return d, err
		}
	}
	return s.startRun(rq, d, domain.OpResume, stage, func(*domain.Decommission) {}, reasonOr(reason, "resume by "+rq.actor))
}

// readMachine reads the decommission's machine from MAAS; gone is true
// when MAAS no longer has it.
func (s *server) readMachine(ctx context.Context, d domain.Decommission) (m maas.Machine, gone bool, err error) {
	if s.machines == nil {
		return m, false, &StatusError{Status: http.StatusServiceUnavailable, Code: CodeUnavailable,
			Message: "MAAS is not reachable from the API; decommission " + d.ID + " was not changed"}
	}
	m, err = s.machines.GetMachine(ctx, d.SiteID, d.MAASSystemID)
	var nf *maas.MAASNotFoundError
	switch {
	case errors.As(err, &nf):
		return m, true, nil
	case err != nil:
		return m, false, &StatusError{Status: http.StatusServiceUnavailable, Code: CodeUnavailable,
			Message: fmt.Sprintf("machine %s could not be read from MAAS (%T); decommission %s was not changed, retry later", d.MAASSystemID, rootCause(err), d.ID)}
	}
	return m, false, nil
}

// releasedStatus: MAAS shows the machine released.
func releasedStatus(st maas.Status) bool { return st == maas.StatusReady || st == maas.StatusNew }

// resumeMatches checks that MAAS shows what the checkpoint at stage
// expects, by MAAS's lifecycle (maas-behaviour §5):
//   - drain: the machine not yet released by anyone (the release comes
//     after the drain);
//   - release: anything the release stage acts on or waits for, but not a
//     failed erase or release, which needs the stage run again (retry);
//   - release_fallback: what the fallback acts on;
//   - delete: the machine released (or already gone).
func resumeMatches(d domain.Decommission, stage domain.DecommissionStage, m maas.Machine, gone bool) error {
	shows := "no machine " + d.MAASSystemID
	if !gone {
		shows = m.Status.String()
	}
	refuse := func(fits string) error {
		return conflictf("decommission %s cannot resume at %s: MAAS shows %s; %s"+byMAAS, d.ID, stage, shows, fits, domain.OpResume)
	}
	if gone {
		if stage == domain.DecomStageDelete {
			return nil
		}
		return refuse("the machine was deleted outside this decommission; cancel it, or adopt when the mode is full")
	}
	switch stage {
	case domain.DecomStageDrain:
		if releasedStatus(m.Status) || m.Status == maas.StatusReleasing || m.Status == maas.StatusDiskErasing || m.Status == maas.StatusFailedDiskErasing {
			return refuse("the machine was released before the drain finished; rerun drains again from the top")
		}
	case domain.DecomStageRelease:
		switch m.Status {
		case maas.StatusFailedDiskErasing, maas.StatusFailedReleasing:
			return refuse("the release failed; retry sends it again")
		case maas.StatusCommissioning, maas.StatusTesting, maas.StatusRescueMode, maas.StatusEnteringRescueMode, maas.StatusExitingRescueMode:
			return refuse("MAAS cannot release from there; bring the machine to a releasable status, then retry")
		}
	case domain.DecomStageFallback:
		if m.Status == maas.StatusCommissioning || m.Status == maas.StatusTesting || m.Status == maas.StatusRescueMode {
			return refuse("the release fallback cannot act from there; bring the machine to a releasable status, then retry")
		}
	case domain.DecomStageDelete:
		if !releasedStatus(m.Status) {
			return refuse("only a released machine is deleted; rerun releases it again from the top")
		}
	}
	return nil
}

// rerunDecommission is rerun: a new attempt (attempt + 1, run 0) from the
// top — drain, release with erase, and on — with fresh erase evidence and,
// for a reimage, a new onboarding.
func rerunDecommission(s *server, rq *request, d domain.Decommission, reason string) (domain.Decommission, error) {
	if err := s.refuseOpenReimage(rq.ctx(), d, domain.OpRerun); err != nil {
		return d, err
	}
	return s.startRun(rq, d, domain.OpRerun, domain.DecomStageStart, func(cur *domain.Decommission) {
		cur.Attempt++
		cur.Run = 0 // a new attempt's first run
		cur.Stage = domain.DecomStageStart
		cur.CompletedAt = nil
		cur.OnboardingID = ""
		cur.Erase = domain.EraseEvidence{MAASEvents: []string{}, ScriptResults: []domain.EraseScriptResult{}}
	}, reasonOr(reason, "rerun by "+rq.actor))
}

// adoptDecommission is adopt: MAAS already shows the machine released
// (an operator released it, or a stopped release finished on its own), so
// the decommission records it and takes the step its mode takes after
// Ready (delete, reimage, or the completion). Only once the drain
// finished: the tenants' allocations are released before anything else.
// The erase evidence says plainly what is known: a release outside this
// decommission leaves no proof the disks were erased.
func adoptDecommission(s *server, rq *request, d domain.Decommission, reason string) (domain.Decommission, error) {
	m, gone, err := s.readMachine(rq.ctx(), d)
	if err != nil {
		return d, err
	}
	shows := "no machine " + d.MAASSystemID
	switch {
	case gone && d.Mode == domain.DecommissionFull:
	case gone:
		return d, conflictf("decommission %s cannot adopt: MAAS shows %s, and a %s decommission needs the machine; cancel it"+byMAAS, d.ID, shows, d.Mode, domain.OpAdopt)
	case !releasedStatus(m.Status):
		return d, conflictf("decommission %s cannot adopt: MAAS shows %s, not released (Ready); retry runs the stopped stage again, resume continues it"+byMAAS,
			d.ID, m.Status, domain.OpAdopt)
	default:
		shows = m.Status.String()
	}
	stage := domain.DecommissionAdoptStage(d.Mode)
	return s.startRun(rq, d, domain.OpAdopt, stage, func(cur *domain.Decommission) {
		if gone {
			cur.MachineDeleted = true
		}
		if cur.Erase.Outcome != domain.EraseDone {
			cur.Erase.Outcome = domain.EraseNotDone
			cur.Erase.Detail = "the disks may NOT be erased: the decommission adopted a machine MAAS showed as " + shows +
				", released outside its erasing release"
		}
	}, fmt.Sprintf("MAAS shows %s: %s", shows, reasonOr(reason, "adopted by "+rq.actor)))
}

// rootCause is the innermost error, whose type names what went wrong
// without repeating a message that may quote internals.
func rootCause(err error) error {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err
		}
		err = next
	}
}
