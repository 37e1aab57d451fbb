package localstack

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/maasflow/maasflow/shared/clock"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/events"
	"github.com/maasflow/maasflow/shared/store"
)

// interruptedDecomMessage is the failure message of a decommission whose
// execution died with the previous local stack process.
const interruptedDecomMessage = "the local stack stopped while this decommission ran; its machine may be mid-release. " +
	"MAAS is read again by resume and retry; rerun starts over from the drain; cancel retires the node unless MAAS still shows it Deployed and nothing was released"

// eventPublisher is what the restart needs of the event bus.
type eventPublisher interface {
	Publish(ctx context.Context, detailType string, detail any) error
}

// stopInterruptedDecommissions closes the decommissions a previous run left
// pending or running: their executions lived in that process's memory and
// are gone. Each becomes manual_intervention — the decommission's status
// for "stopped, an operator decides" — with the reason, a timeline note and
// its node.decommission.manual_intervention_required event, never failed:
// the node may be drained and its machine half-released, and failing would
// hand it back to service. The node stays decommissioning, held, and every
// recovery operation applies (docs/recovery.md). The event is marked on the
// timeline as the activities mark theirs; a decommission this close left
// without its marker (the process died in between) gets its event on the
// next start.
func stopInterruptedDecommissions(ctx context.Context, st *store.Store, bus eventPublisher, clk clock.Clock, log *slog.Logger) (int, error) {
	n := 0
	for _, status := range []domain.DecommissionStatus{domain.DecommissionPending, domain.DecommissionRunning, domain.DecommissionManualIntervention} {
		cursor := ""
		for {
			page, err := st.ListDecommissions(ctx, store.DecommissionFilter{Status: string(status), Limit: 200, Cursor: cursor})
			if err != nil {
				return n, fmt.Errorf("list %s decommissions: %w", status, err)
			}
			for _, d := range page.Items {
				closed, err := stopOneDecommission(ctx, st, bus, clk, log, d)
				if err != nil {
					return n, err
				}
				if closed {
					n++
				}
			}
			if page.NextCursor == "" {
				break
			}
			cursor = page.NextCursor
		}
	}
	return n, nil
}

// stopOneDecommission closes one interrupted decommission (closed reports
// it) and publishes its event unless the timeline marks it published.
func stopOneDecommission(ctx context.Context, st *store.Store, bus eventPublisher, clk clock.Clock, log *slog.Logger, d domain.Decommission) (closed bool, err error) {
	if d.Status == domain.DecommissionManualIntervention && (d.Error == nil || d.Error.Code != interruptedCode) {
		return false, nil // stopped for another reason, with its own event
	}
	now := clk.Now().UTC()
	if d.Status != domain.DecommissionManualIntervention {
		prev := d.Status
		d, err = st.UpdateDecommission(ctx, d.ID, func(cur *domain.Decommission) error {
			if cur.Status == domain.DecommissionPending || cur.Status == domain.DecommissionRunning {
				prev = cur.Status
				cur.Status = domain.DecommissionManualIntervention
				cur.Error = &domain.Failure{Code: interruptedCode, Message: interruptedDecomMessage, Stage: domain.Stage(cur.Stage)}
				cur.ExecutionID = ""
			}
			return nil
		})
		if err != nil {
			return false, fmt.Errorf("close interrupted decommission %s: %w", d.ID, err)
		}
		if err := st.AppendDecommissionEvents(ctx, domain.DecommissionEvent{
			DecommissionID: d.ID, Time: now, Attempt: d.Attempt, Kind: domain.TimelineNote, Stage: d.Stage,
			Outcome: string(domain.DecommissionManualIntervention), Source: "restart",
			Detail: fmt.Sprintf("status manual_intervention (was %s) at stage %s: %s", prev, stageOrStart(d.Stage), interruptedDecomMessage),
		}); err != nil {
			return false, fmt.Errorf("note interrupted decommission %s: %w", d.ID, err)
		}
		closed = true
	}
	return closed, publishInterrupted(ctx, st, bus, now, log, d)
}

// publishInterrupted publishes the manual_intervention_required event of a
// decommission the restart closed, once per run (the activities' marker).
func publishInterrupted(ctx context.Context, st *store.Store, bus eventPublisher, now time.Time, log *slog.Logger, d domain.Decommission) error {
	rows, err := st.ListDecommissionEvents(ctx, d.ID)
	if err != nil {
		return fmt.Errorf("read timeline of decommission %s: %w", d.ID, err)
	}
	tag := fmt.Sprintf("run %d", d.Run)
	for _, r := range rows {
		if r.Attempt == d.Attempt && r.Kind == domain.TimelineNote && r.Source == eventMarkerSource &&
			r.Detail == events.DecommissionManualInterventionRequired && r.Outcome == tag {
			return nil
		}
	}
	cid := d.CorrelationID
	if cid == "" {
		cid = d.ID
	}
	detail := events.DecommissionDetail{
		SiteID: d.SiteID, DecommissionID: d.ID, NodeID: d.NodeID, MAASSystemID: d.MAASSystemID, Hostname: d.Hostname,
		Mode: d.Mode, CorrelationID: cid, Attempt: d.Attempt, Status: string(d.Status), Stage: string(d.Stage),
		EraseOutcome: d.Erase.Outcome, OnboardingID: d.OnboardingID, OccurredAt: now,
		Error: &events.ErrorDetail{Code: interruptedCode, Message: interruptedDecomMessage},
	}
	if err := bus.Publish(ctx, events.DecommissionManualInterventionRequired, detail); err != nil {
		if events.IsInvalidDetail(err) { // never publishable: say so, and start anyway
			log.Error("the event of an interrupted decommission cannot be published", "decommission_id", d.ID, "error", err.Error())
			return nil
		}
		return fmt.Errorf("publish the event of interrupted decommission %s: %w", d.ID, err)
	}
	log.Warn("decommission interrupted by the last shutdown needs an operator", "decommission_id", d.ID, "stage", string(d.Stage))
	return st.AppendDecommissionEvents(ctx, domain.DecommissionEvent{
		DecommissionID: d.ID, Time: now, Attempt: d.Attempt, Kind: domain.TimelineNote, Stage: d.Stage,
		Source: eventMarkerSource, Detail: events.DecommissionManualInterventionRequired, Outcome: tag,
	})
}

func stageOrStart(s domain.DecommissionStage) string {
	if s == "" {
		return string(domain.DecomStageStart)
	}
	return string(s)
}
