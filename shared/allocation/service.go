package allocation

import (
	"context"
	"fmt"

	"github.com/maasflow/maasflow/shared/domain"
)

// Service is the allocation service as the decommission paths and the node
// lifecycle API use it.
type Service interface {
	// List returns the node's allocations in every state (released ones
	// included, so a caller can tell "drained" from "never had any"). A
	// read.
	List(ctx context.Context, nodeID string) ([]domain.Allocation, error)
	// ForceRelease asks the service to release an allocation whatever its
	// tenant is doing. Asynchronous: the answer shows the allocation as it
	// is now (usually releasing); a repeat is harmless. An allocation that
	// is already released or whose release failed is returned unchanged.
	ForceRelease(ctx context.Context, allocationID, reason string) (domain.Allocation, error)
}

// AllocationServiceUnavailableError: the allocation service could not be
// reached or answered 5xx/429. Retryable.
type AllocationServiceUnavailableError struct {
	Op      string `json:"op"`
	Message string `json:"message"`
}

func (e *AllocationServiceUnavailableError) Error() string {
	return fmt.Sprintf("allocation service unavailable: %s: %s", e.Op, e.Message)
}

// AllocationServiceRefusedError: the allocation service refused a request
// (4xx other than 429): configuration or contract trouble an operator must
// look at.
type AllocationServiceRefusedError struct {
	Op         string `json:"op"`
	StatusCode int    `json:"status_code"`
	Message    string `json:"message"`
}

func (e *AllocationServiceRefusedError) Error() string {
	return fmt.Sprintf("allocation service refused %s (HTTP %d): %s", e.Op, e.StatusCode, e.Message)
}
