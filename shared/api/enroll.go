package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/enroll"
	"github.com/maasflow/maasflow/shared/logfield"
	"github.com/maasflow/maasflow/shared/nodeid"
	"github.com/maasflow/maasflow/shared/store"
)

type enrollRequest struct {
	Token string `json:"token"`
	// CSR (PEM), when sent, has the node CA certify the node's key: the
	// answer then carries the certificate and a recovery token.
	CSR string `json:"csr,omitempty"`
}

// enrollmentOutput is what the workflow's enrollment wait receives.
type enrollmentOutput struct {
	NodeID     string    `json:"node_id"`
	EnrolledAt time.Time `json:"enrolled_at"`
	Attempt    int       `json:"attempt"`
}

type enrollResponse struct {
	NodeID string `json:"node_id"`
	Status string `json:"status"`
	*nodeCredentials
}

// maxTokenLength bounds what is hashed; real tokens are 43 characters.
const maxTokenLength = 512

// enroll consumes the node's single-use enrollment token. The token is the
// only credential: it is hashed at once and never echoed or logged. After
// the token is consumed the node is active whatever happens next, so a
// failure to complete the workflow's wait is logged, not answered: the node
// cannot retry with a consumed token, and the workflow's enrollment timeout
// routes the onboarding to manual intervention. A rejected token (unknown,
// consumed, revoked by a later deploy, expired, another node's) is a 401
// token_rejected naming the store's reason (classify). A token reissued for
// a stopped onboarding (ForStoppedRun) enrolls the node without making it
// active while that onboarding stays stopped.
func (s *server) enroll(rq *request) (int, any, error) {
	var in enrollRequest
	if err := decodeBody(rq, &in); err != nil {
		return 0, nil, err
	}
	if in.Token == "" {
		return 0, nil, fieldError("token", "is required")
	}
	if len(in.Token) > maxTokenLength {
		return 0, nil, &StatusError{Status: http.StatusUnauthorized, Code: CodeTokenRejected, Field: "token",
			Message: "enrollment token rejected: " + store.TokenUnknown}
	}
	// A deployment without a node CA enrolls a node that sends a CSR as
	// one that sends none: no certificate, and the enrollment completes
	// the workflow's wait itself (docs/api.md "Node identity").
	certify := in.CSR != "" && s.nodeCA != nil
	if certify {
		// Refused before the token is spent, so the node can send a good one.
		if err := s.checkCSR(in.CSR); err != nil {
			return 0, nil, err
		}
	}
	nodeID := rq.r.PathValue("id")
	ctx := rq.ctx()
	log := rq.log.With(logfield.NodeID, nodeID)
	now := s.clock.Now().UTC()

	// The consume is the node's proof and its change: the audit entry rides
	// it, and no write of a refusal carries it.
	tok, err := s.store.ConsumeEnrollmentToken(store.WithPendingAudit(ctx, rq.pending), enroll.HashToken(in.Token), nodeID, now)
	if err != nil {
		var rejected *store.TokenRejectedError
		if errors.As(err, &rejected) {
			// Counted and sampled by wrap, not logged per request: anyone
			// can send a token.
			rq.refusalReason = rejected.Reason
			if rejected.FirstRefusal {
				s.noteLateEnrollment(ctx, log, nodeID, rejected, now)
			}
			if why, ok := runRefusals[rejected.Reason]; ok {
				return 0, nil, &StatusError{Status: http.StatusUnauthorized, Code: CodeTokenRejected, Field: "token",
					Message: rejected.Error() + ": " + why}
			}
		}
		return 0, nil, err
	}
	// The node proved itself: from here on the request is audited.
	rq.authenticated = true
	log = log.With(logfield.OnboardingID, tok.OnboardingID)
	// The token is spent: finish activating the node and handing over to
	// the workflow even if the node hangs up now.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.DetachedWriteTimeout)
	defer cancel()
	stoppedAs, stopped := s.runStopped(ctx, log, tok)
	var creds *nodeCredentials
	var issued nodeid.Issued
	var recoveryHash string
	if certify {
		c, h, is, err := s.issueCredentials(in.CSR, nodeID, now)
		if err != nil {
			return 0, nil, err
		}
		creds, recoveryHash, issued = &c, h, is
	}
	// With a certificate, the workflow's wait completes at the agent's
	// first authenticated heartbeat (node_identity.go), not here.
	awaitAgent := creds != nil && !stopped && tok.OnboardingID != ""
	node, err := s.store.UpdateNode(ctx, nodeID, func(n *domain.Node) error {
		if n.Status == domain.NodeRemoved {
			// A removed node comes back only as a new identity (requirements runbook).
			return &StatusError{Status: http.StatusUnauthorized, Code: CodeTokenRejected, Field: "token",
				Message: "enrollment token rejected: node " + nodeID + " was removed"}
		}
		// A retired or decommissioning node re-enrolling with a reissued
		// bundle keeps its identity, not its schedulability (requirements runbook).
		// A node enrolling for a stopped run stays as it is until adopt
		// takes it over, saying why (docs/recovery.md).
		if n.Status != domain.NodeRetired && n.Status != domain.NodeDecommissioning && !stopped {
			n.Status = domain.NodeActive
		}
		n.EnrolledAt = &now
		n.UpdatedAt = now
		if creds != nil {
			recordCertificate(n, issued, recoveryHash)
			n.AgentSeenAt = nil
			n.AwaitsAgentOnboardingID, n.AwaitsAgentAttempt = "", 0
			if awaitAgent {
				n.AwaitsAgentOnboardingID, n.AwaitsAgentAttempt = tok.OnboardingID, tok.Attempt
			}
		}
		return nil
	})
	if err != nil {
		return 0, nil, err
	}

	switch {
	case stopped:
		s.noteEnrollmentForStoppedRun(ctx, log, tok, node, stoppedAs, now)
	case awaitAgent:
		log.InfoContext(ctx, "enrollment waits for the node agent's first heartbeat")
	case tok.OnboardingID != "":
		s.completeEnrollment(ctx, log, tok, now)
	}
	log.InfoContext(ctx, "node enrolled", "attempt", tok.Attempt)
	return http.StatusOK, enrollResponse{NodeID: nodeID, Status: node.Status, nodeCredentials: creds}, nil
}

