package api

import (
	"context"
	"crypto/subtle"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/enroll"
	"github.com/maasflow/maasflow/shared/nodeid"
	"github.com/maasflow/maasflow/shared/store"
)

// NodeCA issues and checks node certificates (nodeid.CA). Without one,
// enrollment with a CSR and every node endpoint answer 503.
type NodeCA interface {
	Issue(csrPEM, nodeID string, now time.Time) (nodeid.Issued, error)
	Verify(chain []*x509.Certificate, now time.Time) (nodeID, serial string, err error)
	CertPEM() string
}

// Refusal codes of the node endpoints beside nodeid's certificate codes
// (docs/api.md "Node endpoints").
const (
	CodeNodeRemoved           = "node_removed"
	CodeNodeRetired           = "node_retired"
	CodeRecoveryTokenRejected = "recovery_token_rejected"
	CodeUnknownTask           = "unknown_task"
)

// maxWait bounds a heartbeat's long poll.
const maxWait = 30 * time.Second

// nodeCredentials is what enrollment, renewal and recovery hand the node:
// its certificate, the CA that signed it, and a fresh recovery token. It
// is answered once and never stored, logged or audited.
type nodeCredentials struct {
	CertificatePEM string    `json:"certificate_pem"`
	CAPEM          string    `json:"ca_pem"`
	NotAfter       time.Time `json:"certificate_not_after"`
	RecoveryToken  string    `json:"recovery_token,omitempty"`
	// NodeAPIURL is where the node endpoints listen (mutual TLS).
	NodeAPIURL string `json:"node_api_url,omitempty"`
}

// checkCSR refuses a malformed CSR before any credential is spent.
func (s *server) checkCSR(csr string) error {
	if s.nodeCA == nil {
		return &StatusError{Status: http.StatusServiceUnavailable, Code: CodeUnavailable, Message: "this deployment has no node CA"}
	}
	if _, err := nodeid.ParseCSR(csr); err != nil {
		var ce *nodeid.CSRError
		if errors.As(err, &ce) {
			return fieldError("csr", "%s", ce.Reason)
		}
		return err
	}
	return nil
}

// issueCredentials signs the node's certificate and makes its next
// recovery token; the caller records both on the node in one write.
func (s *server) issueCredentials(csr, nodeID string, now time.Time) (nodeCredentials, string, nodeid.Issued, error) {
	issued, err := s.nodeCA.Issue(csr, nodeID, now)
	if err != nil {
		var ce *nodeid.CSRError
		if errors.As(err, &ce) {
			return nodeCredentials{}, "", nodeid.Issued{}, fieldError("csr", "%s", ce.Reason)
		}
		return nodeCredentials{}, "", nodeid.Issued{}, err
	}
	recovery, err := enroll.NewToken()
	if err != nil {
		return nodeCredentials{}, "", nodeid.Issued{}, err
	}
	return nodeCredentials{CertificatePEM: issued.CertPEM, CAPEM: s.nodeCA.CertPEM(), NotAfter: issued.NotAfter,
		RecoveryToken: recovery.Reveal(), NodeAPIURL: s.nodeURL}, enroll.HashToken(recovery.Reveal()), issued, nil
}

// recordCertificate notes a new certificate and recovery token on n.
func recordCertificate(n *domain.Node, issued nodeid.Issued, recoveryHash string) {
	na := issued.NotAfter
	n.CertSerial, n.CertNotAfter, n.RecoveryTokenHash = issued.Serial, &na, recoveryHash
}

// certNode authenticates a node endpoint's request by its client
// certificate: issued by the node CA, valid now, naming the node of the
// path, whose record is not removed. Each refusal has its own code.
func (s *server) certNode(rq *request) (domain.Node, error) {
	if s.nodeCA == nil {
		return domain.Node{}, &StatusError{Status: http.StatusServiceUnavailable, Code: CodeUnavailable, Message: "this deployment has no node CA"}
	}
	now := s.clock.Now().UTC()
	id, _, err := s.nodeCA.Verify(peerChain(rq.r), now)
	if err != nil {
		var ce *nodeid.CertError
		if errors.As(err, &ce) {
			rq.refusalReason = ce.Code
			return domain.Node{}, &StatusError{Status: http.StatusUnauthorized, Code: ce.Code, Message: ce.Reason}
		}
		return domain.Node{}, err
	}
	pathID := rq.r.PathValue("id")
	if id != pathID {
		rq.refusalReason = nodeid.CertWrongNode
		return domain.Node{}, &StatusError{Status: http.StatusForbidden, Code: nodeid.CertWrongNode,
			Message: "the client certificate names another node than the path"}
	}
	n, err := s.store.GetNode(rq.ctx(), id)
	if err != nil {
		return domain.Node{}, err
	}
	if n.Status == domain.NodeRemoved {
		rq.refusalReason = CodeNodeRemoved
		return domain.Node{}, &StatusError{Status: http.StatusForbidden, Code: CodeNodeRemoved,
			Message: "node " + id + " was removed: its identity has ended; a returning host is enrolled as a new node"}
	}
	rq.authenticated = true
	return n, nil
}

