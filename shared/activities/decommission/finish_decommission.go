package decommission

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/maasflow/maasflow/shared/activities"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/events"
	"github.com/maasflow/maasflow/shared/maas"
)

// FinishDecommissionInput is the final status and, on the failure paths,
// the caught error.
type FinishDecommissionInput struct {
	DecommissionRef
	Status domain.DecommissionStatus `json:"status"`
	Error  *activities.CatchResult   `json:"error,omitempty"`
}

// FinishDecommissionOutput says what the decommission ended as.
type FinishDecommissionOutput struct {
	Status     domain.DecommissionStatus `json:"status"`
	NodeStatus string                    `json:"node_status"`
}

var decomDetailTypes = map[domain.DecommissionStatus]string{
	domain.DecommissionCompleted:          events.DecommissionCompleted,
	domain.DecommissionFailed:             events.DecommissionFailed,
	domain.DecommissionManualIntervention: events.DecommissionManualInterventionRequired,
}

// FinishDecommission ends the run and puts the node where the mode says:
//   - completed full: node removed (terminal), every token of it revoked;
//   - completed storage_cleanup: node retired (unschedulable, identity
//     kept);
//   - completed reimage: the node is active again through its onboarding;
//   - failed: the node gets back the status it had only when no attempt
//     released the machine and MAAS still shows it Deployed; otherwise it
//     is retired, saying why;
//   - manual_intervention: the node stays decommissioning, out of service,
//     and the decommission keeps it until an operator resolves it.
//
// It publishes node.decommission.completed, .failed or
// .manual_intervention_required. Idempotent: a repeat with the same status
// publishes nothing new; a decommission closed otherwise is left alone.
func (a *Activities) FinishDecommission(ctx context.Context, in FinishDecommissionInput) (out FinishDecommissionOutput, err error) {
	c, err := a.beginDecom(ctx, "FinishDecommission", "", in.DecommissionRef)
	defer c.Finish(ctx, &err)
	if err != nil {
		return out, err
	}
	detailType, ok := decomDetailTypes[in.Status]
	if !ok {
		return out, &activities.InvalidInputError{Field: "status", Reason: "must be completed, failed or manual_intervention"}
	}
	c.Stage = c.Rec.Stage
	if c.Rec.Status != in.Status {
		if !domain.IsOpenStatus(c.Rec.Status) || c.Rec.Status == domain.DecommissionManualIntervention {
			c.Log.WarnContext(ctx, "decommission already closed: left alone", slog.String("status", string(c.Rec.Status)))
			return FinishDecommissionOutput{Status: c.Rec.Status}, nil
		}
		// The node moves first, so whoever reads the record closed finds
		// its node settled; a run an operator stopped meanwhile (cancel,
		// freeze: the record moved on) moves no node, and the close below
		// is conditional on the record still being this run's.
		if !c.stillRunning(ctx) {
			return out, &DecommissionClosedError{DecommissionID: c.Rec.ID, Status: "stopped", Attempt: c.ref.Attempt, Current: c.Rec.Attempt}
		}
		if err := c.settleNode(ctx, in.Status); err != nil {
			return out, err
		}
		if err := c.close(ctx, in); err != nil {
			return out, err
		}
	}
	node, err := a.d.Store.GetNode(ctx, c.Rec.NodeID)
	if err != nil {
		return out, activities.StoreError("read node", err)
	}
	detail := c.eventDetail()
	detail.EraseOutcome = c.Rec.Erase.Outcome
	detail.OnboardingID = c.Rec.OnboardingID
	if f := c.Rec.Error; f != nil && in.Status != domain.DecommissionCompleted {
		detail.Error = &events.ErrorDetail{Code: f.Code, Message: f.Message}
	}
	if err := c.publishOnce(ctx, detailType, detail); err != nil {
		return out, err
	}
	return FinishDecommissionOutput{Status: in.Status, NodeStatus: node.Status}, nil
}

