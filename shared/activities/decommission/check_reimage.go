package decommission

import (
	"context"
	"fmt"
	"time"

	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/run"

	"github.com/maasflow/maasflow/shared/domain"
)

// CheckReimageInput is one poll of the reimage's onboarding.
type CheckReimageInput struct {
	DecommissionRef
	Poll activities.Poll `json:"poll"`
}

// CheckReimageOutput is the onboarding's status and the loop's outcome.
type CheckReimageOutput struct {
	OnboardingStatus domain.OnboardingStatus `json:"onboarding_status"`
	Outcome          string                  `json:"outcome"`
	Reason           string                  `json:"reason"`
	Poll             activities.Poll         `json:"poll"`
}

// CheckReimage reads the reimage's onboarding: completed is done (the node
// enrolled with its new token and is active); failed, cancelled or waiting
// for an operator is failed; pending or running is in progress. The
// onboarding has its own bounds, so this loop has none.
//
// Errors: store errors.
func (a *Activities) CheckReimage(ctx context.Context, in CheckReimageInput) (out CheckReimageOutput, err error) {
	c, err := a.beginDecom(ctx, "CheckReimage", domain.DecomStageReimage, in.DecommissionRef)
	defer c.Finish(ctx, &err)
	if err != nil {
		return out, err
	}
	if err := c.enter(ctx); err != nil {
		return out, err
	}
	if c.Rec.OnboardingID == "" {
		return out, &activities.ActivityFailedError{Activity: c.Activity, Message: "the reimage has no onboarding"}
	}
	ob, err := a.d.Store.GetOnboarding(ctx, c.Rec.OnboardingID)
	if err != nil {
		return out, activities.StoreError("read reimage onboarding", err)
	}
	started := in.Poll.StartedAt
	if started == "" {
		started = a.d.Clock.Now().UTC().Format(time.RFC3339Nano)
	}
	out = CheckReimageOutput{OnboardingStatus: ob.Status, Poll: activities.Poll{Count: in.Poll.Count + 1, StartedAt: started}}
	switch ob.Status {
	case domain.OnboardingCompleted:
		out.Outcome, out.Reason = activities.OutcomeDone, "onboarding "+ob.ID+" completed"
		return out, c.Exit(ctx, out.Reason+": node active again")
	case domain.OnboardingPending, domain.OnboardingRunning:
		out.Outcome, out.Reason = activities.OutcomeInProgress, "onboarding "+ob.ID+" at stage "+string(ob.Stage)
		out.Poll.WaitSeconds = activities.PollWait(in.Poll.Count)
		return out, nil
	}
	out.Outcome, out.Reason = activities.OutcomeFailed, fmt.Sprintf("onboarding %s is %s", ob.ID, ob.Status)
	if ob.Error != nil {
		out.Reason += ": " + ob.Error.Code + ": " + ob.Error.Message
	}
	out.Reason = activities.Truncate(out.Reason, activities.MaxFailureMessage)
	return out, c.Timeline(ctx, domain.DecommissionEvent{Kind: domain.TimelineStageExited, Outcome: run.OutcomeFailed, Detail: out.Reason})
}
