package domain

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCompareCountsDisksOfTheSKUsBus(t *testing.T) {
	disks := []BuiltDisk{
		{PCIAddress: "0000:61:00.0", Bus: DiskBusNVMe, Name: "nvme0n1", SizeBytes: 4e12},
		{PCIAddress: "0000:00:17.0", Bus: DiskBusSATA, Name: "sda", Serial: "A0", SizeBytes: 4e12},
		{PCIAddress: "0000:00:17.0", Bus: DiskBusSATA, Name: "sdb", Serial: "A1", SizeBytes: 4e12},
	}
	sku := SKU{SKUHardware: SKUHardware{DiskCount: 2, MinDiskBytes: 3e12, DiskBus: DiskBusNVMe}}
	assert.Equal(t, []Mismatch{{Field: "disk_count", Want: ">= 2 nvme of >= 3000000000000 bytes", Got: "1 of 3 (1 nvme, 2 sata)"}},
		Compare(sku, AsBuilt{Disks: disks}))

	sku.DiskBus = DiskBusSATA
	assert.Empty(t, Compare(sku, AsBuilt{Disks: disks}), "two SATA disks meet a SATA constraint")

	sku.DiskBus = ""
	sku.DiskCount = 3
	assert.Empty(t, Compare(sku, AsBuilt{Disks: disks}), "without a bus every disk counts")
}

func TestHardwareChangesTellsSATADisksOnOneControllerApart(t *testing.T) {
	before := AsBuilt{Disks: []BuiltDisk{
		{PCIAddress: "0000:00:17.0", Bus: DiskBusSATA, Name: "sda", Model: "INTEL SSDSC2KB480G8", Serial: "A0"},
		{PCIAddress: "0000:00:17.0", Bus: DiskBusSATA, Name: "sdb", Model: "INTEL SSDSC2KB480G8", Serial: "A1"},
	}}
	now := AsBuilt{Disks: before.Disks[:1]}
	assert.Equal(t, []string{"disk at 0000:00:17.0 A1 is gone (INTEL SSDSC2KB480G8 A1)"}, HardwareChanges(before, now))
	assert.Empty(t, HardwareChanges(before, before))
}

func TestProfileScriptNamesForTheProbe(t *testing.T) {
	p := ProfileScripts{CommissioningScripts: []string{"firmware-update", "raid-config"}, TestingScripts: []string{"gpu-burn", "raid-config"}}
	assert.Equal(t, []string{"firmware-update", "raid-config", "gpu-burn"}, p.Names())
	assert.Nil(t, ProfileScripts{TestingScripts: []string{"none"}}.Names(), `"none" is no script`)
}
