package maas

import (
	"context"
	"net/http"
	"slices"
	"strings"

	"github.com/maasflow/maasflow/shared/domain"
)

// BlockDevice is a machine's block device as MAAS lists it (GET
// nodes/{id}/blockdevices/, MAAS's src/maasserver/api/blockdevices.py).
type BlockDevice struct {
	ID   int    `json:"id"`
	Name string `json:"name"`
	// Type is "physical" or "virtual"; only a physical one can be the
	// boot disk.
	Type      string `json:"type"`
	Path      string `json:"path"`
	IDPath    string `json:"id_path,omitempty"`
	Model     string `json:"model,omitempty"`
	Serial    string `json:"serial,omitempty"`
	SizeBytes int64  `json:"size_bytes"`
	// Tags are MAAS's disk tags: ssd or rotary, and others commissioning
	// or an admin set.
	Tags []string `json:"tags,omitempty"`
}

type wireBlockDevice struct {
	ID     int        `json:"id"`
	Name   string     `json:"name"`
	Type   string     `json:"type"`
	Path   string     `json:"path"`
	IDPath nullString `json:"id_path"`
	Model  nullString `json:"model"`
	Serial nullString `json:"serial"`
	Size   int64      `json:"size"`
	Tags   []string   `json:"tags"`
}

// BlockDevices lists the machine's block devices. A read.
func (c *Client) BlockDevices(ctx context.Context, systemID string) ([]BlockDevice, error) {
	const op = "list block devices"
	if err := requireArg(op, systemID, "system_id", systemID); err != nil {
		return nil, err
	}
	var ws []wireBlockDevice
	if err := c.doJSON(ctx, request{
		op: op, systemID: systemID, method: http.MethodGet, path: nodePath(systemID) + "blockdevices/",
	}, &ws); err != nil {
		return nil, err
	}
	out := make([]BlockDevice, 0, len(ws))
	for _, w := range ws {
		out = append(out, BlockDevice{
			ID: w.ID, Name: w.Name, Type: w.Type, Path: w.Path, IDPath: string(w.IDPath), Model: string(w.Model),
			Serial: string(w.Serial), SizeBytes: w.Size, Tags: nilIfEmpty(w.Tags),
		})
	}
	return out, nil
}

// sasDrivers are the kernel drivers of SAS host bus adapters and RAID
// controllers a disk may sit behind.
var sasDrivers = []string{"mpt3sas", "mpt2sas", "megaraid_sas", "smartpqi", "hpsa", "aacraid"}

// BuiltDisks is the machine's physical disks as the hardware check counts
// them: one per physical block device (never per node device, since MAAS
// keeps one node device per PCI address and the SATA or SAS disks behind
// one controller share its address), with the bus and PCI address MAAS
// tells. NVMe: the block device's name or by-id path says so, and its node
// device is the disk. SATA: MAAS tags the disk sata. SAS: the disk sits
// behind a SAS controller's node device, or its by-id path is scsi-. A
// disk with no node device of its own takes the address of the one
// controller of its bus, when there is exactly one.
func BuiltDisks(blockDevices []BlockDevice, devices []NodeDevice) []domain.BuiltDisk {
	linked := map[int]NodeDevice{}
	controllers := map[domain.DiskBus][]string{}
	for _, d := range devices {
		if d.BlockDevice != nil {
			linked[d.BlockDevice.ID] = d
		}
	}
	bd := func(id int) (BlockDevice, bool) {
		for _, b := range blockDevices {
			if b.ID == id {
				return b, true
			}
		}
		return BlockDevice{}, false
	}
	for _, d := range devices {
		if d.BlockDevice == nil {
			continue
		}
		b, _ := bd(d.BlockDevice.ID)
		if bus := diskBus(b, d); bus != domain.DiskBusNVMe && bus != "" {
			controllers[bus] = append(controllers[bus], d.PCIAddress)
		}
	}
	out := make([]domain.BuiltDisk, 0, len(blockDevices))
	for _, b := range blockDevices {
		if b.Type != "" && b.Type != "physical" {
			continue
		}
		dev, ok := linked[b.ID]
		bus := diskBus(b, dev)
		addr := dev.PCIAddress
		if !ok && len(controllers[bus]) == 1 {
			addr = controllers[bus][0]
		}
		out = append(out, domain.BuiltDisk{PCIAddress: addr, Bus: bus, Name: b.Name, Model: b.Model, Serial: b.Serial, SizeBytes: b.SizeBytes, Path: b.Path})
	}
	return out
}

// diskBus tells a disk's bus from its block device and, when MAAS linked
// one, its node device (the zero NodeDevice when not).
func diskBus(b BlockDevice, dev NodeDevice) domain.DiskBus {
	switch {
	case strings.HasPrefix(b.Name, "nvme") || strings.Contains(b.IDPath, "/nvme-") || dev.CommissioningDriver == "nvme":
		return domain.DiskBusNVMe
	case slices.Contains(b.Tags, "sata"):
		return domain.DiskBusSATA
	case slices.Contains(sasDrivers, dev.CommissioningDriver) || strings.Contains(b.IDPath, "/scsi-"):
		return domain.DiskBusSAS
	}
	return ""
}
