package activitiestest

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/activities/onboarding"
	"github.com/maasflow/maasflow/shared/clock"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/enroll"
	"github.com/maasflow/maasflow/shared/store"
)

// EnrollStore is what the enrollment endpoint touches.
type EnrollStore interface {
	ConsumeEnrollmentToken(ctx context.Context, hash, nodeID string, now time.Time) (domain.EnrollmentToken, error)
	UpdateNode(ctx context.Context, id string, mutate store.Mutator[domain.Node]) (domain.Node, error)
	GetOnboarding(ctx context.Context, id string) (domain.Onboarding, error)
}

// NodeAPI stands in for the node-facing side of the admin API, with the
// same contract (firstboot, issue item 5): GET /api/v1/healthz, POST
// /api/v1/nodes/{id}/enroll consuming the single-use token, marking the
// node active and completing the onboarding's enrollment wait, and GET
// /bootstrap/<version>.sh serving the site bootstrap script.
type NodeAPI struct {
	Store     EnrollStore
	Completer activities.TaskCompleter
	Clock     clock.Clock
	Script    []byte

	mu         sync.Mutex
	enrolled   []string
	rejections []string
	down       bool
}

// SetDown makes healthz answer 503 (the enrollment API unreachable).
func (n *NodeAPI) SetDown(down bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.down = down
}

// Enrolled lists the node ids that enrolled, in order.
func (n *NodeAPI) Enrolled() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.enrolled...)
}

// Rejections lists the rejection reasons, in order.
func (n *NodeAPI) Rejections() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.rejections...)
}

// ServeHTTP implements http.Handler.
func (n *NodeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/api/v1/healthz":
		n.mu.Lock()
		down := n.down
		n.mu.Unlock()
		if down {
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable"})
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/bootstrap/"):
		w.Header().Set("Content-Type", "text/x-shellscript")
		_, _ = w.Write(n.Script)
	case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/api/v1/nodes/") && strings.HasSuffix(r.URL.Path, "/enroll"):
		nodeID := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/api/v1/nodes/"), "/enroll")
		n.enroll(w, r, nodeID)
	default:
		http.NotFound(w, r)
	}
}

func (n *NodeAPI) enroll(w http.ResponseWriter, r *http.Request, nodeID string) {
	var body struct {
		Token string `json:"token"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Token == "" {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]string{"code": "invalid_request", "message": "token is required"}})
		return
	}
	ctx := r.Context()
	now := n.Clock.Now().UTC()
	tok, err := n.Store.ConsumeEnrollmentToken(ctx, enroll.HashToken(body.Token), nodeID, now)
	if err != nil {
		var rejected *store.TokenRejectedError
		reason := "internal"
		code := http.StatusInternalServerError
		if errors.As(err, &rejected) {
			reason, code = rejected.Reason, http.StatusUnauthorized
		}
		n.mu.Lock()
		n.rejections = append(n.rejections, reason)
		n.mu.Unlock()
		writeJSON(w, code, map[string]any{"error": map[string]string{"code": "token_rejected", "message": "enrollment token rejected: " + reason}})
		return
	}
	if _, err := n.Store.UpdateNode(ctx, nodeID, func(nd *domain.Node) error {
		nd.Status, nd.EnrolledAt, nd.UpdatedAt = domain.NodeActive, &now, now
		return nil
	}); err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]any{"error": map[string]string{"code": "internal", "message": "internal error"}})
		return
	}
	n.mu.Lock()
	n.enrolled = append(n.enrolled, nodeID)
	n.mu.Unlock()
	if ob, err := n.Store.GetOnboarding(ctx, tok.OnboardingID); err == nil && ob.EnrollmentTaskToken != "" && n.Completer != nil {
		out, _ := json.Marshal(onboarding.EnrollmentResult{NodeID: nodeID, EnrolledAt: now, Attempt: tok.Attempt})
		// As the API: a failure to complete the wait is not the node's
		// problem; the workflow's timeout catches it.
		_ = n.Completer.CompleteTask(ctx, ob.EnrollmentTaskToken, out)
	}
	writeJSON(w, http.StatusOK, map[string]string{"node_id": nodeID, "status": domain.NodeActive})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
