package onboarding

import (
	"context"

	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
)

// ConfigureStorageInput identifies the onboarding.
type ConfigureStorageInput struct {
	OnboardingRef
}

// ConfigureStorageOutput says which layout was applied, if any.
type ConfigureStorageOutput struct {
	Layout  string `json:"layout"`
	Applied bool   `json:"applied"`
}

// ConfigureStorage applies the policy's storage layout with
// set_storage_layout. MAAS allows it only in Ready (maas-behaviour §5), so an
// adopted Allocated machine keeps its layout (noted on the timeline), and
// an empty policy layout leaves MAAS's default. Re-applying the same layout
// is harmless, so a retry repeats it.
//
// Errors: MachineStateUnsafeError outside Ready/Allocated; MAAS errors.
func (a *Activities) ConfigureStorage(ctx context.Context, in ConfigureStorageInput) (out ConfigureStorageOutput, err error) {
	ctx, cancel := a.bound(ctx)
	defer cancel()
	c, err := a.beginIn(ctx, "ConfigureStorage", domain.StageStorage, in.OnboardingRef)
	defer c.Finish(ctx, &err)
	if err != nil {
		return out, err
	}
	pol, _, err := c.runPolicy(ctx)
	if err != nil {
		return out, err
	}
	client, m, err := c.maasMachine(ctx)
	if err != nil {
		return out, err
	}
	out.Layout = pol.StorageLayout
	switch {
	case pol.StorageLayout == "":
		return out, c.Exit(ctx, "no storage layout in policy: MAAS default kept")
	case m.Status == maas.StatusAllocated:
		return out, c.Exit(ctx, "machine is Allocated: MAAS changes the storage layout only in Ready; layout kept")
	case m.Status != maas.StatusReady:
		return out, &activities.MachineStateUnsafeError{SystemID: m.SystemID, Status: activities.MachineStatusName(m), Reason: "storage layout needs Ready"}
	}
	if err := client.SetStorageLayout(ctx, m.SystemID, maas.StorageLayoutParams{Layout: pol.StorageLayout}); err != nil {
		return out, err
	}
	out.Applied = true
	return out, c.Exit(ctx, "storage layout "+pol.StorageLayout+" applied")
}
