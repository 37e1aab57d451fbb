package domain

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// SKUHardware is what an SKU says a machine is built of, beyond its GPU
// model and count. Zero values constrain nothing.
type SKUHardware struct {
	// GPUPCIIDs, when set, is the exact list of accepted GPU PCI ids
	// ("vendor:product", lower-case hex, e.g. "10de:2330"); it replaces the
	// gpu_model name match.
	GPUPCIIDs []string `json:"gpu_pci_ids,omitempty" dynamodbav:"gpu_pci_ids,omitempty"`
	// MinMemoryMiB and MinCPUCores are lower bounds on MAAS's memory (MiB)
	// and cpu_count.
	MinMemoryMiB int `json:"min_memory_mib,omitempty" dynamodbav:"min_memory_mib,omitempty"`
	MinCPUCores  int `json:"min_cpu_cores,omitempty" dynamodbav:"min_cpu_cores,omitempty"`
	// NICCount is how many NICs at least MinNICSpeedMbps the machine needs
	// (slower NICs, e.g. a 1 GbE management port, are not counted).
	NICCount        int `json:"nic_count,omitempty" dynamodbav:"nic_count,omitempty"`
	MinNICSpeedMbps int `json:"min_nic_speed_mbps,omitempty" dynamodbav:"min_nic_speed_mbps,omitempty"`
	// DiskCount is how many disks of at least MinDiskBytes it needs; with
	// DiskBus only disks on that bus count (an SKU sold with NVMe is not
	// met by SATA disks of the same size).
	DiskCount    int     `json:"disk_count,omitempty" dynamodbav:"disk_count,omitempty"`
	MinDiskBytes int64   `json:"min_disk_bytes,omitempty" dynamodbav:"min_disk_bytes,omitempty"`
	DiskBus      DiskBus `json:"disk_bus,omitempty" dynamodbav:"disk_bus,omitempty"`
	// Region is the region the machine's site must be in.
	Region string `json:"region,omitempty" dynamodbav:"region,omitempty"`
}

// AsBuilt is what MAAS's commissioning found on a machine.
type AsBuilt struct {
	Region    string      `json:"region" dynamodbav:"region"`
	MemoryMiB int         `json:"memory_mib" dynamodbav:"memory_mib"`
	CPUCores  int         `json:"cpu_cores" dynamodbav:"cpu_cores"`
	GPUs      []BuiltGPU  `json:"gpus" dynamodbav:"gpus"`
	NICs      []BuiltNIC  `json:"nics" dynamodbav:"nics"`
	Disks     []BuiltDisk `json:"disks" dynamodbav:"disks"`
}

// BuiltGPU is one GPU as MAAS reports it.
type BuiltGPU struct {
	PCIAddress  string `json:"pci_address" dynamodbav:"pci_address"`
	NUMANode    int    `json:"numa_node" dynamodbav:"numa_node"`
	VendorID    string `json:"vendor_id" dynamodbav:"vendor_id"`
	ProductID   string `json:"product_id" dynamodbav:"product_id"`
	ProductName string `json:"product_name" dynamodbav:"product_name"`
	// VendorName is the PCI id database's vendor ("NVIDIA Corporation").
	VendorName string `json:"vendor_name,omitempty" dynamodbav:"vendor_name,omitempty"`
}

// BuiltNIC is one NIC: its PCI address, interface name, MAC and speed.
type BuiltNIC struct {
	PCIAddress    string `json:"pci_address" dynamodbav:"pci_address"`
	Name          string `json:"name" dynamodbav:"name"`
	MACAddress    string `json:"mac_address" dynamodbav:"mac_address"`
	LinkSpeedMbps int    `json:"link_speed_mbps" dynamodbav:"link_speed_mbps"`
}

// DiskBus is how a disk is attached: NVMe is a PCIe device of its own;
// SATA and SAS disks sit behind a controller (an AHCI controller, a SAS
// HBA) that is the PCIe device, shared by every disk on it.
type DiskBus string

// The disk buses a constraint may name.
const (
	DiskBusNVMe DiskBus = "nvme"
	DiskBusSATA DiskBus = "sata"
	DiskBusSAS  DiskBus = "sas"
)

