package maassim

import (
	"fmt"
	"strings"
)

// SATA and SAS disks as MAAS reports them. Commissioning maps each disk to
// the PCIe device at the disk's pci_address, which for a SATA or SAS disk
// is its controller's; the node devices are keyed by PCI address, so the
// controller is one Storage device whose physical_blockdevice is the last
// disk mapped to it (update_node_devices fills a dict by address,
// metadataserver/builtin_scripts/hooks.py). Block devices carry the bus in
// their tags (a SATA disk is tagged sata, _get_tags_from_block_info) and
// their id_path (the /dev/disk/by-id name LXD reports: nvme-…, ata-…,
// scsi-…).

// Disk buses.
const (
	diskNVMe = "nvme"
	diskSATA = "sata"
	diskSAS  = "sas"
)

// The controllers SATA and SAS disks sit behind: the chipset's AHCI
// controller and a Broadcom SAS3008 HBA.
var (
	sataController = pciProduct{"8086", "a182", "Intel Corporation", "C620 Series Chipset Family SATA Controller [AHCI mode]", "ahci"}
	sasController  = pciProduct{"1000", "0097", "Broadcom / LSI", "SAS3008 PCI-Express Fusion-MPT SAS-3", "mpt3sas"}
)

// Controller addresses: the chipset's SATA function and the HBA's slot.
const (
	sataControllerAddr = "0000:00:17.0"
	sasControllerAddr  = "0000:4b:00.0"
)

func diskBus(d Disk) string {
	if d.Bus == "" {
		return diskNVMe
	}
	return d.Bus
}

// badDiskBus names the first disk whose bus is unknown ("disks[2].bus"),
// "" when all are known.
func badDiskBus(disks []Disk) string {
	for k, d := range disks {
		switch d.Bus {
		case "", diskNVMe, diskSATA, diskSAS:
		default:
			return fmt.Sprintf("disks[%d].bus", k)
		}
	}
	return ""
}

// diskIDPath is the disk's /dev/disk/by-id path as LXD names it.
func diskIDPath(d Disk) string {
	model := strings.ReplaceAll(d.Model, " ", "_")
	switch diskBus(d) {
	case diskSATA:
		return "/dev/disk/by-id/ata-" + model + "_" + d.Serial
	case diskSAS:
		return "/dev/disk/by-id/scsi-35000c500" + strings.ToLower(d.Serial)
	}
	return "/dev/disk/by-id/nvme-" + d.Serial
}

// diskTags are the tags commissioning gives the disk: every simulated disk
// is flash (ssd), and a SATA one is tagged sata.
func diskTags(d Disk) []string {
	if diskBus(d) == diskSATA {
		return []string{"ssd", "sata"}
	}
	return []string{"ssd"}
}

// discoverDisks records the disks' node devices: NVMe disk k at the k-th
// NVMe address, each controller with SATA or SAS disks once, linked to its
// last disk.
func discoverDisks(m *machine, add func(hwType int, p pciProduct, addr, mac, disk string)) {
	nvme := 0
	lastOn := map[string]string{}
	for _, d := range m.disks {
		switch diskBus(d) {
		case diskNVMe:
			add(hwTypeStorage, nvmeProduct, pciAddress(diskBuses, 3, nvme), "", d.Name)
			nvme++
		default:
			lastOn[diskBus(d)] = d.Name
		}
	}
	if name, ok := lastOn[diskSATA]; ok {
		add(hwTypeStorage, sataController, sataControllerAddr, "", name)
	}
	if name, ok := lastOn[diskSAS]; ok {
		add(hwTypeStorage, sasController, sasControllerAddr, "", name)
	}
}
