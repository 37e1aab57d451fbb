package onboarding

import (
	"context"
	"fmt"
	"strings"

	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/design"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/events"
	"github.com/maasflow/maasflow/shared/maas"
	"github.com/maasflow/maasflow/shared/store"
)

// Timeline sources of the hardware verification.
const (
	// sourceHardware rows are the lines of a designed-vs-built diff.
	sourceHardware = "hardware"
	// sourceHardwareChange rows say how a machine differs from what its
	// node's last verification recorded.
	sourceHardwareChange = "hardware_change"
)

// VerifyHardwareInput identifies the onboarding.
type VerifyHardwareInput struct {
	OnboardingRef
}

// VerifyHardwareOutput is the machine as built and what changed since the
// node's last verification.
type VerifyHardwareOutput struct {
	GPUs    int      `json:"gpus"`
	NICs    int      `json:"nics"`
	Disks   int      `json:"disks"`
	Changes []string `json:"changes,omitempty"`
}

// HardwareMismatchError: what MAAS commissioned does not match what the
// machine was designed to be (its SKU). Nothing touched the machine's
// storage or deployed it; the diff is on the onboarding (hardware_diff).
type HardwareMismatchError struct {
	SystemID   string            `json:"system_id"`
	SKUID      string            `json:"sku_id"`
	Mismatches []domain.Mismatch `json:"mismatches"`
}

func (e *HardwareMismatchError) Error() string {
	parts := make([]string, len(e.Mismatches))
	for i, m := range e.Mismatches {
		parts[i] = fmt.Sprintf("%s wants %s, has %s", m.Field, m.Want, m.Got)
	}
	return fmt.Sprintf("machine %s does not match SKU %s: %s", e.SystemID, e.SKUID, strings.Join(parts, "; "))
}

// Class: an operator repairs the machine (then retry, which commissions it
// again) or binds it to the SKU it is.
func (*HardwareMismatchError) Class() domain.ErrorClass { return domain.ErrorNeedsOperator }

// VerifyHardware checks the machine MAAS commissioned against what it was
// designed to be, after commissioning reached Ready and before storage or
// deploy touch it. It reads the machine (memory, cores, interfaces) and
// its node devices (GPUs with PCI ids, NUMA node and address; NICs with
// their interface's name, MAC and link speed; disks with their block
// device): two MAAS reads. The site's record gives the region.
//
// A mismatch records the diff on the onboarding (hardware_diff) and its
// timeline, asks the next commissioning to commission the machine again
// (RecommissionReady: MAAS records hardware only when it commissions, so
// a retry after a repair must), and returns HardwareMismatchError. A pass
// keeps the as-built inventory on the node; when the node had one from an
// earlier onboarding, what changed is noted on the timeline (a change
// that still matches the SKU does not stop the run).
//
// Errors: HardwareMismatchError; RecordNotFoundError for the SKU; MAAS errors.
func (a *Activities) VerifyHardware(ctx context.Context, in VerifyHardwareInput) (out VerifyHardwareOutput, err error) {
	ctx, cancel := a.bound(ctx)
	defer cancel()
	c, err := a.beginIn(ctx, "VerifyHardware", domain.StageVerifyHardware, in.OnboardingRef)
	defer c.Finish(ctx, &err)
	if err != nil {
		return out, err
	}
	sku, err := c.runSKU(ctx)
	if err != nil {
		return out, err
	}
	region, err := c.siteRegion(ctx)
	if err != nil {
		return out, err
	}
	client, m, err := c.maasMachine(ctx)
	if err != nil {
		return out, err
	}
	reader, ok := client.(maas.NodeDeviceReader)
	if !ok {
		return out, &activities.ActivityFailedError{Activity: c.Activity, Message: "the site's MAAS client cannot read node devices"}
	}
	devices, err := reader.NodeDevices(ctx, m.SystemID)
	if err != nil {
		return out, err
	}
	built := asBuilt(m, devices, region)
	// The disks come from the block devices: node devices show every SATA
	// or SAS disk behind its one controller, and carry no bus or path.
	if bd, ok := client.(blockDeviceReader); ok {
		blocks, err := bd.BlockDevices(ctx, m.SystemID)
		if err != nil {
			return out, err
		}
		built.Disks = maas.BuiltDisks(blocks, devices)
	}
	out.GPUs, out.NICs, out.Disks = len(built.GPUs), len(built.NICs), len(built.Disks)

	checks, err := c.hardwareChecks(ctx, sku)
	if err != nil {
		return out, err
	}
	if diff := domain.CheckHardware(built, checks...); len(diff) > 0 {
		return out, c.recordMismatch(ctx, m.SystemID, sku.ID, diff)
	}
	if len(c.Rec.HardwareDiff) > 0 || c.Rec.RecommissionReady {
		if err := c.update(ctx, func(o *domain.Onboarding) error {
			o.HardwareDiff, o.RecommissionReady = nil, false
			return nil
		}); err != nil {
			return out, err
		}
	}
	if out.Changes, err = c.keepAsBuilt(ctx, built); err != nil {
		return out, err
	}
	return out, c.Exit(ctx, fmt.Sprintf("hardware matches SKU %s: %d GPUs, %d NICs, %d disks, %d MiB, %d cores",
		sku.ID, out.GPUs, out.NICs, out.Disks, built.MemoryMiB, built.CPUCores))
}

