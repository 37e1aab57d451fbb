package decommission

import (
	"context"
	"fmt"

	"github.com/maasflow/maasflow/shared/activities"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
)

// ReleaseMachineInput asks for the machine's release.
type ReleaseMachineInput struct {
	DecommissionRef
}

// ReleaseMachineOutput is the machine's status after the request.
type ReleaseMachineOutput struct {
	StatusName string `json:"status_name"`
	EraseMode  string `json:"erase_mode"`
}

// ReleaseMachine releases the node's machine with the erase the policy asks
// for (requirements readiness §4.5), judging from what MAAS reports now:
//   - Broken: released as it is. MAAS releases from Broken (Broken is in
//     its RELEASABLE_STATUSES, canonical/maas src/maasserver/models/node.py;
//     maas-api.md §5 release); mark_fixed needs an admin key and clears the
//     mark data-centre staff set, so it is sent first only when the policy
//     asks (mark_fixed_before_release).
//   - Ready, and an erase is asked: MAAS erases only on release, so the
//     machine is allocated and released again, erasing.
//   - Releasing or Disk erasing: a release is in flight; nothing is sent.
//   - any status MAAS releases from: release with the erase flags.
//
// A repeat after the release went out sends nothing again (the record
// holds the erase's start). The erase asked and when is recorded on the
// decommission.
//
// Errors: activities.MachineStateUnsafeError (a status MAAS cannot release from, e.g.
// Commissioning, Rescue mode), MAAS errors, store errors.
func (a *Activities) ReleaseMachine(ctx context.Context, in ReleaseMachineInput) (out ReleaseMachineOutput, err error) {
	c, err := a.beginDecom(ctx, "ReleaseMachine", domain.DecomStageRelease, in.DecommissionRef)
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
	mode := pol.EraseMode
	out.EraseMode = mode
	client, m, err := c.machine(ctx)
	if err != nil {
		return out, err
	}
	comment := fmt.Sprintf("maasflow decommission %s (%s)", c.Rec.ID, c.Rec.Mode)
	sent := c.Rec.Erase.StartedAt != nil
	var eventsAfter int64
	if !sent {
		// Read before anything is sent, so every event of this release is
		// newer (CheckRelease counts only those as evidence).
		if eventsAfter, err = activities.NewestEventID(ctx, client, m.SystemID); err != nil {
			return out, err
		}
	}

	if acts := m.Status == maas.StatusBroken || m.Status == maas.StatusReleasing || m.Status == maas.StatusDiskErasing ||
		m.Status == maas.StatusReady || activities.Releasable[m.Status]; acts && c.Rec.ReleaseStartedAt == nil {
		// Written before anything is sent: a run stopped between the request
		// and its record still counts as having released the machine, so no
		// later cancel or failure hands the node back to service.
		if err := c.update(ctx, func(d *domain.Decommission) error {
			if d.ReleaseStartedAt == nil {
				now := c.a.d.Clock.Now().UTC()
				d.ReleaseStartedAt = &now
			}
			return nil
		}); err != nil {
			return out, err
		}
	}
	if m.Status == maas.StatusBroken && pol.MarkFixedBeforeRelease {
		// maas-behaviour §14.3: mark_fixed works only from Broken; the
		// policy asks for it, so the erase runs on a machine MAAS considers
		// healthy.
		if m, err = client.MarkFixed(ctx, m.SystemID, comment); err != nil {
			return out, err
		}
		if err := c.Note(ctx, activities.SourceMAAS, "machine was Broken: mark_fixed, now "+activities.MachineStatusName(m)); err != nil {
			return out, err
		}
	}
	switch {
	case m.Status == maas.StatusReleasing || m.Status == maas.StatusDiskErasing:
		if !sent {
			if err := c.recordRelease(ctx, mode, eventsAfter, "a release was already in flight ("+activities.MachineStatusName(m)+")"); err != nil {
				return out, err
			}
		}
	case m.Status == maas.StatusReady && (sent || mode == domain.EraseNone):
		if !sent {
			if err := c.recordRelease(ctx, mode, eventsAfter, "machine already Ready; policy erase_mode none"); err != nil {
				return out, err
			}
		}
	case m.Status == maas.StatusReady:
		// MAAS erases disks only as part of a release (maas-behaviour §5),
		// so a Ready machine is allocated to be released with erase.
		if m, err = client.Allocate(ctx, m.SystemID); err != nil {
			return out, err
		}
		if err := c.Note(ctx, activities.SourceMAAS, "machine was Ready: allocated so that its release erases the disks"); err != nil {
			return out, err
		}
		if m, err = client.Release(ctx, m.SystemID, activities.ReleaseParams(mode, comment)); err != nil {
			return out, err
		}
		if err := c.recordRelease(ctx, mode, eventsAfter, "release sent"); err != nil {
			return out, err
		}
	case activities.Releasable[m.Status]:
		if sent && m.Status == maas.StatusFailedDiskErasing {
			// The erase this decommission asked for failed: that is the
			// fallback's decision, which CheckRelease reports.
			break
		}
		if m, err = client.Release(ctx, m.SystemID, activities.ReleaseParams(mode, comment)); err != nil {
			return out, err
		}
		if err := c.recordRelease(ctx, mode, eventsAfter, "release sent"); err != nil {
			return out, err
		}
	default:
		return out, &activities.MachineStateUnsafeError{SystemID: m.SystemID, Status: activities.MachineStatusName(m),
			Reason: "MAAS cannot release a machine from this status; an operator must bring it to a releasable one"}
	}
	out.StatusName = activities.MachineStatusName(m)
	return out, nil
}

// recordRelease records the erase asked, when, and the newest MAAS event
// before it (eventsAfter) on the decommission.
func (c *dcall) recordRelease(ctx context.Context, mode string, eventsAfter int64, why string) error {
	now := c.a.d.Clock.Now().UTC()
	if err := c.update(ctx, func(d *domain.Decommission) error {
		d.Erase.Mode = mode
		d.Erase.StartedAt = &now
		if eventsAfter > 0 { // a repeat of a sent release keeps the first mark
			d.Erase.EventsAfter = eventsAfter
		}
		d.Erase.Outcome = domain.ErasePending
		if mode == domain.EraseNone {
			d.Erase.Outcome = domain.EraseNotDone
			d.Erase.Detail = "policy erase_mode is none: the disks are not erased"
		}
		return nil
	}); err != nil {
		return err
	}
	return c.Note(ctx, activities.SourceMAAS, fmt.Sprintf("%s (erase %s)", why, mode))
}
