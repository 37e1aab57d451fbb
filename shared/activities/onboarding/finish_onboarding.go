package onboarding

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/events"
)

// FinishOnboardingInput is the final status and, on the failure paths, the
// caught error.
type FinishOnboardingInput struct {
	OnboardingRef
	Status domain.OnboardingStatus `json:"status"`
	Error  *activities.CatchResult `json:"error,omitempty"`
}

// FinishOnboardingOutput says what the onboarding ended as.
type FinishOnboardingOutput struct {
	Status    domain.OnboardingStatus `json:"status"`
	Published bool                    `json:"published"`
	// Stale is set when another attempt owns the onboarding: nothing was
	// changed.
	Stale bool `json:"stale,omitempty"`
}

// FinishOnboarding ends the run: it sets the final status (completed,
// failed or manual_intervention), completed_at, the stage (done when
// completed; otherwise the stage it stopped in stays, and the failure
// records it with the error name and message from the Catch), and
// publishes node.onboarding.completed, .failed or
// .manual_intervention_required with the ids, the hostname, the
// correlation id and the attempt.
//
// Idempotent: repeating it with the same status publishes nothing new. An
// onboarding another attempt owns, or that is already closed with another
// status (cancelled), is left alone.
func (a *Activities) FinishOnboarding(ctx context.Context, in FinishOnboardingInput) (out FinishOnboardingOutput, err error) {
	ctx, cancel := a.bound(ctx)
	defer cancel()
	c, err := a.begin(ctx, "FinishOnboarding", "", in.OnboardingRef)
	defer c.Finish(ctx, &err)
	var stale *StaleAttemptError
	if errors.As(err, &stale) {
		c.Log.WarnContext(ctx, "onboarding belongs to another attempt: left alone", slog.Int("current_attempt", stale.Current))
		return FinishOnboardingOutput{Stale: true}, nil
	}
	if err != nil {
		return out, err
	}
	detailType, ok := finishDetailTypes[in.Status]
	if !ok {
		return out, &activities.InvalidInputError{Field: "status", Reason: "must be completed, failed or manual_intervention"}
	}
	c.Stage = c.Rec.Stage
	out.Status = in.Status

	if c.Rec.Status != in.Status {
		if !domain.IsOpenStatus(c.Rec.Status) || c.Rec.Status == domain.OnboardingManualIntervention {
			c.Log.WarnContext(ctx, "onboarding already closed: left alone", slog.String("status", string(c.Rec.Status)))
			return FinishOnboardingOutput{Status: c.Rec.Status}, nil
		}
		if err := c.close(ctx, in); err != nil {
			return out, err
		}
	}
	if in.Status != domain.OnboardingCompleted {
		if err := c.standDownNode(ctx); err != nil {
			return out, err
		}
	}
	detail := c.eventDetail()
	if f := c.Rec.Error; f != nil && in.Status != domain.OnboardingCompleted {
		detail.Error = &events.ErrorDetail{Code: f.Code, Message: f.Message}
	}
	if in.Status == domain.OnboardingManualIntervention && c.Rec.Stage == domain.StageVerifyHardware {
		detail.HardwareDiff = hardwareDiffDetail(c.Rec.HardwareDiff)
	}
	if out.Published, err = c.publishOnce(ctx, detailType, detail); err != nil {
		return out, err
	}
	return out, nil
}

var finishDetailTypes = map[domain.OnboardingStatus]string{
	domain.OnboardingCompleted:          events.OnboardingCompleted,
	domain.OnboardingFailed:             events.OnboardingFailed,
	domain.OnboardingManualIntervention: events.OnboardingManualInterventionRequired,
}

