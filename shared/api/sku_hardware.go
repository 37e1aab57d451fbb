package api

import (
	"regexp"
	"slices"

	"github.com/maasflow/maasflow/shared/domain"
)

// The bounds of an SKU's hardware constraints: past them a value is a typo,
// not a server.
const (
	maxSKUMemoryMiB = 64 << 20 // 64 TiB
	maxSKUCores     = 4096
	maxSKUNICs      = 64
	maxSKUNICMbps   = 1_600_000
	maxSKUDisks     = 128
	maxSKUDiskBytes = 1 << 50 // 1 PiB
	maxSKUPCIIDs    = 16
)

var (
	// pciIDPattern is a PCI "vendor:product" id, four hex digits each,
	// lower case as MAAS reports them.
	pciIDPattern = regexp.MustCompile(`^[0-9a-f]{4}:[0-9a-f]{4}$`)
	// skuRegionPattern is a region name such as us-east-1 or fra-2.
	skuRegionPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)
)

// checkSKUHardware validates the hardware constraints of an SKU being
// written; every error names its field.
func checkSKUHardware(h domain.SKUHardware) error {
	if len(h.GPUPCIIDs) > maxSKUPCIIDs {
		return fieldError("gpu_pci_ids", "must list at most %d ids", maxSKUPCIIDs)
	}
	for i, id := range h.GPUPCIIDs {
		if !pciIDPattern.MatchString(id) {
			return fieldError("gpu_pci_ids", "entry %d must be a PCI id vendor:product in lower-case hex, such as 10de:2330", i)
		}
		if slices.Contains(h.GPUPCIIDs[:i], id) {
			return fieldError("gpu_pci_ids", "lists %s twice", id)
		}
	}
	bounds := []struct {
		field string
		v     int64
		max   int64
	}{
		{"min_memory_mib", int64(h.MinMemoryMiB), maxSKUMemoryMiB},
		{"min_cpu_cores", int64(h.MinCPUCores), maxSKUCores},
		{"nic_count", int64(h.NICCount), maxSKUNICs},
		{"min_nic_speed_mbps", int64(h.MinNICSpeedMbps), maxSKUNICMbps},
		{"disk_count", int64(h.DiskCount), maxSKUDisks},
		{"min_disk_bytes", h.MinDiskBytes, maxSKUDiskBytes},
	}
	for _, b := range bounds {
		if b.v < 0 || b.v > b.max {
			return fieldError(b.field, "must be between 0 (no constraint) and %d", b.max)
		}
	}
	// A speed or size alone would count nothing: Compare counts the NICs
	// (disks) that reach it against nic_count (disk_count).
	if h.MinNICSpeedMbps > 0 && h.NICCount == 0 {
		return fieldError("nic_count", "is required with min_nic_speed_mbps")
	}
	if h.MinDiskBytes > 0 && h.DiskCount == 0 {
		return fieldError("disk_count", "is required with min_disk_bytes")
	}
	if h.DiskBus != "" && !slices.Contains(domain.DiskBuses, h.DiskBus) {
		return fieldError("disk_bus", "must be nvme, sata or sas")
	}
	if h.DiskBus != "" && h.DiskCount == 0 {
		return fieldError("disk_count", "is required with disk_bus")
	}
	if h.Region != "" && !skuRegionPattern.MatchString(h.Region) {
		return fieldError("region", "must be 1-63 lower-case letters, digits and - starting with a letter or digit")
	}
	return nil
}

// checkSiteRegion validates a site's region ("" for none) as an SKU's.
func checkSiteRegion(region string) error {
	if region != "" && !skuRegionPattern.MatchString(region) {
		return fieldError("region", "must be a region name of lower-case letters, digits and hyphens, such as us-east-1")
	}
	return nil
}
