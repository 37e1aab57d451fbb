package domain

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func builtWith(gpus int, macs ...string) AsBuilt {
	b := AsBuilt{MemoryMiB: 524288, CPUCores: 64}
	for k := range gpus {
		b.GPUs = append(b.GPUs, BuiltGPU{PCIAddress: "0000:1" + string(rune('0'+k)) + ":00.0", VendorID: "10de", ProductID: "2330",
			ProductName: "GH100 [H100 SXM5 80GB]"})
	}
	for k, m := range macs {
		b.NICs = append(b.NICs, BuiltNIC{PCIAddress: "0000:2" + string(rune('0'+k)) + ":00.0", MACAddress: m, Name: "enp" + string(rune('0'+k)), LinkSpeedMbps: 100000})
	}
	return b
}

func TestHardwareChanges(t *testing.T) {
	before := builtWith(8, "52:54:00:00:00:01", "52:54:00:00:00:02")
	assert.Empty(t, HardwareChanges(before, before), "nothing changed")

	now := builtWith(7, "52:54:00:00:00:01", "52:54:00:00:00:09")
	now.MemoryMiB = 262144
	assert.Equal(t, []string{
		"GPU at 0000:17:00.0 is gone (GH100 [H100 SXM5 80GB])",
		"NIC at 0000:21:00.0 is 52:54:00:00:00:09, was 52:54:00:00:00:02",
		"memory 262144 MiB, was 524288 MiB",
	}, HardwareChanges(before, now))

	added := builtWith(8, "52:54:00:00:00:01", "52:54:00:00:00:02", "52:54:00:00:00:03")
	assert.Equal(t, []string{"NIC at 0000:22:00.0 is new (52:54:00:00:00:03)"}, HardwareChanges(before, added))
}

func TestCheckHardwareJoinsEveryCheck(t *testing.T) {
	sku := SKU{ID: "h100-8x", GPUModel: "H100", GPUsTotal: 8, SKUHardware: SKUHardware{NICCount: 3, MinNICSpeedMbps: 100000}}
	b := builtWith(6, "52:54:00:00:00:01", "52:54:00:00:00:02")
	bootDisk := func(AsBuilt) []Mismatch { return []Mismatch{{Field: "boot_disk", Want: "serial S1", Got: "none"}} }

	got := CheckHardware(b, SKUCheck(sku), bootDisk)

	assert.Equal(t, []Mismatch{
		{Field: "gpus_total", Want: "8", Got: "6"},
		{Field: "nic_count", Want: ">= 3 at >= 100000 Mb/s", Got: "2 of 2"},
		{Field: "boot_disk", Want: "serial S1", Got: "none"},
	}, got, "the SKU's lines, then a later comparator's, in order")
	assert.Empty(t, CheckHardware(builtWith(8, "a", "b", "c"), SKUCheck(sku)))
}

func TestSKUGPUModelMayNameTheVendor(t *testing.T) {
	h100 := BuiltGPU{VendorID: "10de", ProductID: "2330", VendorName: "NVIDIA Corporation", ProductName: "GH100 [H100 SXM5 80GB]"}
	a100 := BuiltGPU{VendorID: "10de", ProductID: "20b2", VendorName: "NVIDIA Corporation", ProductName: "GA100 [A100 SXM4 80GB]"}
	for _, tc := range []struct {
		model string
		gpu   BuiltGPU
		ok    bool
	}{
		{"NVIDIA H100 80GB", h100, true},
		{"nvidia h100", h100, true},
		{"H100", h100, true},
		{"NVIDIA H100 80GB", a100, false},
		{"NVIDIA", h100, false},
		{"AMD H100", h100, false},
	} {
		assert.Equal(t, tc.ok, SKU{GPUModel: tc.model}.gpuMatches(tc.gpu), "%q vs %s", tc.model, tc.gpu.ProductName)
	}
}
