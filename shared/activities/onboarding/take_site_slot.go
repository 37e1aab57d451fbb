package onboarding

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/store"
)

// TakeSiteSlotInput is the execution input.
type TakeSiteSlotInput struct {
	OnboardingRef
}

// TakeSiteSlotOutput says whether the run may go on. Waiting is output,
// not an error: the state machine waits and asks again while Granted is
// false.
type TakeSiteSlotOutput struct {
	Granted bool `json:"granted"`
	// QueuePosition is the onboarding's place in the site's queue (1 is
	// next); 0 once granted.
	QueuePosition int `json:"queue_position"`
	// Limit is the site's max_concurrent_onboardings (0: no limit).
	Limit int `json:"limit"`
	// WaitSeconds is how long the state machine waits before asking
	// again (0 once granted): slotWait.
	WaitSeconds int `json:"wait_seconds"`
}

// Waits between a queued onboarding's asks: the first in line asks every
// slotWaitStep, each place behind it one step more, up to slotWaitMax. A
// slot given back is taken within one step, and an execution queued for
// a day behind a 500-row batch keeps its history far under Step Functions'
// 25,000 events.
const (
	slotWaitStep = 15
	slotWaitMax  = 300
)

// slotWait is the wait before the next ask from queue place position.
func slotWait(position int) int {
	return min(slotWaitStep*max(position, 1), slotWaitMax)
}

// TakeSiteSlot takes a slot of the site's throttle (policy
// max_concurrent_onboardings) for this attempt before anything touches
// MAAS. Over the limit the onboarding stays pending in stage queued with
// its place in the queue, first come first served; the state machine asks
// again after a wait. Asking again once granted is granted again. The slot
// is given back by the store in the write that moves the onboarding out
// of pending/running, however the run ends.
//
// Errors: RecordNotFoundError, StaleAttemptError, OnboardingClosedError,
// and the retryable store errors.
func (a *Activities) TakeSiteSlot(ctx context.Context, in TakeSiteSlotInput) (out TakeSiteSlotOutput, err error) {
	ctx, cancel := a.bound(ctx)
	defer cancel()
	c, err := a.begin(ctx, "TakeSiteSlot", domain.StageQueued, in.OnboardingRef)
	defer c.Finish(ctx, &err)
	if err != nil {
		return out, err
	}
	site, err := a.d.Store.GetSite(ctx, c.Rec.SiteID)
	if err != nil {
		return out, activities.StoreError("read site", err)
	}
	if p := site.Policy.MaxConcurrentOnboardings; p != nil {
		out.Limit = *p
	}
	prevStage := c.Rec.Stage
	held := c.Rec.Slot != nil && c.Rec.Slot.Attempt == c.ref.Attempt && c.Rec.Slot.Held
	res, err := a.d.Store.TakeSiteSlot(ctx, store.SlotRequest{
		OnboardingID: c.ref.OnboardingID, Attempt: c.ref.Attempt, Limit: out.Limit,
		Fence: func(o domain.Onboarding) error {
			if c.ref.stale(o) {
				return c.ref.staleError(o)
			}
			if o.Status != domain.OnboardingPending && o.Status != domain.OnboardingRunning {
				return &OnboardingClosedError{OnboardingID: o.ID, Status: o.Status}
			}
			return nil
		},
	})
	if err != nil {
		return out, activities.StoreError("take site slot", err)
	}
	c.setOnboarding(res.Onboarding)
	out.Granted, out.QueuePosition = res.Granted, res.Position
	if !res.Granted {
		out.WaitSeconds = slotWait(res.Position)
	}
	limit := "no limit"
	if out.Limit > 0 {
		limit = fmt.Sprintf("limit %d", out.Limit)
	}
	switch {
	case held: // a repeat: recorded the first time
	case res.Queued:
		c.Log.InfoContext(ctx, "queued for a site slot", slog.Int("queue_position", res.Position), slog.Int("limit", out.Limit))
		return out, c.Timeline(ctx, domain.TimelineEntry{Kind: domain.TimelineStageEntered,
			Detail: fmt.Sprintf("from %s; site %s full (%d held, %s): place %d in the queue", stageOrStart(prevStage), c.Rec.SiteID, res.Held, limit, res.Position)})
	case res.Granted && prevStage == domain.StageQueued:
		return out, c.Exit(ctx, fmt.Sprintf("site slot taken (%d held, %s)", res.Held, limit))
	case res.Granted && out.Limit > 0:
		return out, c.Note(ctx, "throttle", fmt.Sprintf("site slot taken (%d held, %s)", res.Held, limit))
	}
	return out, nil
}
