package domain

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestGPUModelMatchesTheModelNotTheChip(t *testing.T) {
	const (
		sxm5  = "GH100 [H100 SXM5 80GB]"
		pcie  = "GH100 [H100 PCIe]"
		nvl   = "GH100 [H100 NVL]"
		a100  = "GA100 [A100 SXM4 80GB]"
		h100l = "GH100L [H100L 94GB]"
	)
	cases := []struct {
		want, product string
		ok            bool
	}{
		{"H100", sxm5, true},
		{"h100 sxm5", sxm5, true},
		{"H100 SXM5 80GB", sxm5, true},
		{"H100 SXM5 80 GB", sxm5, true},
		{"SXM5 H100", sxm5, true},
		{"H100 SXM5", pcie, false},
		{"H100 PCIe", pcie, true},
		{"H100 PCIe", sxm5, false},
		{"H100", nvl, true},
		{"H100 SXM5", nvl, false},
		{"GH100", sxm5, false},
		{"H100", a100, false},
		{"A100", a100, true},
		{"H100", h100l, false},
		{"H100 SXM5 94GB", sxm5, false},
		{"", sxm5, false},
		{"L40S", "AD102GL [L40S]", true},
		{"L40", "AD102GL [L40S]", false},
		{"Tesla T4", "TU104GL [Tesla T4]", true},
		{"RTX 6000", "Quadro RTX 6000", true},
	}
	for _, c := range cases {
		assert.Equal(t, c.ok, GPUModelMatches(c.want, c.product), "%q vs %q", c.want, c.product)
	}
}

func h100Machine(gpus int, product, productID string) AsBuilt {
	b := AsBuilt{Region: "us-east-1", MemoryMiB: 2097152, CPUCores: 112}
	for i := range gpus {
		b.GPUs = append(b.GPUs, BuiltGPU{PCIAddress: "0000:18:00." + string(rune('0'+i)), VendorID: "10de", ProductID: productID, ProductName: product})
	}
	for range 8 {
		b.NICs = append(b.NICs, BuiltNIC{LinkSpeedMbps: 400000})
	}
	b.NICs = append(b.NICs, BuiltNIC{LinkSpeedMbps: 1000})
	b.Disks = []BuiltDisk{{SizeBytes: 3840 << 30}, {SizeBytes: 3840 << 30}}
	return b
}

func TestCompare(t *testing.T) {
	sku := SKU{ID: "h100-8x", GPUModel: "H100 SXM5", GPUsTotal: 8, SKUHardware: SKUHardware{
		MinMemoryMiB: 2000000, MinCPUCores: 96, NICCount: 8, MinNICSpeedMbps: 400000,
		DiskCount: 2, MinDiskBytes: 3 << 40, Region: "us-east-1",
	}}
	const sxm5, a100 = "GH100 [H100 SXM5 80GB]", "GA100 [A100 SXM4 80GB]"
	cases := []struct {
		name  string
		sku   SKU
		built func() AsBuilt
		want  []Mismatch
	}{
		{"as designed", sku, func() AsBuilt { return h100Machine(8, sxm5, "2330") }, nil},
		{"fewer GPUs", sku, func() AsBuilt { return h100Machine(6, sxm5, "2330") },
			[]Mismatch{{Field: "gpus_total", Want: "8", Got: "6"}}},
		{"another model", sku, func() AsBuilt { return h100Machine(8, a100, "20b2") },
			[]Mismatch{{Field: "gpu_model", Want: "H100 SXM5", Got: "8 × GA100 [A100 SXM4 80GB] (10de:20b2)"}}},
		{"an H100 PCIe is not an SXM5", sku, func() AsBuilt { return h100Machine(8, "GH100 [H100 PCIe]", "2331") },
			[]Mismatch{{Field: "gpu_model", Want: "H100 SXM5", Got: "8 × GH100 [H100 PCIe] (10de:2331)"}}},
		{"by PCI id", func() SKU { s := sku; s.GPUPCIIDs = []string{"10de:2330"}; return s }(),
			func() AsBuilt { return h100Machine(8, "renamed in a newer pci.ids", "2330") }, nil},
		{"by PCI id, another id", func() SKU { s := sku; s.GPUPCIIDs = []string{"10de:2330"}; return s }(),
			func() AsBuilt { return h100Machine(8, sxm5, "2324") },
			[]Mismatch{{Field: "gpu_pci_ids", Want: "10de:2330", Got: "8 × GH100 [H100 SXM5 80GB] (10de:2324)"}}},
		{"small and slow", sku, func() AsBuilt {
			b := h100Machine(8, sxm5, "2330")
			b.MemoryMiB, b.CPUCores = 1048576, 64
			b.NICs[0].LinkSpeedMbps = 100000
			b.Disks = b.Disks[:1]
			b.Region = "eu-west-1"
			return b
		}, []Mismatch{
			{Field: "min_memory_mib", Want: ">= 2000000", Got: "1048576"},
			{Field: "min_cpu_cores", Want: ">= 96", Got: "64"},
			{Field: "nic_count", Want: ">= 8 at >= 400000 Mb/s", Got: "7 of 9"},
			{Field: "disk_count", Want: ">= 2 of >= 3298534883328 bytes", Got: "1 of 1"},
			{Field: "region", Want: "us-east-1", Got: "eu-west-1"},
		}},
		{"no constraints beyond GPUs", SKU{GPUModel: "H100", GPUsTotal: 8}, func() AsBuilt {
			b := h100Machine(8, sxm5, "2330")
			b.NICs, b.Disks, b.MemoryMiB = nil, nil, 1
			return b
		}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, Compare(c.sku, c.built()))
		})
	}
}