// blockDeviceReader lists a machine's block devices (*maas.Client).
type blockDeviceReader interface {
	BlockDevices(ctx context.Context, systemID string) ([]maas.BlockDevice, error)
}

// designReader reads a site's applied design (*store.Store).
type designReader interface {
	GetSiteDesign(ctx context.Context, siteID string) (store.SiteDesign, error)
}

// hardwareChecks are the comparisons a machine must pass: its SKU's, and,
// when the site's design has a node of this hostname, its hardware
// profile's (device aliases on NICs, a boot-disk selector matching one
// disk). A site without a design, or a host it does not name, is checked
// against its SKU only.
func (c *call) hardwareChecks(ctx context.Context, sku domain.SKU) ([]domain.HardwareCheck, error) {
	checks := []domain.HardwareCheck{domain.SKUCheck(sku)}
	e, found, err := c.nodeDesign(ctx)
	if err != nil {
		return nil, err
	}
	if found {
		checks = append(checks, design.HardwareCheck(e))
	}
	return checks, nil
}

// siteRegion is the region of the onboarding's site, from the run's site
// record when the execution carries it.
func (c *call) siteRegion(ctx context.Context) (string, error) {
	if r := c.runContext(); r != nil {
		return r.Site.Region, nil
	}
	site, err := c.a.d.Store.GetSite(ctx, c.Rec.SiteID)
	if err != nil {
		return "", activities.StoreError("read site", err)
	}
	return site.Region, nil
}

// recordMismatch writes the diff on the onboarding and, one diagnostic row
// per line, on its timeline in one write, and returns the error that stops
// the run.
func (c *call) recordMismatch(ctx context.Context, systemID, skuID string, diff []domain.Mismatch) error {
	for _, d := range diff {
		c.Later(domain.TimelineEntry{Kind: domain.TimelineDiagnostic, Source: sourceHardware,
			Detail: fmt.Sprintf("%s: designed %s, built %s", d.Field, d.Want, d.Got)})
	}
	if err := c.update(ctx, func(o *domain.Onboarding) error {
		o.HardwareDiff, o.RecommissionReady = diff, true
		return nil
	}); err != nil {
		return err
	}
	return &HardwareMismatchError{SystemID: systemID, SKUID: skuID, Mismatches: diff}
}

