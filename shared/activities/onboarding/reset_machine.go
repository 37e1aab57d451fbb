package onboarding

import (
	"context"
	"errors"
	"fmt"

	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
)

// sourceReset marks the timeline note of restart-clean's release, so a
// repeat of ResetMachine in the same attempt sends nothing again. (The
// operation's own note, written by the API, has source restart-clean.)
const sourceReset = "reset"

// Reset actions: what ResetMachine asked of MAAS. released and in_flight
// are followed by a wait for Ready; the others go straight on.
const (
	ResetReleased  = "released"
	ResetInFlight  = "in_flight"
	ResetNothing   = "nothing_to_release"
	ResetNoMachine = "no_machine"
)

// ResetMachineInput identifies the onboarding.
type ResetMachineInput struct {
	OnboardingRef
}

// ResetMachineOutput says what was asked of MAAS and the machine's status
// after it; the state machine waits for Ready after released or in_flight.
type ResetMachineOutput struct {
	Action     string `json:"action"`
	StatusName string `json:"status_name"`
	EraseMode  string `json:"erase_mode"`
}

// ResetMachine is restart-clean's release: the machine of the onboarding is
// handed back to MAAS with the erase the policy asks for (erase_mode, the
// one a decommission uses: the disks of a server that failed onboarding
// may hold anything an operator or an earlier tenant left), so the new
// attempt commissions it afresh. It acts on what MAAS reports now:
//   - no machine recorded, or gone from MAAS: nothing to release;
//     discovery finds or creates it again.
//   - New, Failed commissioning, Failed testing: never deployed, nothing
//     to release; commissioning starts over from there.
//   - Releasing or Disk erasing: a release is in flight; nothing is sent.
//   - Ready: released already (by this attempt, or erase_mode none);
//     otherwise allocated and released again, because MAAS erases disks
//     only on a release (maas-behaviour §5).
//   - any status MAAS releases from: release with the erase flags.
//
// A repeat after the release went out sends nothing again (the timeline
// holds this attempt's release).
//
// Errors: MachineStateUnsafeError (Commissioning, Testing, Deploying… —
// MAAS is busy, or a status it cannot release from); MAAS errors; store
// errors.
func (a *Activities) ResetMachine(ctx context.Context, in ResetMachineInput) (out ResetMachineOutput, err error) {
	ctx, cancel := a.bound(ctx)
	defer cancel()
	c, err := a.beginIn(ctx, "ResetMachine", domain.StageReset, in.OnboardingRef)
	defer c.Finish(ctx, &err)
	if err != nil {
		return out, err
	}
	pol, _, _, err := c.policy(ctx)
	if err != nil {
		return out, err
	}
	out.EraseMode = pol.EraseMode
	if c.Rec.MAASSystemID == "" {
		out.Action = ResetNoMachine
		return out, c.Exit(ctx, "no MAAS machine recorded: discovery starts afresh")
	}
	client, m, err := c.maasMachine(ctx)
	var nf *maas.MAASNotFoundError
	if errors.As(err, &nf) {
		gone := c.Rec.MAASSystemID
		if err := c.update(ctx, func(o *domain.Onboarding) error {
			o.MAASSystemID = ""
			return nil
		}); err != nil {
			return out, err
		}
		out.Action = ResetNoMachine
		return out, c.Exit(ctx, "machine "+gone+" is gone from MAAS: discovery starts afresh")
	}
	if err != nil {
		return out, err
	}
	sent, err := c.releaseSent(ctx)
	if err != nil {
		return out, err
	}
	comment := fmt.Sprintf("maasflow onboarding %s: restart-clean (attempt %d)", c.Rec.ID, c.ref.Attempt)
	out.StatusName = activities.MachineStatusName(m)
	switch {
	case m.Status == maas.StatusNew || m.Status == maas.StatusFailedCommissioning || m.Status == maas.StatusFailedTesting:
		out.Action = ResetNothing
		return out, c.Exit(ctx, "machine is "+out.StatusName+": never deployed, nothing to release")
	case m.Status == maas.StatusReleasing || m.Status == maas.StatusDiskErasing:
		out.Action = ResetInFlight
		return out, c.Exit(ctx, "a release is in flight ("+out.StatusName+")")
	case m.Status == maas.StatusReady && (sent || pol.EraseMode == domain.EraseNone):
		out.Action = ResetNothing
		return out, c.Exit(ctx, fmt.Sprintf("machine is Ready (erase %s): nothing to release", pol.EraseMode))
	case m.Status == maas.StatusReady:
		// MAAS erases disks only as part of a release (maas-behaviour §5).
		if _, err = client.Allocate(ctx, m.SystemID); err != nil {
			return out, err
		}
		if err := c.Note(ctx, activities.SourceMAAS, "machine was Ready: allocated so that its release erases the disks"); err != nil {
			return out, err
		}
	case activities.Releasable[m.Status]:
	default:
		return out, &activities.MachineStateUnsafeError{SystemID: m.SystemID, Status: out.StatusName,
			Reason: "restart-clean cannot release a machine from this status; wait until MAAS settles or bring it to a releasable one"}
	}
	if err := c.Note(ctx, sourceReset, fmt.Sprintf("release of %s requested (erase %s)", m.SystemID, pol.EraseMode)); err != nil {
		return out, err
	}
	if m, err = client.Release(ctx, m.SystemID, activities.ReleaseParams(pol.EraseMode, comment)); err != nil {
		return out, err
	}
	out.Action, out.StatusName = ResetReleased, activities.MachineStatusName(m)
	return out, c.Exit(ctx, fmt.Sprintf("release sent (erase %s): machine is %s", pol.EraseMode, out.StatusName))
}

// releaseSent reports whether this attempt already asked MAAS for the
// release (its note is on the timeline).
func (c *call) releaseSent(ctx context.Context) (bool, error) {
	rows, err := c.a.d.Store.ListOnboardingEvents(ctx, c.Rec.ID)
	if err != nil {
		return false, activities.StoreError("read timeline", err)
	}
	for _, r := range rows {
		if r.Kind == domain.TimelineNote && r.Source == sourceReset && r.Attempt == c.ref.Attempt {
			return true, nil
		}
	}
	return false, nil
}
