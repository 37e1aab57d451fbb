package design

import (
	"fmt"
	"strings"

	"github.com/maasflow/maasflow/shared/domain"
)

// HardwareCheck is the check of a machine as built against its effective
// hardware profile, in the rows of the designed-vs-built diff an SKU's
// check writes: every device alias must name a NIC's PCI address, and the
// boot-disk selector must match exactly one disk (as SelectBootDisk, which
// later picks the disk set_boot_disk is given, so the check and the choice
// never disagree). Pure: no I/O. A node without a hardware profile passes.
func HardwareCheck(e Effective) domain.HardwareCheck {
	return func(b domain.AsBuilt) []domain.Mismatch {
		var out []domain.Mismatch
		nics := map[string]bool{}
		for _, n := range b.NICs {
			nics[n.PCIAddress] = true
		}
		for _, a := range e.DeviceAliases {
			if nics[a.PCIAddress] {
				continue
			}
			out = append(out, domain.Mismatch{
				Field: "device_aliases." + a.Alias,
				Want:  "NIC at " + a.PCIAddress,
				Got:   deviceAt(b, a.PCIAddress),
			})
		}
		if e.BootDisk == nil {
			return out
		}
		disks := make([]Disk, len(b.Disks))
		for k, d := range b.Disks {
			disks[k] = Disk{Model: d.Model, Serial: d.Serial, SizeBytes: d.SizeBytes, Path: d.Path}
		}
		if _, _, err := SelectBootDisk(e, disks); err != nil {
			out = append(out, domain.Mismatch{Field: "boot_disk", Want: "one disk with " + describeSelector(*e.BootDisk), Got: matchingDisks(*e.BootDisk, b.Disks)})
		}
		return out
	}
}

// deviceAt says what is at a PCI address instead of a NIC.
func deviceAt(b domain.AsBuilt, addr string) string {
	for _, g := range b.GPUs {
		if g.PCIAddress == addr {
			return "a GPU (" + g.ProductName + ")"
		}
	}
	for _, d := range b.Disks {
		if d.PCIAddress == addr {
			return "a disk (" + d.Name + ")"
		}
	}
	return "no device"
}

// describeSelector writes the selector's fields that are set.
func describeSelector(sel BootDisk) string {
	var parts []string
	if sel.Model != "" {
		parts = append(parts, "model "+sel.Model)
	}
	if sel.Serial != "" {
		parts = append(parts, "serial "+sel.Serial)
	}
	if sel.Path != "" {
		parts = append(parts, "path "+sel.Path)
	}
	if sel.SizeGB > 0 {
		parts = append(parts, fmt.Sprintf("size >= %d GB", sel.SizeGB))
	}
	if len(parts) == 0 {
		return "any disk"
	}
	return strings.Join(parts, ", ")
}

// matchingDisks is "no disk of 3" or "2 disks: sda, sdb".
func matchingDisks(sel BootDisk, disks []domain.BuiltDisk) string {
	var names []string
	for _, d := range disks {
		if diskMatches(sel, Disk{Model: d.Model, Serial: d.Serial, SizeBytes: d.SizeBytes, Path: d.Path}) {
			names = append(names, d.Name)
		}
	}
	if len(names) == 0 {
		return fmt.Sprintf("no disk of %d", len(disks))
	}
	return fmt.Sprintf("%d disks: %s", len(names), strings.Join(names, ", "))
}