type waitResponse struct {
	Tasks []any `json:"tasks"`
}

// waitTasks is the node agent's heartbeat: a long poll for runtime work.
// maasflow hands nodes no runtime tasks itself, so the poll answers an
// empty list after wait_seconds (default 20, at most 30). The first
// authenticated heartbeat after an enrollment is the node agent's proof
// that it runs: it is recorded on the node and completes the enrollment
// wait of the onboarding the enrollment was for. A retired node may keep
// its identity but gets no runtime work: node_retired.
func (s *server) waitTasks(rq *request) (int, any, error) {
	wait := 20 * time.Second
	if v := rq.r.URL.Query().Get("wait_seconds"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || time.Duration(n)*time.Second > maxWait {
			return 0, nil, fieldError("wait_seconds", "must be a whole number from 0 to 30")
		}
		wait = time.Duration(n) * time.Second
	}
	n, err := s.certNode(rq)
	if err != nil {
		return 0, nil, err
	}
	if n.Status == domain.NodeRetired {
		return 0, nil, &StatusError{Status: http.StatusForbidden, Code: CodeNodeRetired,
			Message: "node " + n.ID + " is retired: it gets no runtime work (its certificate can still be renewed)"}
	}
	if n.AgentSeenAt == nil || n.AwaitsAgentOnboardingID != "" {
		s.noteFirstHeartbeat(rq, n)
	}
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-rq.ctx().Done():
		case <-t.C:
		}
	}
	return http.StatusOK, waitResponse{Tasks: []any{}}, nil
}

// noteFirstHeartbeat records the agent's first heartbeat and hands the
// enrollment it was waiting for to the workflow.
func (s *server) noteFirstHeartbeat(rq *request, n domain.Node) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(rq.ctx()), s.cfg.DetachedWriteTimeout)
	defer cancel()
	now := s.clock.Now().UTC()
	var awaited domain.EnrollmentToken
	_, err := s.store.UpdateNode(ctx, n.ID, func(cur *domain.Node) error {
		awaited = domain.EnrollmentToken{NodeID: cur.ID, OnboardingID: cur.AwaitsAgentOnboardingID, Attempt: cur.AwaitsAgentAttempt}
		if cur.AgentSeenAt == nil {
			cur.AgentSeenAt = &now
		}
		cur.AwaitsAgentOnboardingID, cur.AwaitsAgentAttempt = "", 0
		return nil
	})
	if err != nil {
		rq.log.ErrorContext(ctx, "record the node agent's first heartbeat", "error", err.Error())
		return
	}
	rq.log.InfoContext(ctx, "node agent heartbeat: running")
	if awaited.OnboardingID != "" {
		s.completeEnrollment(ctx, rq.log, awaited, now)
	}
}

type resultRequest struct {
	Status string `json:"status"`
	Detail string `json:"detail"`
}

// postResult takes a runtime task's result. maasflow hands out no runtime
// tasks, so after the certificate checks every task is unknown_task.
func (s *server) postResult(rq *request) (int, any, error) {
	n, err := s.certNode(rq)
	if err != nil {
		return 0, nil, err
	}
	if n.Status == domain.NodeRetired {
		return 0, nil, &StatusError{Status: http.StatusForbidden, Code: CodeNodeRetired,
			Message: "node " + n.ID + " is retired: it has no runtime work to report"}
	}
	var in resultRequest
	if err := decodeBody(rq, &in); err != nil {
		return 0, nil, err
	}
	return 0, nil, &StatusError{Status: http.StatusNotFound, Code: CodeUnknownTask,
		Message: "task " + rq.r.PathValue("task_id") + " was not handed to node " + n.ID}
}

