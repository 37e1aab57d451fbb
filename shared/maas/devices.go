package maas

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
)

// NodeDeviceReader reads the devices commissioning found on a machine.
type NodeDeviceReader interface {
	// NodeDevices lists every device of the machine's current
	// configuration (GPUs, NICs, disks, …). A read: repeating it is free.
	// Empty until the machine has been commissioned.
	NodeDevices(ctx context.Context, systemID string) ([]NodeDevice, error)
}

var _ NodeDeviceReader = (*Client)(nil)

// HardwareType is what a node device is, from MAAS's hardware_type.
type HardwareType string

// The hardware types MAAS knows (metadataserver/enum.py HARDWARE_TYPE).
const (
	HardwareNode    HardwareType = "node"
	HardwareCPU     HardwareType = "cpu"
	HardwareMemory  HardwareType = "memory"
	HardwareStorage HardwareType = "storage"
	HardwareNetwork HardwareType = "network"
	HardwareGPU     HardwareType = "gpu"
)

// hardwareTypes maps MAAS's numeric hardware_type to ours; a value a later
// MAAS may add reads as HardwareNode, MAAS's own default.
var hardwareTypes = map[int]HardwareType{
	0: HardwareNode, 1: HardwareCPU, 2: HardwareMemory, 3: HardwareStorage, 4: HardwareNetwork, 5: HardwareGPU,
}

// NodeDevice is one PCIe or USB device of a machine as MAAS recorded it
// when it last commissioned the machine. PCI addresses and ids are what
// the hardware is; names (enp28s0np0, nvme0n1) are what a kernel called it.
type NodeDevice struct {
	ID           int          `json:"id"`
	Bus          string       `json:"bus"` // "PCIE" or "USB"
	HardwareType HardwareType `json:"hardware_type"`
	// VendorID and ProductID are the 4-digit lower-case hex PCI (or USB)
	// ids, e.g. 10de and 2330; the names come from the PCI id database.
	VendorID            string `json:"vendor_id"`
	ProductID           string `json:"product_id"`
	VendorName          string `json:"vendor_name,omitempty"`
	ProductName         string `json:"product_name,omitempty"`
	CommissioningDriver string `json:"commissioning_driver,omitempty"`
	// PCIAddress is the BDF address (0000:1a:00.0); empty on USB.
	PCIAddress   string `json:"pci_address,omitempty"`
	BusNumber    int    `json:"bus_number"`
	DeviceNumber int    `json:"device_number"`
	NUMANode     int    `json:"numa_node"`
	// Interface is set when the device is a NIC: the physical interface
	// it is. Only ID is certain; the rest is filled when MAAS nests it.
	Interface *DeviceInterface `json:"interface,omitempty"`
	// BlockDevice is set when the device is a disk on the bus (NVMe).
	BlockDevice *DeviceBlockDevice `json:"block_device,omitempty"`
}

// DeviceInterface is the physical interface a NIC device is.
type DeviceInterface struct {
	ID         int    `json:"id"`
	Name       string `json:"name,omitempty"`
	MACAddress string `json:"mac_address,omitempty"`
	// LinkSpeed is the negotiated speed and InterfaceSpeed the NIC's
	// maximum, in Mbit/s (0 when unknown or the link is down).
	LinkSpeed      int `json:"link_speed,omitempty"`
	InterfaceSpeed int `json:"interface_speed,omitempty"`
}

// DeviceBlockDevice is the physical block device a disk device is.
type DeviceBlockDevice struct {
	ID        int    `json:"id"`
	Name      string `json:"name,omitempty"`
	Path      string `json:"path,omitempty"`
	IDPath    string `json:"id_path,omitempty"`
	Model     string `json:"model,omitempty"`
	Serial    string `json:"serial,omitempty"`
	SizeBytes int64  `json:"size_bytes,omitempty"`
}

