package decommission

import (
	"context"
	"fmt"

	"github.com/maasflow/maasflow/shared/activities"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
)

// FallbackReleaseInput is one step of the release fallback.
type FallbackReleaseInput struct {
	DecommissionRef
}

// Fallback outcomes.
const (
	// OutcomeReleased: the release without erase went out (or the machine
	// is already released); poll the release again.
	OutcomeReleased = "released"
)

// FallbackReleaseOutput says whether the fallback's release went out
// (released) or a step is still under way (in_progress: wait and call
// again).
type FallbackReleaseOutput struct {
	StatusName  string `json:"status_name"`
	Outcome     string `json:"outcome"`
	WaitSeconds int    `json:"wait_seconds"`
}

// fallbackStepWait is the wait between fallback steps: MAAS's abort and
// mark_fixed answer before the status changes (maas-behaviour §14.5).
const fallbackStepWait = 15

// FallbackRelease is the release fallback the policy allows after a failed
// or hung erase (requirements readiness §4.5), by MAAS's real rules (maas-behaviour
// §14.3), one step per call from what MAAS reports:
//   - Disk erasing (hung): abort, which MAAS turns into Failed disk erasing
//     once the power-off completes (in_progress);
//   - Failed disk erasing: release without erase (released);
//   - Broken: released without erase as it is (MAAS releases from Broken);
//     mark_fixed first (in_progress) only when the policy asks for it;
//   - another releasable status: release without erase (released);
//   - Releasing or Ready: already released (released).
//
// MAAS's force flag is not used: it does not override states
// (docs/decisions.md). The record says plainly that the disks were NOT
// erased.
//
// Errors: activities.MachineStateUnsafeError, MAAS errors, store errors.
func (a *Activities) FallbackRelease(ctx context.Context, in FallbackReleaseInput) (out FallbackReleaseOutput, err error) {
	c, err := a.beginDecom(ctx, "FallbackRelease", domain.DecomStageFallback, in.DecommissionRef)
	defer c.Finish(ctx, &err)
	if err != nil {
		return out, err
	}
	if err := c.enter(ctx); err != nil {
		return out, err
	}
	pol, err := c.policy(ctx)
	if err != nil {
		return out, err
	}
	client, m, err := c.machine(ctx)
	if err != nil {
		return out, err
	}
	comment := fmt.Sprintf("maasflow decommission %s: release fallback without erase", c.Rec.ID)
	reason := c.Rec.Erase.FallbackReason
	if reason == "" && c.Rec.Erase.Outcome == domain.EraseFailed {
		reason = c.Rec.Erase.Detail // what CheckRelease saw: failed, or hung past the bound
	}
	switch {
	case m.Status == maas.StatusDiskErasing:
		if _, err := client.Abort(ctx, m.SystemID, comment); err != nil {
			return out, err
		}
		if reason == "" {
			reason = "hung in Disk erasing"
		}
		if err := c.fallbackEvidence(ctx, reason, false); err != nil {
			return out, err
		}
		out.Outcome, out.WaitSeconds = activities.OutcomeInProgress, fallbackStepWait
		return out, c.Note(ctx, activities.SourceMAAS, "erase hung: abort sent")
	case m.Status == maas.StatusBroken && pol.MarkFixedBeforeRelease:
		if _, err := client.MarkFixed(ctx, m.SystemID, comment); err != nil {
			return out, err
		}
		out.Outcome, out.WaitSeconds = activities.OutcomeInProgress, fallbackStepWait
		return out, c.Note(ctx, activities.SourceMAAS, "machine was Broken: mark_fixed sent")
	case m.Status == maas.StatusReleasing || m.Status == maas.StatusReady:
		if !c.Rec.Erase.Fallback {
			if err := c.fallbackEvidence(ctx, orElse(reason, "failed"), true); err != nil {
				return out, err
			}
		}
		out.Outcome, out.StatusName = OutcomeReleased, activities.MachineStatusName(m)
		return out, nil
	case activities.Releasable[m.Status]:
		if reason == "" {
			reason = "failed: " + orElse(m.ErrorDescription, activities.MachineStatusName(m))
		}
		if m, err = client.Release(ctx, m.SystemID, maas.MachineReleaseParams{Comment: comment}); err != nil {
			return out, err
		}
		if err := c.fallbackEvidence(ctx, reason, true); err != nil {
			return out, err
		}
		out.Outcome, out.StatusName = OutcomeReleased, activities.MachineStatusName(m)
		return out, c.Note(ctx, activities.SourceMAAS, "released without erase: the disks are NOT erased")
	}
	return out, &activities.MachineStateUnsafeError{SystemID: m.SystemID, Status: activities.MachineStatusName(m),
		Reason: "the release fallback cannot act from this status"}
}

// fallbackEvidence records why the fallback runs and, once the release
// without erase is sent, that the disks are not erased.
func (c *dcall) fallbackEvidence(ctx context.Context, reason string, released bool) error {
	return c.update(ctx, func(d *domain.Decommission) error {
		d.Erase.FallbackReason = reason
		if released {
			d.Erase.Fallback = true
			d.Erase.Outcome = domain.EraseNotDone
			d.Erase.Detail = "the disks were NOT erased: the release fallback released the machine without erase after the erase " + reason
		}
		return nil
	})
}

func orElse(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
