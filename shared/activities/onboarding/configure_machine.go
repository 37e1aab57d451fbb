package onboarding

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/design"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
	"github.com/maasflow/maasflow/shared/store"
)

// sourceDesign rows say what the machine configuration set in MAAS from
// the site's design, one row per group of changes.
const sourceDesign = "design"

// ConfigureMachineInput identifies the onboarding.
type ConfigureMachineInput struct {
	OnboardingRef
}

// ConfigureMachineOutput says what the machine configuration did: nothing
// when the site's design does not name the host.
type ConfigureMachineOutput struct {
	Designed bool `json:"designed"`
	// BootDisk is the block device the design's selector chose ("" when
	// the design names none); BootDiskSet is true when MAAS was told.
	BootDisk    string `json:"boot_disk,omitempty"`
	BootDiskSet bool   `json:"boot_disk_set,omitempty"`
	// InterfaceOps is how many interface operations the design lists,
	// InterfaceChanges how many of them created an interface, linked a
	// subnet or set DNS servers in MAAS (MTUs, which MAAS sets again to
	// the same value, are not counted).
	InterfaceOps     int `json:"interface_ops,omitempty"`
	InterfaceChanges int `json:"interface_changes,omitempty"`
}

// MachineDesignError: the machine as MAAS reports it cannot take its
// node's design: a device alias whose PCI address is not on it, or a
// boot-disk selector that matches no disk or several. The design or the
// machine must change before a retry.
type MachineDesignError struct {
	SystemID string `json:"system_id"`
	Hostname string `json:"hostname"`
	Reason   string `json:"reason"`
}

func (e *MachineDesignError) Error() string {
	return fmt.Sprintf("machine %s (%s) cannot take its design: %s", e.SystemID, e.Hostname, e.Reason)
}

// Class: an operator fixes the design or the machine.
func (*MachineDesignError) Class() domain.ErrorClass { return domain.ErrorNeedsOperator }

// machineConfigurer is what the machine configuration calls on MAAS beyond
// the onboarding's contract (*maas.Client).
type machineConfigurer interface {
	maas.NodeDeviceReader
	blockDeviceReader
	SetBootDisk(ctx context.Context, systemID string, blockDeviceID int) error
	ApplyInterfaceOps(ctx context.Context, systemID string, ops []design.InterfaceOp) (int, error)
}

// ConfigureMachine sets in MAAS what the site's applied design says of
// this host while the machine is Ready (MAAS takes set_boot_disk only
// then): the boot disk the design's selector picks, when MAAS boots from
// another, and the interfaces (MTU, bonds, VLAN interfaces, subnet links
// with the designed addresses, subnet DNS servers) by
// maas.Client.ApplyInterfaceOps, which performs only what MAAS does not
// already show, so a retry repeats nothing. Then the network driver
// configures what lies outside the machine. A site without a design, or a
// host its design does not name, passes with a timeline note and no MAAS
// call.
//
// MAAS calls with a design: the machine, its node devices and its block
// devices (three reads), set_boot_disk when needed, and the interface
// reads and operations ApplyInterfaceOps makes.
//
// Errors: MachineDesignError (a device alias not on the machine, a
// boot-disk selector matching no disk or several), maas.InterfaceOpError,
// NetworkDriverError (the driver failed), MachineStateUnsafeError outside
// Ready; MAAS errors.
func (a *Activities) ConfigureMachine(ctx context.Context, in ConfigureMachineInput) (out ConfigureMachineOutput, err error) {
	ctx, cancel := a.bound(ctx)
	defer cancel()
	c, err := a.beginIn(ctx, "ConfigureMachine", domain.StageConfigureMachine, in.OnboardingRef)
	defer c.Finish(ctx, &err)
	if err != nil {
		return out, err
	}
	e, found, err := c.nodeDesign(ctx)
	if err != nil {
		return out, err
	}
	if !found {
		return out, c.Exit(ctx, "no site design names this host: machine configuration left as MAAS has it")
	}
	out.Designed = true
	client, m, err := c.maasMachine(ctx)
	if err != nil {
		return out, err
	}
	if m.Status != maas.StatusReady {
		return out, &activities.MachineStateUnsafeError{SystemID: m.SystemID, Status: activities.MachineStatusName(m), Reason: "the design's boot disk and interfaces are set in Ready"}
	}
	mc, ok := client.(machineConfigurer)
	if !ok {
		return out, &activities.ActivityFailedError{Activity: c.Activity, Message: "the site's MAAS client cannot configure interfaces and disks"}
	}
	if err := c.setBootDisk(ctx, mc, m, e, &out); err != nil {
		return out, err
	}
	if err := c.applyInterfaces(ctx, mc, m, e, &out); err != nil {
		return out, err
	}
	if err := a.d.NetworkDriver.Configure(ctx, e); err != nil {
		return out, &NetworkDriverError{SystemID: m.SystemID, Hostname: c.Rec.Hostname, Reason: err.Error()}
	}
	return out, c.Exit(ctx, fmt.Sprintf("machine configured from the design: boot disk %s, %d interface operations, %d changed",
		nonEmptyLabel(out.BootDisk, "not designed"), out.InterfaceOps, out.InterfaceChanges))
}

