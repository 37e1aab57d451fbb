package maassim

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
)

// A host with one NVMe, two SATA and two SAS disks, read through the
// client: one node device per PCI address (the NVMe disk, the AHCI
// controller, the SAS HBA), one block device per disk, and the disks as
// the hardware check counts them.
func TestFidelityDisksSATAAndSAS(t *testing.T) {
	h := newHarness(t)
	hw := Hardware{BMCIP: "10.10.3.1", PXEMAC: "0c:c4:7a:03:00:01", Disks: []Disk{
		{Name: "nvme0n1", SizeBytes: 960197124096, Model: "SAMSUNG MZ1L2960", Serial: "N0"},
		{Name: "sda", SizeBytes: 480103981056, Model: "INTEL SSDSC2KB480G8", Serial: "A0", Bus: "sata"},
		{Name: "sdb", SizeBytes: 480103981056, Model: "INTEL SSDSC2KB480G8", Serial: "A1", Bus: "sata"},
		{Name: "sdc", SizeBytes: 3840755982336, Model: "KIOXIA KPM6XRUG3T84", Serial: "C0", Bus: "sas"},
		{Name: "sdd", SizeBytes: 3840755982336, Model: "KIOXIA KPM6XRUG3T84", Serial: "C1", Bus: "sas"},
	}}
	require.NoError(t, h.sim.AddHardware(hw))
	sid := h.create(t, "disks-1", hw.BMCIP, false)
	r := h.call(t, http.MethodPost, "machines/"+sid+"/", "commission", url.Values{"skip_bmc_config": {"1"}})
	require.Equal(t, http.StatusOK, r.code, "body: %s", r.body)
	h.clock.Advance(3 * time.Minute)

	c, err := maas.NewClient(h.srv.URL+"/MAAS", domain.Secret(testKey))
	require.NoError(t, err)
	ctx := context.Background()
	devices, err := c.NodeDevices(ctx, sid)
	require.NoError(t, err)
	storage := map[string]string{} // PCI address → driver/linked disk
	for _, d := range devices {
		if d.HardwareType == maas.HardwareStorage {
			require.NotNil(t, d.BlockDevice, d.PCIAddress)
			storage[d.PCIAddress] = d.CommissioningDriver + "/" + d.BlockDevice.Name
		}
	}
	assert.Equal(t, map[string]string{
		"0000:61:00.0": "nvme/nvme0n1",
		"0000:00:17.0": "ahci/sdb",    // the controller, linked to its last disk
		"0000:4b:00.0": "mpt3sas/sdd", // likewise
	}, storage)

	blocks, err := c.BlockDevices(ctx, sid)
	require.NoError(t, err)
	require.Len(t, blocks, 5)
	assert.Equal(t, []string{"ssd", "sata"}, blocks[1].Tags)
	assert.Equal(t, "/dev/disk/by-id/ata-INTEL_SSDSC2KB480G8_A0", blocks[1].IDPath)
	assert.Equal(t, []string{"ssd"}, blocks[3].Tags)

	disks := maas.BuiltDisks(blocks, devices)
	got := make([]string, 0, len(disks))
	for _, d := range disks {
		got = append(got, fmt.Sprintf("%s %s %s", d.Name, d.Bus, d.PCIAddress))
	}
	assert.Equal(t, []string{
		"nvme0n1 nvme 0000:61:00.0", "sda sata 0000:00:17.0", "sdb sata 0000:00:17.0",
		"sdc sas 0000:4b:00.0", "sdd sas 0000:4b:00.0",
	}, got)

	// An SKU sold with two NVMe disks is not met by this machine's SATA
	// and SAS disks, though it has five of the size.
	sku := domain.SKU{SKUHardware: domain.SKUHardware{DiskCount: 2, MinDiskBytes: 400_000_000_000, DiskBus: domain.DiskBusNVMe}}
	assert.Equal(t, []domain.Mismatch{{Field: "disk_count", Want: ">= 2 nvme of >= 400000000000 bytes", Got: "1 of 5 (1 nvme, 2 sata, 2 sas)"}},
		domain.Compare(sku, domain.AsBuilt{Disks: disks}))
	sku.DiskBus = domain.DiskBusSAS
	assert.Empty(t, domain.Compare(sku, domain.AsBuilt{Disks: disks}))
}

func TestDiskBusIsChecked(t *testing.T) {
	h := newHarness(t)
	err := h.sim.AddHardware(Hardware{BMCIP: "10.10.3.2", PXEMAC: "0c:c4:7a:03:00:02", Disks: []Disk{{Name: "sda", SizeBytes: 1, Bus: "scsi"}}})
	var in *SimulatorInputError
	require.ErrorAs(t, err, &in)
	assert.Equal(t, "disks[0].bus", in.Field)
}
