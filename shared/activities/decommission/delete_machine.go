package decommission

import (
	"context"
	"errors"

	"github.com/maasflow/maasflow/shared/activities"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
)

// DeleteMachineInput asks for the machine's deletion (full decommission).
type DeleteMachineInput struct {
	DecommissionRef
}

// DeleteMachineOutput says whether the machine is gone from MAAS.
type DeleteMachineOutput struct {
	Deleted bool `json:"deleted"`
}

// DeleteMachine deletes the released machine from MAAS when the policy's
// delete_on_full says so, and otherwise leaves it Ready (noted on the
// timeline). MAAS deletes from any status (maas-behaviour §5), so the
// machine's status is checked first: only a Ready (or New) machine, one the
// release finished with, is deleted. A machine already gone counts as
// deleted, so a repeat is harmless.
//
// Errors: activities.MachineStateUnsafeError (not released), MAAS errors, store errors.
func (a *Activities) DeleteMachine(ctx context.Context, in DeleteMachineInput) (out DeleteMachineOutput, err error) {
	c, err := a.beginDecom(ctx, "DeleteMachine", domain.DecomStageDelete, in.DecommissionRef)
	defer c.Finish(ctx, &err)
	if err != nil {
		return out, err
	}
	if err := c.enter(ctx); err != nil {
		return out, err
	}
	if c.Rec.MachineDeleted {
		return DeleteMachineOutput{Deleted: true}, nil
	}
	pol, err := c.policy(ctx)
	if err != nil {
		return out, err
	}
	if !pol.DeleteOnFull {
		return out, c.Exit(ctx, "policy delete_on_full is off: the machine stays Ready in MAAS")
	}
	client, m, err := c.machine(ctx)
	var nf *maas.MAASNotFoundError
	switch {
	case errors.As(err, &nf):
		// Already gone (a retry after the delete, or an operator).
	case err != nil:
		return out, err
	case m.Status != maas.StatusReady && m.Status != maas.StatusNew:
		return out, &activities.MachineStateUnsafeError{SystemID: m.SystemID, Status: activities.MachineStatusName(m), Reason: "only a released machine is deleted"}
	default:
		if err := client.Delete(ctx, m.SystemID); err != nil && !errors.As(err, &nf) {
			return out, err
		}
	}
	if err := c.update(ctx, func(d *domain.Decommission) error {
		d.MachineDeleted = true
		return nil
	}); err != nil {
		return out, err
	}
	return DeleteMachineOutput{Deleted: true}, c.Exit(ctx, "machine "+c.Rec.MAASSystemID+" deleted from MAAS")
}