// nodeDesign is the host's effective design in its site's applied design;
// found is false for a site without one or a host it does not name.
func (c *call) nodeDesign(ctx context.Context) (design.Effective, bool, error) {
	dr, ok := c.a.d.Store.(designReader)
	if !ok {
		return design.Effective{}, false, nil
	}
	sd, err := dr.GetSiteDesign(ctx, c.Rec.SiteID)
	var nf *store.ItemNotFoundError
	if errors.As(err, &nf) {
		return design.Effective{}, false, nil
	}
	if err != nil {
		return design.Effective{}, false, activities.StoreError("read site design", err)
	}
	e, err := design.EffectiveNode(sd.Design, c.Rec.Hostname)
	var notIn *design.NodeNotInDesignError
	if errors.As(err, &notIn) {
		return design.Effective{}, false, nil
	}
	if err != nil {
		// An applied design was validated whole; a node that does not
		// resolve is a defect of the stored design, not of the machine.
		return design.Effective{}, false, &activities.ActivityFailedError{Activity: c.Activity, Message: "site design: " + err.Error()}
	}
	return e, true, nil
}

// setBootDisk tells MAAS the disk the design's selector picks, unless it
// already boots from it.
func (c *call) setBootDisk(ctx context.Context, mc machineConfigurer, m maas.Machine, e design.Effective, out *ConfigureMachineOutput) error {
	if e.BootDisk == nil {
		return nil
	}
	blocks, err := mc.BlockDevices(ctx, m.SystemID)
	if err != nil {
		return err
	}
	var disks []design.Disk
	names := map[int]string{}
	for _, b := range blocks {
		if b.Type != "" && b.Type != "physical" {
			continue // MAAS boots only from a physical disk
		}
		names[b.ID] = b.Name
		disks = append(disks, design.Disk{ID: b.ID, Model: b.Model, Serial: b.Serial, SizeBytes: b.SizeBytes, Path: b.Path})
	}
	d, _, err := design.SelectBootDisk(e, disks)
	var bde *design.BootDiskError
	if errors.As(err, &bde) {
		return &MachineDesignError{SystemID: m.SystemID, Hostname: e.Hostname,
			Reason: fmt.Sprintf("boot disk (%s): %s", bootDiskSelector(*e.BootDisk), matchedDisks(*e.BootDisk, *bde, disks, names))}
	}
	if err != nil {
		return err
	}
	out.BootDisk = names[d.ID]
	if m.BootDiskID == d.ID {
		return nil
	}
	if err := mc.SetBootDisk(ctx, m.SystemID, d.ID); err != nil {
		return err
	}
	out.BootDiskSet = true
	c.Later(domain.TimelineEntry{Kind: domain.TimelineNote, Source: sourceDesign,
		Detail: fmt.Sprintf("boot disk set to %s (%s)", out.BootDisk, bootDiskSelector(*e.BootDisk))})
	return nil
}

