package maas

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/maasflow/maasflow/shared/domain"
)

func TestBuiltDisksCountsBlockDevicesNotNodeDevices(t *testing.T) {
	blocks := []BlockDevice{
		{ID: 1, Name: "nvme0n1", Type: "physical", IDPath: "/dev/disk/by-id/nvme-S0", Serial: "S0", SizeBytes: 10},
		{ID: 2, Name: "sda", Type: "physical", IDPath: "/dev/disk/by-id/ata-X_A0", Serial: "A0", Tags: []string{"ssd", "sata"}, SizeBytes: 20},
		{ID: 3, Name: "sdb", Type: "physical", IDPath: "/dev/disk/by-id/ata-X_A1", Serial: "A1", Tags: []string{"ssd", "sata"}, SizeBytes: 20},
		{ID: 4, Name: "sdc", Type: "physical", IDPath: "/dev/disk/by-id/wwn-0x5000c500c0", Serial: "C0", SizeBytes: 30},
		{ID: 5, Name: "sdd", Type: "physical", IDPath: "/dev/disk/by-id/wwn-0x5000c500c1", Serial: "C1", SizeBytes: 30},
		{ID: 6, Name: "md0", Type: "virtual"},
	}
	devices := []NodeDevice{
		{HardwareType: HardwareStorage, PCIAddress: "0000:61:00.0", CommissioningDriver: "nvme", BlockDevice: &DeviceBlockDevice{ID: 1}},
		{HardwareType: HardwareStorage, PCIAddress: "0000:00:17.0", CommissioningDriver: "ahci", BlockDevice: &DeviceBlockDevice{ID: 3}},
		{HardwareType: HardwareStorage, PCIAddress: "0000:4b:00.0", CommissioningDriver: "mpt3sas", BlockDevice: &DeviceBlockDevice{ID: 5}},
	}
	assert.Equal(t, []domain.BuiltDisk{
		{PCIAddress: "0000:61:00.0", Bus: domain.DiskBusNVMe, Name: "nvme0n1", Serial: "S0", SizeBytes: 10},
		{PCIAddress: "0000:00:17.0", Bus: domain.DiskBusSATA, Name: "sda", Serial: "A0", SizeBytes: 20},
		{PCIAddress: "0000:00:17.0", Bus: domain.DiskBusSATA, Name: "sdb", Serial: "A1", SizeBytes: 20},
		// sdc has no node device and a wwn- path: nothing MAAS says tells its bus.
		{Name: "sdc", Serial: "C0", SizeBytes: 30},
		{PCIAddress: "0000:4b:00.0", Bus: domain.DiskBusSAS, Name: "sdd", Serial: "C1", SizeBytes: 30},
	}, BuiltDisks(blocks, devices))
}