// DiskBuses are the buses, in the order errors list them.
var DiskBuses = []DiskBus{DiskBusNVMe, DiskBusSATA, DiskBusSAS}

// BuiltDisk is one physical disk. PCIAddress is the PCIe device it is
// (NVMe) or sits behind (the controller of a SATA or SAS disk, which
// several disks share).
type BuiltDisk struct {
	PCIAddress string `json:"pci_address,omitempty" dynamodbav:"pci_address,omitempty"`
	// Bus is the disk's bus; empty when MAAS said nothing that tells.
	Bus       DiskBus `json:"bus,omitempty" dynamodbav:"bus,omitempty"`
	Name      string  `json:"name" dynamodbav:"name"`
	Model     string  `json:"model" dynamodbav:"model"`
	Serial    string  `json:"serial" dynamodbav:"serial"`
	SizeBytes int64   `json:"size_bytes" dynamodbav:"size_bytes"`
	// Path is MAAS's path of the block device (/dev/disk/by-dname/…),
	// which a hardware profile's boot-disk selector may name.
	Path string `json:"path,omitempty" dynamodbav:"path,omitempty"`
}

// Mismatch is one line of a designed-vs-built diff: the SKU field, what it
// asks for and what the machine has.
type Mismatch struct {
	Field string `json:"field" dynamodbav:"field"`
	Want  string `json:"want" dynamodbav:"want"`
	Got   string `json:"got" dynamodbav:"got"`
}

// GPUModelMatches reports whether the GPU MAAS names productName (the PCI ID
// database's name, e.g. "GH100 [H100 SXM5 80GB]") is of model want
// (e.g. "H100", "H100 SXM5", "H100 SXM5 80GB").
//
// The bracketed part of a product name is the model; what precedes it is
// the chip, which several models share (GH100 is H100 SXM5, H100 PCIe and
// H100 NVL), so only the bracketed part is matched when there is one. Each
// word of want must be a whole word of the model, in any order and case:
// "H100" matches every H100, "H100 SXM5" only the SXM5 boards, and "H100"
// never matches "H100L" or the chip name "GH100". A size written "80 GB"
// equals "80GB".
func GPUModelMatches(want, productName string) bool {
	model := productName
	if i := strings.IndexByte(productName, '['); i >= 0 {
		if j := strings.LastIndexByte(productName, ']'); j > i {
			model = productName[i+1 : j]
		}
	}
	wantWords, modelWords := modelWords(want), modelWords(model)
	if len(wantWords) == 0 {
		return false
	}
	for _, w := range wantWords {
		if !slices.Contains(modelWords, w) {
			return false
		}
	}
	return true
}

// modelWords splits a model name into lower-case alphanumeric words,
// joining a number with the unit word after it ("80 GB" → "80gb").
func modelWords(s string) []string {
	raw := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return (r < 'a' || r > 'z') && (r < '0' || r > '9')
	})
	var out []string
	for _, w := range raw {
		if n := len(out); n > 0 && (w == "gb" || w == "tb") && isDigits(out[n-1]) {
			out[n-1] += w
			continue
		}
		out = append(out, w)
	}
	return out
}

func isDigits(s string) bool {
	_, err := strconv.ParseUint(s, 10, 64)
	return err == nil
}

// gpuMatches reports whether g is the SKU's GPU: by PCI id when the SKU
// lists ids, by model name otherwise.
func (s SKU) gpuMatches(g BuiltGPU) bool {
	if len(s.GPUPCIIDs) > 0 {
		return slices.Contains(s.GPUPCIIDs, strings.ToLower(g.VendorID+":"+g.ProductID))
	}
	return GPUModelMatches(withoutVendorWords(s.GPUModel, g.VendorName), g.ProductName)
}

// withoutVendorWords drops from a model name the words of the GPU's vendor
// ("NVIDIA H100 80GB" of vendor "NVIDIA Corporation" is "H100 80GB"): the
// vendor is not part of MAAS's product name, and a catalog names it often.
// A name that is only vendor words is kept as it is (and matches nothing).
func withoutVendorWords(want, vendorName string) string {
	vendor := modelWords(vendorName)
	var kept []string
	for _, w := range modelWords(want) {
		if !slices.Contains(vendor, w) {
			kept = append(kept, w)
		}
	}
	if len(kept) == 0 {
		return want
	}
	return strings.Join(kept, " ")
}