// applyInterfaces performs the design's interface operations that MAAS
// does not already show.
func (c *call) applyInterfaces(ctx context.Context, mc machineConfigurer, m maas.Machine, e design.Effective, out *ConfigureMachineOutput) error {
	if len(e.Interfaces) == 0 {
		return nil
	}
	devices, err := mc.NodeDevices(ctx, m.SystemID)
	if err != nil {
		return err
	}
	ops, err := design.NetworkOps(e, maas.DesignNICs(devices, m.Interfaces))
	var md *design.MissingDeviceError
	if errors.As(err, &md) {
		return &MachineDesignError{SystemID: m.SystemID, Hostname: e.Hostname,
			Reason: fmt.Sprintf("device alias %s (%s) is not on the machine", md.Alias, md.PCIAddress)}
	}
	if err != nil {
		return err
	}
	out.InterfaceOps = len(ops)
	changed, err := mc.ApplyInterfaceOps(ctx, m.SystemID, ops)
	if err != nil {
		return err
	}
	// ApplyInterfaceOps counts every MTU it sets; the rest changed MAAS.
	mtus := 0
	for _, op := range ops {
		if op.Op == design.OpSetMTU {
			mtus++
		}
	}
	out.InterfaceChanges = max(changed-mtus, 0)
	c.Later(domain.TimelineEntry{Kind: domain.TimelineNote, Source: sourceDesign,
		Detail: fmt.Sprintf("interfaces: %d design operations (%s), %d created or linked in MAAS, the rest already there",
			len(ops), opSummary(ops), out.InterfaceChanges)})
	return nil
}

// opSummary counts the operations by kind, in the order they first
// appear: "set_mtu×2, create_bond×1, …".
func opSummary(ops []design.InterfaceOp) string {
	var order []string
	count := map[string]int{}
	for _, op := range ops {
		if count[op.Op] == 0 {
			order = append(order, op.Op)
		}
		count[op.Op]++
	}
	parts := make([]string, len(order))
	for i, k := range order {
		parts[i] = fmt.Sprintf("%s×%d", k, count[k])
	}
	return strings.Join(parts, ", ")
}

// bootDiskSelector says what a boot-disk selector asks for.
func bootDiskSelector(sel design.BootDisk) string {
	var parts []string
	for _, f := range []struct{ k, v string }{{"model", sel.Model}, {"serial", sel.Serial}, {"path", sel.Path}} {
		if f.v != "" {
			parts = append(parts, f.k+" "+f.v)
		}
	}
	if sel.SizeGB > 0 {
		parts = append(parts, fmt.Sprintf("at least %d GB", sel.SizeGB))
	}
	if len(parts) == 0 {
		return "any disk"
	}
	return strings.Join(parts, ", ")
}

// matchedDisks says how the selector failed, naming the disks.
func matchedDisks(sel design.BootDisk, e design.BootDiskError, disks []design.Disk, names map[int]string) string {
	if e.Matches == 0 {
		all := make([]string, len(disks))
		for i, d := range disks {
			all[i] = names[d.ID]
		}
		return fmt.Sprintf("no disk matches (disks: %s)", nonEmptyLabel(strings.Join(all, ", "), "none"))
	}
	var match []string
	for _, d := range disks {
		if _, _, err := design.SelectBootDisk(design.Effective{BootDisk: &sel}, []design.Disk{d}); err == nil {
			match = append(match, names[d.ID])
		}
	}
	return fmt.Sprintf("%d disks match (%s); the selector must pick one", e.Matches, strings.Join(match, ", "))
}

func nonEmptyLabel(s, empty string) string {
	if s == "" {
		return empty
	}
	return s
}
