package decommission

import (
	"context"
	"fmt"

	"github.com/maasflow/maasflow/shared/activities"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/events"
)

// BeginDecommissionInput starts a decommission execution.
type BeginDecommissionInput struct {
	DecommissionRef
}

// BeginDecommissionOutput is what the state machine's Choices read.
type BeginDecommissionOutput struct {
	Mode         string `json:"mode"`
	MAASSystemID string `json:"maas_system_id"`
}

// BeginDecommission moves the decommission to running, takes the node out
// of service (status decommissioning, remembering the status it had) and
// publishes node.decommission.started. A repeat finds it running and
// changes nothing. Nothing in MAAS or the allocation service is touched,
// so its errors take the failed path.
//
// Errors: NodeNotDecommissionableError (removed node, no MAAS machine),
// DecommissionClosedError, store errors.
func (a *Activities) BeginDecommission(ctx context.Context, in BeginDecommissionInput) (out BeginDecommissionOutput, err error) {
	c, err := a.beginDecom(ctx, "BeginDecommission", domain.DecomStageStart, in.DecommissionRef)
	defer c.Finish(ctx, &err)
	if err != nil {
		return out, err
	}
	node, err := a.d.Store.GetNode(ctx, c.Rec.NodeID)
	if err != nil {
		return out, activities.StoreError("read node", err)
	}
	if node.Status == domain.NodeRemoved {
		return out, &NodeNotDecommissionableError{NodeID: node.ID, Status: node.Status}
	}
	if node.MAASSystemID == "" && c.Rec.MAASSystemID == "" {
		return out, &NodeNotDecommissionableError{NodeID: node.ID, Status: node.Status + " without a MAAS machine"}
	}
	// The start and its timeline row are one write.
	startedRow := func(prev, next domain.Decommission) []domain.DecommissionEvent {
		if prev.Status != domain.DecommissionPending {
			return nil
		}
		return []domain.DecommissionEvent{c.Row(domain.DecommissionEvent{Kind: domain.TimelineStageEntered,
			Detail: fmt.Sprintf("status running; mode %s; node was %s", next.Mode, next.NodeStatusBefore)})}
	}
	updated, err := a.d.Decommissions.UpdateDecommissionWithTimeline(ctx, c.ref.DecommissionID, func(d *domain.Decommission) error {
		if !c.ref.onRun(d) || !domain.IsOpenStatus(d.Status) || d.Status == domain.DecommissionManualIntervention {
			return &DecommissionClosedError{DecommissionID: d.ID, Status: string(d.Status), Attempt: c.ref.Attempt, Current: d.Attempt}
		}
		d.Status = domain.DecommissionRunning
		if d.Stage == "" {
			d.Stage = domain.DecomStageStart
		}
		if d.MAASSystemID == "" {
			d.MAASSystemID = node.MAASSystemID
		}
		if d.NodeStatusBefore == "" && node.Status != domain.NodeDecommissioning {
			d.NodeStatusBefore = node.Status
		}
		return nil
	}, startedRow)
	if err != nil {
		return out, activities.StoreError("start decommission", err)
	}
	c.Rec = updated
	if node.Status != domain.NodeDecommissioning {
		if _, err := a.d.Store.UpdateNode(ctx, node.ID, func(n *domain.Node) error {
			if n.Status == domain.NodeRemoved {
				return &NodeNotDecommissionableError{NodeID: n.ID, Status: n.Status}
			}
			n.Status = domain.NodeDecommissioning
			return nil
		}); err != nil {
			return out, activities.StoreError("take node out of service", err)
		}
	}
	if err := c.publishOnce(ctx, events.DecommissionStarted, c.eventDetail()); err != nil {
		return out, err
	}
	return BeginDecommissionOutput{Mode: c.Rec.Mode, MAASSystemID: c.Rec.MAASSystemID}, nil
}