// Compare lists how the machine b differs from what sku asks for, in a
// fixed order (GPUs, memory, cores, NICs, disks, region); nil when it
// conforms. Pure: no I/O.
func Compare(sku SKU, b AsBuilt) []Mismatch {
	var out []Mismatch
	add := func(field, want, got string) { out = append(out, Mismatch{Field: field, Want: want, Got: got}) }

	if sku.GPUsTotal > 0 && len(b.GPUs) != sku.GPUsTotal {
		add("gpus_total", strconv.Itoa(sku.GPUsTotal), strconv.Itoa(len(b.GPUs)))
	}
	if others := otherGPUs(sku, b.GPUs); others != "" {
		want := sku.GPUModel
		field := "gpu_model"
		if len(sku.GPUPCIIDs) > 0 {
			want, field = strings.Join(sku.GPUPCIIDs, ", "), "gpu_pci_ids"
		}
		add(field, want, others)
	}
	if sku.MinMemoryMiB > 0 && b.MemoryMiB < sku.MinMemoryMiB {
		add("min_memory_mib", ">= "+strconv.Itoa(sku.MinMemoryMiB), strconv.Itoa(b.MemoryMiB))
	}
	if sku.MinCPUCores > 0 && b.CPUCores < sku.MinCPUCores {
		add("min_cpu_cores", ">= "+strconv.Itoa(sku.MinCPUCores), strconv.Itoa(b.CPUCores))
	}
	if fast := countWhere(b.NICs, func(n BuiltNIC) bool { return n.LinkSpeedMbps >= sku.MinNICSpeedMbps }); fast < sku.NICCount {
		add("nic_count", fmt.Sprintf(">= %d at >= %d Mb/s", sku.NICCount, sku.MinNICSpeedMbps),
			fmt.Sprintf("%d of %d", fast, len(b.NICs)))
	}
	diskOK := func(d BuiltDisk) bool {
		return d.SizeBytes >= sku.MinDiskBytes && (sku.DiskBus == "" || d.Bus == sku.DiskBus)
	}
	if big := countWhere(b.Disks, diskOK); big < sku.DiskCount {
		want := fmt.Sprintf(">= %d of >= %d bytes", sku.DiskCount, sku.MinDiskBytes)
		if sku.DiskBus != "" {
			want = fmt.Sprintf(">= %d %s of >= %d bytes", sku.DiskCount, sku.DiskBus, sku.MinDiskBytes)
		}
		add("disk_count", want, fmt.Sprintf("%d of %d%s", big, len(b.Disks), diskBusCounts(b.Disks)))
	}
	if sku.Region != "" && b.Region != sku.Region {
		add("region", sku.Region, b.Region)
	}
	return out
}

// countWhere counts the elements of xs that satisfy ok.
func countWhere[T any](xs []T, ok func(T) bool) int {
	n := 0
	for _, x := range xs {
		if ok(x) {
			n++
		}
	}
	return n
}

// otherGPUs describes the GPUs that are not the SKU's ("3 × GA100 [A100
// SXM4 80GB] (10de:20b2)", by product in order of first appearance), or
// "" when all are.
func otherGPUs(sku SKU, gpus []BuiltGPU) string {
	var order []string
	count := map[string]int{}
	for _, g := range gpus {
		if sku.gpuMatches(g) {
			continue
		}
		k := fmt.Sprintf("%s (%s:%s)", g.ProductName, g.VendorID, g.ProductID)
		if count[k] == 0 {
			order = append(order, k)
		}
		count[k]++
	}
	parts := make([]string, len(order))
	for i, k := range order {
		parts[i] = fmt.Sprintf("%d × %s", count[k], k)
	}
	return strings.Join(parts, ", ")
}

// diskBusCounts is " (2 nvme, 4 sata)" for disks of known buses, in the
// order of DiskBuses; "" when no disk's bus is known.
func diskBusCounts(disks []BuiltDisk) string {
	var parts []string
	for _, bus := range DiskBuses {
		if n := countWhere(disks, func(d BuiltDisk) bool { return d.Bus == bus }); n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, bus))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}
