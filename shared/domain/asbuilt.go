package domain

import (
	"fmt"
	"slices"
	"strings"
)

// HardwareCheck is one comparison of a machine as built with what it was
// designed to be; it returns the lines of the diff, nil when the machine
// conforms. Compare against an SKU is one; a hardware profile's check
// (device aliases, boot disk) is another of the same shape.
type HardwareCheck func(AsBuilt) []Mismatch

// SKUCheck is the check of a machine against its SKU (Compare).
func SKUCheck(sku SKU) HardwareCheck {
	return func(b AsBuilt) []Mismatch { return Compare(sku, b) }
}

// CheckHardware runs every check on b and joins their diffs in order.
func CheckHardware(b AsBuilt, checks ...HardwareCheck) []Mismatch {
	var out []Mismatch
	for _, check := range checks {
		out = append(out, check(b)...)
	}
	return out
}

// HardwareChanges describes how the machine now differs from what an
// earlier verification recorded: devices gone from or new at a PCI
// address, a NIC whose MAC changed, memory and cores. Empty when nothing
// changed. The order is fixed (GPUs, NICs, disks, memory, cores).
func HardwareChanges(before, now AsBuilt) []string {
	var out []string
	gpu := func(g BuiltGPU) (string, string) { return g.PCIAddress, g.ProductName }
	out = append(out, deviceChanges("GPU", before.GPUs, now.GPUs, gpu)...)
	nic := func(n BuiltNIC) (string, string) { return n.PCIAddress, n.MACAddress }
	out = append(out, deviceChanges("NIC", before.NICs, now.NICs, nic)...)
	disk := func(d BuiltDisk) (string, string) { return diskKey(d), d.Model + " " + d.Serial }
	out = append(out, deviceChanges("disk", before.Disks, now.Disks, disk)...)
	if before.MemoryMiB != now.MemoryMiB {
		out = append(out, fmt.Sprintf("memory %d MiB, was %d MiB", now.MemoryMiB, before.MemoryMiB))
	}
	if before.CPUCores != now.CPUCores {
		out = append(out, fmt.Sprintf("%d cores, were %d", now.CPUCores, before.CPUCores))
	}
	return out
}

// diskKey is what identifies a disk's place: an NVMe disk's PCI address;
// for a SATA or SAS disk, whose PCI address is its controller's and shared
// with the other disks on it, the controller's address and the disk's
// serial (its name if it has none); a disk MAAS knows no PCI device of,
// its name.
func diskKey(d BuiltDisk) string {
	switch {
	case d.PCIAddress == "":
		return d.Name
	case d.Bus == DiskBusSATA || d.Bus == DiskBusSAS:
		id := d.Serial
		if id == "" {
			id = d.Name
		}
		return d.PCIAddress + " " + id
	}
	return d.PCIAddress
}

// deviceChanges compares two lists of one kind of device by key (the PCI
// address); what identifies the device at that key (a product, a MAC) is
// compared too.
func deviceChanges[T any](kind string, before, now []T, id func(T) (key, what string)) []string {
	was := map[string]string{}
	for _, d := range before {
		k, w := id(d)
		was[k] = w
	}
	is := map[string]string{}
	var out []string
	for _, d := range now {
		k, w := id(d)
		is[k] = w
		old, ok := was[k]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s at %s is new (%s)", kind, k, strings.TrimSpace(w)))
		case old != w:
			out = append(out, fmt.Sprintf("%s at %s is %s, was %s", kind, k, strings.TrimSpace(w), strings.TrimSpace(old)))
		}
	}
	var gone []string
	for k := range was {
		if _, ok := is[k]; !ok {
			gone = append(gone, k)
		}
	}
	slices.Sort(gone)
	for _, k := range gone {
		out = append(out, fmt.Sprintf("%s at %s is gone (%s)", kind, k, strings.TrimSpace(was[k])))
	}
	return out
}
