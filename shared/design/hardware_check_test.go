package design

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/maasflow/maasflow/shared/domain"
)

func checkedMachine() domain.AsBuilt {
	return domain.AsBuilt{
		GPUs: []domain.BuiltGPU{{PCIAddress: "0000:18:00.0", ProductName: "GH100 [H100 SXM5 80GB]"}},
		NICs: []domain.BuiltNIC{{PCIAddress: "0000:1a:00.0", Name: "eno2"}, {PCIAddress: "0000:2c:00.0", Name: "eno3"}},
		Disks: []domain.BuiltDisk{
			{PCIAddress: "0000:61:00.0", Name: "nvme0n1", Model: "SAMSUNG MZ1L2960", Serial: "S0", SizeBytes: 960_197_124_096, Path: "/dev/disk/by-dname/nvme0n1"},
			{PCIAddress: "0000:62:00.0", Name: "nvme1n1", Model: "SAMSUNG MZQL23T8", Serial: "S1", SizeBytes: 3_840_755_982_336, Path: "/dev/disk/by-dname/nvme1n1"},
		},
	}
}

func TestHardwareCheckPassesAConformingMachine(t *testing.T) {
	e := Effective{Hostname: "gpu-1",
		DeviceAliases: []DeviceAlias{{Alias: "rail0", PCIAddress: "0000:1a:00.0"}, {Alias: "rail1", PCIAddress: "0000:2c:00.0"}},
		BootDisk:      &BootDisk{Model: "SAMSUNG MZ1L2960"}}
	assert.Empty(t, HardwareCheck(e)(checkedMachine()))
	assert.Empty(t, HardwareCheck(Effective{Hostname: "gpu-1"})(checkedMachine()), "no hardware profile, nothing to check")
}

func TestHardwareCheckReportsAliasesAndBootDisk(t *testing.T) {
	cases := []struct {
		name string
		e    Effective
		want []domain.Mismatch
	}{
		{"alias at no device", Effective{DeviceAliases: []DeviceAlias{{Alias: "rail2", PCIAddress: "0000:3c:00.0"}}},
			[]domain.Mismatch{{Field: "device_aliases.rail2", Want: "NIC at 0000:3c:00.0", Got: "no device"}}},
		{"alias at a GPU", Effective{DeviceAliases: []DeviceAlias{{Alias: "rail0", PCIAddress: "0000:18:00.0"}}},
			[]domain.Mismatch{{Field: "device_aliases.rail0", Want: "NIC at 0000:18:00.0", Got: "a GPU (GH100 [H100 SXM5 80GB])"}}},
		{"boot disk matches none", Effective{BootDisk: &BootDisk{Serial: "S9"}},
			[]domain.Mismatch{{Field: "boot_disk", Want: "one disk with serial S9", Got: "no disk of 2"}}},
		{"boot disk matches two", Effective{BootDisk: &BootDisk{SizeGB: 900}},
			[]domain.Mismatch{{Field: "boot_disk", Want: "one disk with size >= 900 GB", Got: "2 disks: nvme0n1, nvme1n1"}}},
		{"both, aliases first", Effective{
			DeviceAliases: []DeviceAlias{{Alias: "rail0", PCIAddress: "0000:1a:00.0"}, {Alias: "rail7", PCIAddress: "0000:dc:00.0"}},
			BootDisk:      &BootDisk{Path: "/dev/disk/by-dname/sda"}},
			[]domain.Mismatch{
				{Field: "device_aliases.rail7", Want: "NIC at 0000:dc:00.0", Got: "no device"},
				{Field: "boot_disk", Want: "one disk with path /dev/disk/by-dname/sda", Got: "no disk of 2"},
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, HardwareCheck(tc.e)(checkedMachine()))
		})
	}
}

// The check joins an SKU's in one diff, as verify_hardware writes it.
func TestHardwareCheckJoinsTheSKUCheck(t *testing.T) {
	sku := domain.SKU{GPUModel: "H100", GPUsTotal: 8}
	e := Effective{BootDisk: &BootDisk{Serial: "S9"}}
	diff := domain.CheckHardware(checkedMachine(), domain.SKUCheck(sku), HardwareCheck(e))
	fields := make([]string, 0, len(diff))
	for _, d := range diff {
		fields = append(fields, d.Field)
	}
	assert.Equal(t, []string{"gpus_total", "boot_disk"}, fields)
}