// settleNode moves the node to where the outcome leaves it.
func (c *dcall) settleNode(ctx context.Context, status domain.DecommissionStatus) error {
	st := c.a.d.Store
	node, err := st.GetNode(ctx, c.Rec.NodeID)
	if err != nil {
		return activities.StoreError("read node", err)
	}
	target, why := "", ""
	switch {
	case status == domain.DecommissionCompleted && c.Rec.Mode == domain.DecommissionFull:
		if err := c.revokeNodeTokens(ctx, node); err != nil {
			return err
		}
		target = domain.NodeRemoved
	case status == domain.DecommissionCompleted && c.Rec.Mode == domain.DecommissionStorageCleanup:
		target = domain.NodeRetired
	case status == domain.DecommissionFailed && node.Status == domain.NodeDecommissioning:
		target, why = c.failedNodeTarget(ctx)
	}
	if target == "" || node.Status == target {
		return nil
	}
	if _, err := st.UpdateNode(ctx, node.ID, func(n *domain.Node) error {
		n.Status = target
		return nil
	}); err != nil {
		return activities.StoreError("settle node", err)
	}
	detail := fmt.Sprintf("node %s: %s → %s", node.ID, node.Status, target)
	if why != "" {
		detail += ": " + why
	}
	return c.Note(ctx, "finish", detail)
}

// failedNodeTarget is where a failed decommission leaves its node: back at
// the status it had only when no attempt released the machine and MAAS
// shows it Deployed (domain.Decommission.MayReturnToService); otherwise
// retired, with why.
func (c *dcall) failedNodeTarget(ctx context.Context) (target, why string) {
	history, err := c.a.d.Decommissions.ListDecommissionEvents(ctx, c.ref.DecommissionID)
	if err != nil {
		return domain.NodeRetired, "the timeline could not be read, so the machine may have been released"
	}
	if c.Rec.ReleaseStarted(history) {
		return domain.NodeRetired, "an attempt of this decommission released the machine; it no longer runs the tenant's OS"
	}
	_, m, err := c.machine(ctx)
	switch {
	case err != nil:
		return domain.NodeRetired, "MAAS could not be read to confirm the machine is still Deployed"
	case m.Status != maas.StatusDeployed:
		return domain.NodeRetired, "MAAS shows the machine " + activities.MachineStatusName(m) + ", not Deployed"
	case !c.Rec.MayReturnToService(history, true):
		return "", ""
	}
	return c.Rec.NodeStatusBefore, "MAAS still shows the machine Deployed and no release was sent"
}

// close writes the final status and records it on the timeline.
func (c *dcall) close(ctx context.Context, in FinishDecommissionInput) error {
	now := c.a.d.Clock.Now().UTC()
	var failure *domain.Failure
	if in.Status != domain.DecommissionCompleted {
		failure = activities.FailureFrom(in.Error, domain.Stage(c.Rec.Stage))
	}
	// The final status and its timeline rows are one write.
	closed := func(prev, next domain.Decommission) []domain.DecommissionEvent {
		row := func(r domain.DecommissionEvent) domain.DecommissionEvent {
			r.Stage = next.Stage
			return c.Row(r)
		}
		if in.Status == domain.DecommissionCompleted {
			return []domain.DecommissionEvent{
				row(domain.DecommissionEvent{Kind: domain.TimelineStageEntered, Detail: "from " + decomStageOrStart(prev.Stage)}),
				row(domain.DecommissionEvent{Kind: domain.TimelineNote, Source: "finish", Detail: "status completed; disks " + next.Erase.Outcome}),
			}
		}
		return []domain.DecommissionEvent{row(domain.DecommissionEvent{Kind: domain.TimelineNote, Source: "finish",
			Detail: fmt.Sprintf("status %s at stage %s: %s: %s", in.Status, decomStageOrStart(prev.Stage), failure.Code, failure.Message)})}
	}
	updated, err := c.a.d.Decommissions.UpdateDecommissionWithTimeline(ctx, c.ref.DecommissionID, func(d *domain.Decommission) error {
		if !c.ref.onRun(d) || !domain.IsOpenStatus(d.Status) || d.Status == domain.DecommissionManualIntervention {
			return &DecommissionClosedError{DecommissionID: d.ID, Status: string(d.Status), Attempt: c.ref.Attempt, Current: d.Attempt}
		}
		d.Status = in.Status
		if in.Status == domain.DecommissionCompleted {
			d.Stage, d.Error = domain.DecomStageFinish, nil
		} else {
			f := *failure
			f.Stage = domain.Stage(d.Stage)
			d.Error = &f
		}
		if in.Status != domain.DecommissionManualIntervention {
			d.CompletedAt = &now
		}
		return nil
	}, closed)
	if err != nil {
		return activities.StoreError("close decommission", err)
	}
	c.Rec = updated
	c.Stage = updated.Stage
	c.Log.InfoContext(ctx, "decommission finished", slog.String("status", string(in.Status)))
	return nil
}