// close writes the final status and its timeline rows in one conditional
// update: a reader never sees a closed record whose closing rows are still
// to come, and a crash between two writes cannot lose them.
func (c *call) close(ctx context.Context, in FinishOnboardingInput) error {
	now := c.a.d.Clock.Now().UTC()
	var failure *domain.Failure
	if in.Status != domain.OnboardingCompleted {
		failure = activities.FailureFrom(in.Error, c.Rec.Stage)
	}
	outcome := outcomeFailed
	if in.Status == domain.OnboardingManualIntervention {
		outcome = outcomeManual
	}
	closing := func(prev, _ domain.Onboarding) []domain.TimelineEntry {
		rows := append([]domain.TimelineEntry(nil), c.Pending...)
		if in.Status == domain.OnboardingCompleted {
			return append(rows,
				c.Row(domain.TimelineEntry{Kind: domain.TimelineStageEntered, Stage: domain.StageDone, Detail: "from " + stageOrStart(prev.Stage)}),
				c.Row(domain.TimelineEntry{Kind: domain.TimelineNote, Stage: domain.StageDone, Source: "finish", Detail: "status completed"}),
			)
		}
		return append(rows, c.Row(domain.TimelineEntry{Kind: domain.TimelineNote, Source: "finish",
			Detail: fmt.Sprintf("status %s (%s) at stage %s: %s: %s", in.Status, outcome, stageOrStart(prev.Stage), failure.Code, failure.Message)}))
	}
	updated, err := c.a.d.Store.UpdateOnboardingWithTimeline(ctx, c.ref.OnboardingID, func(o *domain.Onboarding) error {
		if c.ref.stale(*o) {
			return c.ref.staleError(*o)
		}
		if !domain.IsOpenStatus(o.Status) || o.Status == domain.OnboardingManualIntervention {
			return &OnboardingClosedError{OnboardingID: o.ID, Status: o.Status}
		}
		o.Status = in.Status
		if o.CompletedAt == nil {
			o.CompletedAt = &now
		}
		o.EnrollmentTaskToken = ""
		if in.Status == domain.OnboardingCompleted {
			o.Stage, o.Error = domain.StageDone, nil
		} else {
			f := *failure
			f.Stage = o.Stage
			o.Error = &f
		}
		return nil
	}, closing)
	if err != nil {
		return activities.StoreError("close onboarding", err)
	}
	c.Pending = nil
	c.setOnboarding(updated)
	c.Stage = updated.Stage
	c.Log.InfoContext(ctx, "onboarding finished", slog.String("status", string(in.Status)))
	return nil
}

// standDownNode takes back the activation of a run that did not complete:
// a node that enrolled in this run (the enrollment API made it active) but
// whose run then stopped (a completion gate failed after the enrollment)
// must not stay active without a completed onboarding (requirements readiness §8.5), or
// it would block every later onboarding of the host. Only a node this
// onboarding activated is touched, and its enrolled_at stays: adopt reads
// it. Repeating it changes nothing.
func (c *call) standDownNode(ctx context.Context) error {
	if c.Rec.NodeID == "" {
		return nil
	}
	node, err := c.a.d.Store.GetNode(ctx, c.Rec.NodeID)
	if err != nil {
		return activities.StoreError("read node", err)
	}
	if node.Status != domain.NodeActive || node.OnboardingID != c.Rec.ID {
		return nil
	}
	now := c.a.d.Clock.Now().UTC()
	stood := false
	if _, err := c.a.d.Store.UpdateNode(ctx, node.ID, func(n *domain.Node) error {
		if n.Status == domain.NodeActive && n.OnboardingID == c.Rec.ID {
			n.Status, n.UpdatedAt, stood = domain.NodeOnboarding, now, true
		}
		return nil
	}); err != nil {
		return activities.StoreError("stand the node down", err)
	}
	if !stood {
		return nil
	}
	c.Log.WarnContext(ctx, "node enrolled but its run did not complete: no longer active")
	return c.Note(ctx, "finish", fmt.Sprintf("node %s enrolled but the run is %s: it is no longer active (adopt or a new attempt decides)", node.ID, c.Rec.Status))
}
