package onboarding

import (
	"context"
	"fmt"

	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
)

// Recovery actions.
const (
	RecoveryAborted  = "aborted"
	RecoveryReleased = "released"
	RecoveryNone     = "none"
)

// RecoverDeployInput identifies the onboarding.
type RecoverDeployInput struct {
	OnboardingRef
}

// RecoverDeployOutput says what was asked of MAAS; the state machine then
// polls (target deployable) until the machine is Ready or Allocated.
type RecoverDeployOutput struct {
	Action     string `json:"action"`
	StatusName string `json:"status_name"`
}

// RecoverDeploy brings a failed deploy back to a state MAAS deploys from
// (maas-behaviour §14.2): Deploying → abort (asynchronous, the machine becomes
// Allocated, maas-behaviour §14.5); Failed deployment → release without erase
// (the machine becomes Ready once powered off; abort is refused there). It
// acts on the current status, so a repeat after MAAS accepted the call
// (Allocated, Releasing, Disk erasing, Ready) asks nothing more.
//
// Errors: MachineStateUnsafeError from any other status; MAAS errors.
func (a *Activities) RecoverDeploy(ctx context.Context, in RecoverDeployInput) (out RecoverDeployOutput, err error) {
	ctx, cancel := a.bound(ctx)
	defer cancel()
	c, err := a.beginIn(ctx, "RecoverDeploy", domain.StageRecoverDeploy, in.OnboardingRef)
	defer c.Finish(ctx, &err)
	if err != nil {
		return out, err
	}
	client, m, err := c.maasMachine(ctx)
	if err != nil {
		return out, err
	}
	// Both the classified datasource retry and an operator's retry come
	// through here: the comment names neither reason.
	comment := fmt.Sprintf("maasflow onboarding %s: retrying deploy", c.Rec.ID)
	out.StatusName = activities.MachineStatusName(m)
	switch m.Status {
	case maas.StatusDeploying:
		if _, err := client.Abort(ctx, m.SystemID, comment); err != nil {
			return out, err
		}
		out.Action = RecoveryAborted
	case maas.StatusFailedDeployment:
		if _, err := client.Release(ctx, m.SystemID, maas.MachineReleaseParams{Comment: comment}); err != nil {
			return out, err
		}
		out.Action = RecoveryReleased
	case maas.StatusAllocated, maas.StatusReady, maas.StatusReleasing, maas.StatusDiskErasing:
		// Disk erasing: MAAS erases on every release when the region's
		// enable_disk_erasing_on_release is set (maas-behaviour §5).
		out.Action = RecoveryNone
	default:
		return out, &activities.MachineStateUnsafeError{SystemID: m.SystemID, Status: out.StatusName, Reason: "a deploy cannot be recovered from this state"}
	}
	return out, c.Note(ctx, "recover_deploy", fmt.Sprintf("machine %s was %s: %s", m.SystemID, out.StatusName, out.Action))
}