// runRefusals explain the rejections of a genuine token whose run is over.
var runRefusals = map[string]string{
	store.TokenWorkflowClosed: "the onboarding this token was issued for is closed or waits for an operator; the node is not enrolled",
	store.TokenStaleAttempt:   "the onboarding this token was issued for started another attempt; the node is not enrolled",
}

// noteLateEnrollment records on the onboarding's timeline, once per token,
// that its node tried to enroll after the run was closed or superseded, so
// the operator sees why the node stayed out.
func (s *server) noteLateEnrollment(ctx context.Context, log *slog.Logger, nodeID string, rejected *store.TokenRejectedError, now time.Time) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.DetachedWriteTimeout)
	defer cancel()
	err := s.store.AppendOnboardingEvents(wctx, domain.TimelineEntry{
		OnboardingID: rejected.OnboardingID, Time: now, Attempt: rejected.Attempt, Kind: domain.TimelineNote,
		Stage: domain.StageWaitEnrollment, Outcome: "refused", Source: "enrollment",
		Detail: fmt.Sprintf("node %s tried to enroll with the token of attempt %d: refused (%s)", nodeID, rejected.Attempt, rejected.Reason),
	})
	if err != nil {
		log.ErrorContext(wctx, "record a refused enrollment on the timeline", logfield.OnboardingID, rejected.OnboardingID, "error", err.Error())
	}
}

// runStopped reports whether a reissued token (ForStoppedRun) was
// consumed for an onboarding whose run is stopped, and its status
// ("unreadable" when the onboarding could not be read). An ordinary token's consume already
// proved its run open; a reissued one whose run is pending or running
// again enrolls as any other.
func (s *server) runStopped(ctx context.Context, log *slog.Logger, tok domain.EnrollmentToken) (string, bool) {
	if !tok.ForStoppedRun || tok.OnboardingID == "" {
		return "", false
	}
	o, err := s.store.GetOnboarding(ctx, tok.OnboardingID)
	if err != nil {
		// The token is spent: enroll the node without activating it, which
		// adopt can still take over; activating it could not be undone.
		log.ErrorContext(ctx, "read the onboarding of a reissued token", "error", err.Error())
		return "unreadable", true
	}
	if o.Attempt == tok.Attempt && (o.Status == domain.OnboardingPending || o.Status == domain.OnboardingRunning) {
		return "", false
	}
	return string(o.Status), true
}

// noteEnrollmentForStoppedRun records on the onboarding's timeline that
// its node enrolled with a reissued bundle while the run is stopped: the
// operator's cue to adopt it. Nothing is completed or reopened here.
func (s *server) noteEnrollmentForStoppedRun(ctx context.Context, log *slog.Logger, tok domain.EnrollmentToken, node domain.Node,
	stopped string, now time.Time,
) {
	err := s.store.AppendOnboardingEvents(ctx, domain.TimelineEntry{
		OnboardingID: tok.OnboardingID, Time: now, Attempt: tok.Attempt, Kind: domain.TimelineNote,
		Stage: domain.StageWaitEnrollment, Outcome: "enrolled", Source: "enrollment",
		Detail: fmt.Sprintf("node %s enrolled with the bundle reissued for attempt %d while the onboarding is %s: the node stays %s until adopt takes it over",
			node.ID, tok.Attempt, stopped, node.Status),
	})
	if err != nil {
		log.ErrorContext(ctx, "record an enrollment for a stopped onboarding on the timeline", "error", err.Error())
	}
}

// completeEnrollment hands the enrollment to the onboarding's workflow wait
// when the workflow has reached it. ctx is detached from the request.
func (s *server) completeEnrollment(ctx context.Context, log *slog.Logger, tok domain.EnrollmentToken, now time.Time) {
	o, err := s.store.GetOnboarding(ctx, tok.OnboardingID)
	if err != nil {
		log.ErrorContext(ctx, "read onboarding of enrollment", "error", err.Error())
		return
	}
	if o.Attempt != tok.Attempt {
		// A token of an earlier run must not complete the current run's
		// wait (requirements readiness §8.5).
		log.WarnContext(ctx, "enrollment token is from another attempt", "token_attempt", tok.Attempt, "attempt", o.Attempt)
		return
	}
	if o.EnrollmentTaskToken == "" {
		// The workflow is not waiting (yet); it finds the node active.
		log.InfoContext(ctx, "enrollment arrived before the workflow waits for it")
		return
	}
	out, err := json.Marshal(enrollmentOutput{NodeID: tok.NodeID, EnrolledAt: now, Attempt: tok.Attempt})
	if err != nil {
		log.ErrorContext(ctx, "encode enrollment output", "error", err.Error())
		return
	}
	if err := s.completer.CompleteEnrollment(ctx, o.EnrollmentTaskToken, out); err != nil {
		// The workflow service's text may quote the task token: log the
		// error's type only.
		log.ErrorContext(ctx, "complete workflow enrollment wait", "error_type", fmt.Sprintf("%T", rootError(err)))
	}
}

// rootError is the innermost error of a wrap chain.
func rootError(err error) error {
	for {
		inner := errors.Unwrap(err)
		if inner == nil {
			return err
		}
		err = inner
	}
}
