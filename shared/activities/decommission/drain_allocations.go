package decommission

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/maasflow/maasflow/shared/activities"

	"github.com/maasflow/maasflow/shared/domain"
)

// DrainAllocationsInput is one drain poll.
type DrainAllocationsInput struct {
	DecommissionRef
	Poll activities.Poll `json:"poll"`
}

// DrainAllocationsOutput says whether the node is free: outcome done when
// every allocation is released, in_progress with poll.wait_seconds
// otherwise.
type DrainAllocationsOutput struct {
	Outcome string          `json:"outcome"`
	Pending int             `json:"pending"`
	Poll    activities.Poll `json:"poll"`
}

// DrainAllocations force-releases the node's allocations through
// Provisioning.Allocation (requirements API boundary §3) and reports when they are all
// released. Each poll asks again for every allocation that still holds the
// node (the service treats a repeat as a no-op), so a lost answer costs
// nothing. Waiting is output, never an error.
//
// Errors: DrainFailedError (an allocation is release_failed),
// DrainTimeoutError (past the policy's drain bound), AllocationUnavailableError
// (retryable), AllocationRefusedError, store errors.
func (a *Activities) DrainAllocations(ctx context.Context, in DrainAllocationsInput) (out DrainAllocationsOutput, err error) {
	c, err := a.beginDecom(ctx, "DrainAllocations", domain.DecomStageDrain, in.DecommissionRef)
	defer c.Finish(ctx, &err)
	if err != nil {
		return out, err
	}
	if err := c.enter(ctx); err != nil {
		return out, err
	}
	if a.d.Allocations == nil {
		return out, &activities.ActivityFailedError{Activity: c.Activity, Message: "no allocation service configured"}
	}
	now := a.d.Clock.Now().UTC()
	started := now
	if in.Poll.StartedAt != "" {
		if started, err = time.Parse(time.RFC3339Nano, in.Poll.StartedAt); err != nil {
			return out, &activities.InvalidInputError{Field: "poll.started_at", Reason: "must be an RFC 3339 time"}
		}
	}
	allocs, err := a.d.Allocations.List(ctx, c.Rec.NodeID)
	if err != nil {
		return out, allocationError(err)
	}
	var pending []string
	for _, al := range allocs {
		switch al.State {
		case domain.AllocationReleased:
			continue
		case domain.AllocationReleaseFailed:
			return out, &DrainFailedError{NodeID: c.Rec.NodeID, AllocationID: al.ID, State: al.State}
		case domain.AllocationReleasing:
		default:
			got, err := a.d.Allocations.ForceRelease(ctx, al.ID, fmt.Sprintf("decommission %s (%s)", c.Rec.ID, c.Rec.Mode))
			if err != nil {
				return out, allocationError(err)
			}
			if err := c.Note(ctx, "allocation", fmt.Sprintf("allocation %s was %s: force-release asked, now %s", al.ID, al.State, got.State)); err != nil {
				return out, err
			}
			if got.State == domain.AllocationReleaseFailed {
				return out, &DrainFailedError{NodeID: c.Rec.NodeID, AllocationID: al.ID, State: got.State}
			}
			if got.State == domain.AllocationReleased {
				continue
			}
		}
		pending = append(pending, al.ID)
	}
	out = DrainAllocationsOutput{Pending: len(pending),
		Poll: activities.Poll{Count: in.Poll.Count + 1, StartedAt: started.Format(time.RFC3339Nano)}}
	if len(pending) == 0 {
		out.Outcome = activities.OutcomeDone
		return out, c.Exit(ctx, fmt.Sprintf("node free: %d allocation(s), all released", len(allocs)))
	}
	pol, err := c.policy(ctx)
	if err != nil {
		return out, err
	}
	limit := time.Duration(pol.DrainTimeoutSeconds) * time.Second
	if waited := now.Sub(started); waited > limit {
		return out, &DrainTimeoutError{NodeID: c.Rec.NodeID, Pending: pending, WaitedSeconds: int(waited.Seconds()), LimitSeconds: pol.DrainTimeoutSeconds}
	}
	c.Log.InfoContext(ctx, "drain in progress", slog.String("pending", strings.Join(pending, ",")))
	out.Outcome = activities.OutcomeInProgress
	out.Poll.WaitSeconds = activities.PollWait(in.Poll.Count)
	return out, nil
}