// keepAsBuilt stores the inventory on the node and returns how it differs
// from the one the node had, each difference also noted on the timeline.
func (c *call) keepAsBuilt(ctx context.Context, built domain.AsBuilt) ([]string, error) {
	if c.Rec.NodeID == "" {
		return nil, &activities.ActivityFailedError{Activity: c.Activity, Message: "the onboarding has no node record"}
	}
	now := c.a.d.Clock.Now().UTC()
	var changes []string
	if _, err := c.a.d.Store.UpdateNode(ctx, c.Rec.NodeID, func(n *domain.Node) error {
		changes = nil
		if n.AsBuilt != nil {
			changes = domain.HardwareChanges(*n.AsBuilt, built)
		}
		n.AsBuilt, n.AsBuiltAt = &built, &now
		return nil
	}); err != nil {
		return nil, activities.StoreError("keep as-built hardware on node", err)
	}
	for _, ch := range changes {
		c.Later(domain.TimelineEntry{Kind: domain.TimelineNote, Source: sourceHardwareChange, Detail: "since the last onboarding: " + ch})
	}
	return changes, nil
}

// asBuilt reads the machine's inventory from the machine (memory, cores,
// its interfaces) and its node devices. A NIC's interface and a disk's
// block device come nested in the device; a NIC device that names only its
// interface id takes the name and MAC from the machine's interfaces.
func asBuilt(m maas.Machine, devices []maas.NodeDevice, region string) domain.AsBuilt {
	b := domain.AsBuilt{Region: region, MemoryMiB: m.Memory, CPUCores: m.CPUCount,
		GPUs: []domain.BuiltGPU{}, NICs: []domain.BuiltNIC{}, Disks: []domain.BuiltDisk{}}
	ifaces := make(map[int]maas.Interface, len(m.Interfaces))
	for _, i := range m.Interfaces {
		ifaces[i.ID] = i
	}
	for _, d := range devices {
		switch {
		case d.HardwareType == maas.HardwareGPU:
			b.GPUs = append(b.GPUs, domain.BuiltGPU{PCIAddress: d.PCIAddress, NUMANode: d.NUMANode,
				VendorID: d.VendorID, ProductID: d.ProductID, ProductName: d.ProductName, VendorName: d.VendorName})
		case d.Interface != nil:
			nic := domain.BuiltNIC{PCIAddress: d.PCIAddress, Name: d.Interface.Name,
				MACAddress: strings.ToLower(d.Interface.MACAddress), LinkSpeedMbps: d.Interface.LinkSpeed}
			if i, ok := ifaces[d.Interface.ID]; ok && nic.Name == "" {
				nic.Name, nic.MACAddress = i.Name, strings.ToLower(i.MACAddress)
			}
			b.NICs = append(b.NICs, nic)
		case d.BlockDevice != nil:
			bd := d.BlockDevice
			b.Disks = append(b.Disks, domain.BuiltDisk{PCIAddress: d.PCIAddress, Name: bd.Name,
				Model: bd.Model, Serial: bd.Serial, SizeBytes: bd.SizeBytes})
		}
	}
	return b
}

// hardwareDiffDetail is diff as an event carries it; nil when empty.
func hardwareDiffDetail(diff []domain.Mismatch) []events.HardwareMismatch {
	if len(diff) == 0 {
		return nil
	}
	out := make([]events.HardwareMismatch, len(diff))
	for i, d := range diff {
		out[i] = events.HardwareMismatch{Field: d.Field, Want: d.Want, Got: d.Got}
	}
	return out
}

// withSKU adds the onboarding's SKU to the run context.
func (r *RunContext) withSKU(sku domain.SKU) *RunContext {
	r.SKU = &sku
	return r
}

// runSKU is the onboarding's SKU: the run's, or read now when the
// execution carries none.
func (c *call) runSKU(ctx context.Context) (domain.SKU, error) {
	if r := c.runContext(); r != nil && r.SKU != nil && r.SKU.ID == c.Rec.SKUID {
		return *r.SKU, nil
	}
	sku, err := c.a.d.Store.GetSKU(ctx, c.Rec.SKUID)
	if err != nil {
		return domain.SKU{}, activities.StoreError("read SKU "+c.Rec.SKUID, err)
	}
	return sku, nil
}
