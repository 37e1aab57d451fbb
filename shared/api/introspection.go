package api

import (
	"errors"
	"net/http"
	"strings"

	"github.com/maasflow/maasflow/shared/enroll"
	"github.com/maasflow/maasflow/shared/store"
)

// NodeIdentifier names the node that presented a credential issued at or
// after enrollment (its node certificate on the mutual TLS node routes).
// ok is false when the request carries no such credential, and the
// enrollment token is tried instead. This is the seam where node identity
// after enrollment plugs in; without one only enrollment tokens identify.
type NodeIdentifier interface {
	NodeOf(r *http.Request) (nodeID string, ok bool, err error)
}

// introspectionRefused is the 401 of a node credential that identifies no
// node; why never holds the credential.
func introspectionRefused(why string) error {
	return &StatusError{Status: http.StatusUnauthorized, Code: CodeTokenRejected, Field: "Authorization",
		Message: "node credential rejected: " + why}
}

// callerNode tells which node the request comes from: its node identity
// when one is configured and presented, else its enrollment token as
// "Authorization: Bearer <token>", valid until the node enrolls with it.
// Reading does not consume the token.
func (s *server) callerNode(rq *request) (string, error) {
	if s.nodeIdentity != nil {
		id, ok, err := s.nodeIdentity.NodeOf(rq.r)
		if err != nil {
			return "", introspectionRefused("the node identity is not valid")
		}
		if ok {
			return id, nil
		}
	}
	token, found := strings.CutPrefix(rq.r.Header.Get("Authorization"), "Bearer ")
	if !found || token == "" {
		return "", introspectionRefused("an enrollment token (Authorization: Bearer <token>) or a node identity is required")
	}
	if len(token) > maxTokenLength {
		return "", introspectionRefused(store.TokenUnknown)
	}
	t, err := s.store.GetEnrollmentToken(rq.ctx(), enroll.HashToken(token))
	if errors.As(err, new(*store.ItemNotFoundError)) {
		return "", introspectionRefused(store.TokenUnknown)
	}
	if err != nil {
		return "", err
	}
	switch {
	case t.ConsumedAt != nil:
		return "", introspectionRefused("the token was used to enroll: read with the node's identity")
	case t.RevokedAt != nil:
		return "", introspectionRefused("the token was superseded by a newer one")
	case !s.clock.Now().Before(t.ExpiresAt):
		return "", introspectionRefused("the token expired")
	}
	return t.NodeID, nil
}

// nodeDesign is the Introspection API: a node reads its own effective
// design, and only its own.
func (s *server) nodeDesign(rq *request) (int, any, error) {
	nodeID := rq.r.PathValue("id")
	caller, err := s.callerNode(rq)
	if err != nil {
		return 0, nil, err
	}
	rq.authenticated = true
	if caller != nodeID {
		return 0, nil, &StatusError{Status: http.StatusForbidden, Code: CodeForbidden,
			Message: "a node reads only its own design"}
	}
	node, err := s.store.GetNode(rq.ctx(), nodeID)
	if err != nil {
		return 0, nil, err
	}
	d, err := s.store.GetSiteDesign(rq.ctx(), node.SiteID)
	if err != nil {
		return 0, nil, err
	}
	return effectiveNode(d.Design, node.Hostname)
}