type csrRequest struct {
	CSR string `json:"csr"`
}

// renewCertificate issues a new certificate over the node's (new) key to
// a node presenting its valid certificate: active and retired nodes keep
// their identity this way; a removed node is refused by certNode. The
// recovery token is replaced too.
func (s *server) renewCertificate(rq *request) (int, any, error) {
	n, err := s.certNode(rq)
	if err != nil {
		return 0, nil, err
	}
	var in csrRequest
	if err := decodeBody(rq, &in); err != nil {
		return 0, nil, err
	}
	if err := s.checkCSR(in.CSR); err != nil {
		return 0, nil, err
	}
	creds, hash, issued, err := s.issueCredentials(in.CSR, n.ID, s.clock.Now().UTC())
	if err != nil {
		return 0, nil, err
	}
	_, err = s.store.UpdateNode(store.WithPendingAudit(rq.ctx(), rq.pending), n.ID, func(cur *domain.Node) error {
		if cur.Status == domain.NodeRemoved {
			return &StatusError{Status: http.StatusForbidden, Code: CodeNodeRemoved, Message: "node " + n.ID + " was removed"}
		}
		recordCertificate(cur, issued, hash)
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	rq.log.InfoContext(rq.ctx(), "node certificate renewed", "serial", issued.Serial)
	return http.StatusOK, creds, nil
}

type recoverRequest struct {
	RecoveryToken string `json:"recovery_token"`
	CSR           string `json:"csr"`
}

// recoverCertificate is the expired-certificate recovery of the runbook:
// a node whose certificate expired proves itself with its single-use
// recovery token (not the spent first-boot token) and a CSR; it gets a
// new certificate and a new recovery token, the old one spent in the same
// conditional write. A removed node, a wrong, spent or revoked token are
// each refused.
func (s *server) recoverCertificate(rq *request) (int, any, error) {
	var in recoverRequest
	if err := decodeBody(rq, &in); err != nil {
		return 0, nil, err
	}
	if in.RecoveryToken == "" {
		return 0, nil, fieldError("recovery_token", "is required")
	}
	if err := s.checkCSR(in.CSR); err != nil {
		return 0, nil, err
	}
	nodeID := rq.r.PathValue("id")
	presented := enroll.HashToken(in.RecoveryToken)
	creds, hash, issued, err := s.issueCredentials(in.CSR, nodeID, s.clock.Now().UTC())
	if err != nil {
		return 0, nil, err
	}
	rejected := func(why string) error {
		rq.refusalReason = why
		return &StatusError{Status: http.StatusUnauthorized, Code: CodeRecoveryTokenRejected, Field: "recovery_token",
			Message: "recovery token rejected: " + why}
	}
	_, err = s.store.UpdateNode(store.WithPendingAudit(rq.ctx(), rq.pending), nodeID, func(cur *domain.Node) error {
		switch {
		case cur.Status == domain.NodeRemoved:
			return &StatusError{Status: http.StatusForbidden, Code: CodeNodeRemoved,
				Message: "node " + nodeID + " was removed: its identity has ended; a returning host is enrolled as a new node"}
		case cur.RecoveryTokenHash == "":
			return rejected("the node has no recovery token (spent, or revoked by a reissued bundle)")
		case subtle.ConstantTimeCompare([]byte(cur.RecoveryTokenHash), []byte(presented)) != 1:
			return rejected("not the node's current recovery token")
		}
		recordCertificate(cur, issued, hash)
		return nil
	})
	if err != nil {
		if isNotFound(err) {
			return 0, nil, rejected("unknown node")
		}
		return 0, nil, err
	}
	rq.authenticated = true
	rq.log.InfoContext(rq.ctx(), "node certificate recovered with the recovery token", "serial", issued.Serial)
	return http.StatusOK, creds, nil
}

// revokeRecoveryToken ends the node's recovery token: a reissued bundle or
// a removal revokes every earlier credential of the node.
func (s *server) revokeRecoveryToken(ctx context.Context, n domain.Node) error {
	if n.RecoveryTokenHash == "" {
		return nil
	}
	if _, err := s.store.UpdateNode(ctx, n.ID, func(cur *domain.Node) error {
		cur.RecoveryTokenHash = ""
		return nil
	}); err != nil {
		return fmt.Errorf("revoke recovery token: %w", err)
	}
	return nil
}
