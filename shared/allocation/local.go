package allocation

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/maasflow/maasflow/shared/domain"
)

// LocalReleaseDelay is how long a force-released allocation stays
// releasing in the simulated service before it is released.
const LocalReleaseDelay = 30 * time.Second

// Local is the simulated allocation service of `maasflow local`: it holds
// allocations in memory and moves a force-released one active → releasing
// → released (after LocalReleaseDelay on its clock), unless its state was
// set to release_failed, where it stays.
type Local struct {
	mu    sync.Mutex
	now   func() time.Time
	items map[string]*localAllocation
	order []string
}

type localAllocation struct {
	domain.Allocation
	releaseAt time.Time
}

// NewLocal returns an empty simulated service on the clock now.
func NewLocal(now func() time.Time) *Local {
	if now == nil {
		now = time.Now
	}
	return &Local{now: now, items: map[string]*localAllocation{}}
}

var _ Service = (*Local)(nil)

// Put creates or replaces an allocation (the control API).
func (l *Local) Put(a domain.Allocation) domain.Allocation {
	l.mu.Lock()
	defer l.mu.Unlock()
	a.UpdatedAt = l.now().UTC()
	if _, ok := l.items[a.ID]; !ok {
		l.order = append(l.order, a.ID)
	}
	l.items[a.ID] = &localAllocation{Allocation: a}
	return a
}

// List returns the node's allocations in creation order.
func (l *Local) List(_ context.Context, nodeID string) ([]domain.Allocation, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := []domain.Allocation{}
	for _, id := range l.order {
		a := l.items[id]
		if a.NodeID != nodeID {
			continue
		}
		l.advance(a)
		out = append(out, a.Allocation)
	}
	return out, nil
}

// ForceRelease starts the release of an allocation that holds its node.
func (l *Local) ForceRelease(_ context.Context, allocationID, _ string) (domain.Allocation, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	a, ok := l.items[allocationID]
	if !ok {
		return domain.Allocation{}, &AllocationServiceRefusedError{Op: "force-release allocation", StatusCode: http.StatusNotFound,
			Message: "allocation " + allocationID + " not found"}
	}
	l.advance(a)
	switch a.State {
	case domain.AllocationRequested, domain.AllocationProvisioning, domain.AllocationActive:
		now := l.now().UTC()
		a.State = domain.AllocationReleasing
		a.UpdatedAt = now
		a.releaseAt = now.Add(LocalReleaseDelay)
	}
	return a.Allocation, nil
}

// advance finishes a release whose time has come.
func (l *Local) advance(a *localAllocation) {
	if a.State == domain.AllocationReleasing && !a.releaseAt.IsZero() && !l.now().Before(a.releaseAt) {
		a.State = domain.AllocationReleased
		a.UpdatedAt = a.releaseAt
	}
}

// controlRequest is the body of POST /_local/allocations.
type controlRequest struct {
	NodeID       string `json:"node_id"`
	AllocationID string `json:"allocation_id"`
	State        string `json:"state"`
}

// Control is the control API `maasflow local` serves on its API listener:
// POST /_local/allocations {"node_id","allocation_id","state"} → 201 with
// the allocation, GET /_local/allocations?node_id= → {"items":[…]}.
func (l *Local) Control() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /_local/allocations", func(w http.ResponseWriter, r *http.Request) {
		var in controlRequest
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&in); err != nil {
			controlError(w, "", "body must be a JSON object with node_id, allocation_id and state")
			return
		}
		switch {
		case strings.TrimSpace(in.NodeID) == "":
			controlError(w, "node_id", "is required")
			return
		case strings.TrimSpace(in.AllocationID) == "":
			controlError(w, "allocation_id", "is required")
			return
		case !slices.Contains(domain.AllocationStates(), in.State):
			controlError(w, "state", "must be one of "+strings.Join(domain.AllocationStates(), ", "))
			return
		}
		a := l.Put(domain.Allocation{ID: in.AllocationID, NodeID: in.NodeID, State: in.State})
		writeJSON(w, http.StatusCreated, a)
	})
	mux.HandleFunc("GET /_local/allocations", func(w http.ResponseWriter, r *http.Request) {
		node := r.URL.Query().Get("node_id")
		if node == "" {
			controlError(w, "node_id", "is required")
			return
		}
		items, _ := l.List(r.Context(), node)
		writeJSON(w, http.StatusOK, wireList{Items: items})
	})
	return mux
}

func controlError(w http.ResponseWriter, field, msg string) {
	if field != "" {
		msg = field + ": " + msg
	}
	writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]string{"code": "invalid_request", "field": field, "message": msg}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