// NodeDevices lists the machine's node devices (GET
// nodes/{id}/devices/, MAAS's NodeDevice API, MAAS 3.0 and later). No
// filter is sent: one call reads them all. A read.
func (c *Client) NodeDevices(ctx context.Context, systemID string) ([]NodeDevice, error) {
	const op = "list node devices"
	if err := requireArg(op, systemID, "system_id", systemID); err != nil {
		return nil, err
	}
	var ws []wireNodeDevice
	if err := c.doJSON(ctx, request{
		op: op, systemID: systemID, method: http.MethodGet, path: nodePath(systemID) + "devices/",
	}, &ws); err != nil {
		return nil, err
	}
	out := make([]NodeDevice, len(ws))
	for i, w := range ws {
		out[i] = w.device()
	}
	return out, nil
}

type wireNodeDevice struct {
	ID                  int                                `json:"id"`
	BusName             nullString                         `json:"bus_name"`
	HardwareType        int                                `json:"hardware_type"`
	NUMANode            *int                               `json:"numa_node"`
	VendorID            nullString                         `json:"vendor_id"`
	ProductID           nullString                         `json:"product_id"`
	VendorName          nullString                         `json:"vendor_name"`
	ProductName         nullString                         `json:"product_name"`
	CommissioningDriver nullString                         `json:"commissioning_driver"`
	BusNumber           int                                `json:"bus_number"`
	DeviceNumber        int                                `json:"device_number"`
	PCIAddress          nullString                         `json:"pci_address"`
	PhysicalInterface   wireRelated[wireDeviceInterface]   `json:"physical_interface"`
	PhysicalBlockDevice wireRelated[wireDeviceBlockDevice] `json:"physical_blockdevice"`
}

type wireDeviceInterface struct {
	ID             int        `json:"id"`
	Name           nullString `json:"name"`
	MACAddress     nullString `json:"mac_address"`
	LinkSpeed      int        `json:"link_speed"`
	InterfaceSpeed int        `json:"interface_speed"`
}

type wireDeviceBlockDevice struct {
	ID     int        `json:"id"`
	Name   nullString `json:"name"`
	Path   nullString `json:"path"`
	IDPath nullString `json:"id_path"`
	Model  nullString `json:"model"`
	Serial nullString `json:"serial"`
	Size   int64      `json:"size"`
}

// wireRelated is a related object MAAS renders either nested (the related
// handler's fields) or as its bare id; null when there is none.
type wireRelated[T any] struct {
	id  *int
	obj *T
}

func (r *wireRelated[T]) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		return nil
	case len(b) > 0 && b[0] == '{':
		r.obj = new(T)
		return json.Unmarshal(b, r.obj)
	default:
		var id int
		if err := json.Unmarshal(b, &id); err != nil {
			return err
		}
		r.id = &id
		return nil
	}
}

func (w wireNodeDevice) device() NodeDevice {
	d := NodeDevice{
		ID: w.ID, Bus: string(w.BusName), HardwareType: hardwareTypes[w.HardwareType],
		VendorID: string(w.VendorID), ProductID: string(w.ProductID),
		VendorName: string(w.VendorName), ProductName: string(w.ProductName),
		CommissioningDriver: string(w.CommissioningDriver), PCIAddress: string(w.PCIAddress),
		BusNumber: w.BusNumber, DeviceNumber: w.DeviceNumber,
	}
	if d.HardwareType == "" {
		d.HardwareType = HardwareNode
	}
	if w.NUMANode != nil {
		d.NUMANode = *w.NUMANode
	}
	switch i := w.PhysicalInterface; {
	case i.obj != nil:
		d.Interface = &DeviceInterface{
			ID: i.obj.ID, Name: string(i.obj.Name), MACAddress: string(i.obj.MACAddress),
			LinkSpeed: i.obj.LinkSpeed, InterfaceSpeed: i.obj.InterfaceSpeed,
		}
	case i.id != nil:
		d.Interface = &DeviceInterface{ID: *i.id}
	}
	switch b := w.PhysicalBlockDevice; {
	case b.obj != nil:
		d.BlockDevice = &DeviceBlockDevice{
			ID: b.obj.ID, Name: string(b.obj.Name), Path: string(b.obj.Path), IDPath: string(b.obj.IDPath),
			Model: string(b.obj.Model), Serial: string(b.obj.Serial), SizeBytes: b.obj.Size,
		}
	case b.id != nil:
		d.BlockDevice = &DeviceBlockDevice{ID: *b.id}
	}
	return d
}
