package maassim

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// Node devices: the PCIe devices commissioning found on a machine
// (GET nodes/{system_id}/devices/, MAAS's NodeDevice API,
// MS/api/nodedevices.py and MS/models/nodedevice.py). Commissioning records
// them from the machine resources LXD reports; each is a GPU, a NIC linked to
// its physical interface, or an NVMe disk linked to its physical block device.

// MAAS's NODE_DEVICE_BUS (MS/enum.py).
const (
	busPCIE = 1
	busUSB  = 2
)

// MAAS's HARDWARE_TYPE (metadataserver/enum.py), with its display names.
const (
	hwTypeNode    = 0
	hwTypeCPU     = 1
	hwTypeMemory  = 2
	hwTypeStorage = 3
	hwTypeNetwork = 4
	hwTypeGPU     = 5
)

var hardwareTypeNames = map[int]string{
	hwTypeNode: "Node", hwTypeCPU: "CPU", hwTypeMemory: "Memory",
	hwTypeStorage: "Storage", hwTypeNetwork: "Network", hwTypeGPU: "GPU",
}

// pciProduct is what the PCI id database names a device.
type pciProduct struct {
	vendorID, productID     string
	vendorName, productName string
	driver                  string
}

// DefaultGPUModel is the GPU a host has unless Hardware.GPUModel names
// another; DefaultGPUCount how many.
const (
	DefaultGPUModel = "h100-sxm5"
	DefaultGPUCount = 8
)

// gpuModels are the GPU models a host may have, keyed by the names
// Hardware.GPUModel and Faults.OtherGPUModel take. H100 SXM5 and H100 PCIe
// share the chip name GH100: only the product tells them apart.
var gpuModels = map[string]pciProduct{
	"h100-sxm5": {"10de", "2330", "NVIDIA Corporation", "GH100 [H100 SXM5 80GB]", "nvidia"},
	"h100-pcie": {"10de", "2331", "NVIDIA Corporation", "GH100 [H100 PCIe]", "nvidia"},
	"a100-sxm4": {"10de", "20b2", "NVIDIA Corporation", "GA100 [A100 SXM4 80GB]", "nvidia"},
}

// nicProduct and nvmeProduct match what the interfaces and block devices
// render (Intel E810-C NICs, Samsung PM9A3 NVMe disks).
var (
	nicProduct  = pciProduct{"8086", "1592", "Intel Corporation", "Ethernet Controller E810-C for QSFP", "ice"}
	nvmeProduct = pciProduct{"144d", "a80a", "Samsung Electronics Co Ltd", "NVMe SSD Controller PM9A1/PM9A3/980PRO", "nvme"}
)

// defaultLinkSpeed is the speed every simulated NIC supports and, unless
// Faults.SlowLinkMbps, negotiates (Mbit/s, as MAAS's link_speed).
const defaultLinkSpeed = 100000

// PCI buses of an HGX-style board: GPU k, extra NIC k (next to GPU k) and
// NVMe disk k. The PXE NIC sits on bus 0x0c. Beyond a table a device moves
// to a further PCI domain, so addresses stay unique.
var (
	gpuBuses  = []int{0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb}
	nicBuses  = []int{0x1a, 0x2c, 0x3c, 0x5e, 0x9b, 0xad, 0xbc, 0xdc}
	diskBuses = []int{0x61, 0x62, 0x63, 0x64, 0xe1, 0xe2, 0xe3, 0xe4}
)

const pxeNICBus = 0x0c

// pciAddress is the BDF address of device k of a class (domain 1, 2, 3
// for GPUs, NICs, disks beyond their table).
func pciAddress(table []int, class, k int) string {
	if k < len(table) {
		return fmt.Sprintf("0000:%02x:00.0", table[k])
	}
	k -= len(table)
	return fmt.Sprintf("%04x:%02x:%02x.0", class, k%256, k/256)
}

// nodeDevice is a NodeDevice row of a machine's current config.
type nodeDevice struct {
	id           int
	hardwareType int
	product      pciProduct
	pciAddress   string
	busNumber    int
	deviceNumber int
	// ifaceMAC and diskName name the physical interface or block device
	// the device is; empty for a GPU.
	ifaceMAC string
	diskName string
}

// hostGPUs is the GPU count and model commissioning sees on hw, after the
// missing_gpus and other_gpu_model faults.
func hostGPUs(hw *hardware) (int, pciProduct) {
	model := hw.spec.GPUModel
	if hw.faults.OtherGPUModel != "" {
		model = hw.faults.OtherGPUModel
	}
	return hw.spec.GPUs - hw.faults.MissingGPUs, gpuModels[model]
}

// visibleMACs are the NICs commissioning sees: the PXE NIC and the extra
// NICs but the last missing_nics of them.
func visibleMACs(hw *hardware) []string {
	extra := hw.spec.ExtraMACs[:len(hw.spec.ExtraMACs)-hw.faults.MissingNICs]
	return append([]string{hw.spec.PXEMAC}, extra...)
}

// visibleDisks are the disks commissioning sees: all but the last
// missing_disks of them.
func visibleDisks(hw *hardware) []Disk {
	return append([]Disk(nil), hw.spec.Disks[:len(hw.spec.Disks)-hw.faults.MissingDisks]...)
}

// setHardwareDefaults fills the device part of a new host and checks its
// device faults, naming the field at fault.
func setHardwareDefaults(h *Hardware) error {
	if h.GPUs == 0 {
		h.GPUs = DefaultGPUCount
	}
	if h.GPUModel == "" {
		h.GPUModel = DefaultGPUModel
	}
	f := h.Faults
	switch {
	case h.GPUs < 0:
		return &SimulatorInputError{Field: "gpus", Reason: "cannot be negative"}
	case gpuModels[h.GPUModel].productID == "":
		return &SimulatorInputError{Field: "gpu_model", Reason: "must be one of " + gpuModelNames()}
	case f.OtherGPUModel != "" && gpuModels[f.OtherGPUModel].productID == "":
		return &SimulatorInputError{Field: "faults.other_gpu_model", Reason: "must be one of " + gpuModelNames()}
	case f.MissingGPUs < 0 || f.MissingGPUs > h.GPUs:
		return &SimulatorInputError{Field: "faults.missing_gpus", Reason: "must be between 0 and the host's GPUs"}
	case f.MissingNICs < 0 || f.MissingNICs > len(h.ExtraMACs):
		return &SimulatorInputError{Field: "faults.missing_nics", Reason: "must be between 0 and the number of extra_macs (the PXE NIC is never missing)"}
	case f.MissingDisks < 0 || f.MissingDisks > len(h.Disks):
		return &SimulatorInputError{Field: "faults.missing_disks", Reason: "must be between 0 and the host's disks"}
	case badDiskBus(h.Disks) != "":
		return &SimulatorInputError{Field: badDiskBus(h.Disks), Reason: "must be nvme, sata or sas"}
	case f.SlowLinkMbps < 0 || f.SlowLinkMbps > defaultLinkSpeed:
		return &SimulatorInputError{Field: "faults.slow_link_mbps", Reason: fmt.Sprintf("must be between 0 and %d", defaultLinkSpeed)}
	}
	return nil
}

func gpuModelNames() string {
	return "a100-sxm4, h100-pcie, h100-sxm5"
}

// discoverDevices records the node devices commissioning found on m's host,
// as MAAS's update_node_devices does from the LXD resources: a device
// already known at the same PCI address keeps its row (and id), a new one is
// created, one no longer seen is deleted. The last visible NIC negotiates at
// slow_link_mbps when set (link_speed below interface_speed, as MAAS reports
// a NIC that trained down).
func (s *Simulator) discoverDevices(m *machine) {
	hw := m.hw
	old := map[string]*nodeDevice{}
	for _, d := range m.devices {
		old[d.pciAddress] = d
	}
	var found []*nodeDevice
	add := func(hwType int, p pciProduct, addr, mac, disk string) {
		d := old[addr]
		if d == nil {
			d = &nodeDevice{id: s.st.nextDeviceID}
			s.st.nextDeviceID++
		}
		// MAAS parses bus and device numbers from the BDF address
		// (NodeDevice.save).
		parts := strings.Split(addr, ":")
		bus, _ := strconv.ParseInt(parts[1], 16, 32)
		dev, _ := strconv.ParseInt(strings.SplitN(parts[2], ".", 2)[0], 16, 32)
		d.hardwareType, d.product, d.pciAddress = hwType, p, addr
		d.busNumber, d.deviceNumber = int(bus), int(dev)
		d.ifaceMAC, d.diskName = mac, disk
		found = append(found, d)
	}
	count, gpu := hostGPUs(hw)
	for k := range count {
		add(hwTypeGPU, gpu, pciAddress(gpuBuses, 1, k), "", "")
	}
	macs := visibleMACs(hw)
	for k, mac := range macs {
		addr := fmt.Sprintf("0000:%02x:00.0", pxeNICBus)
		if k > 0 {
			addr = pciAddress(nicBuses, 2, k-1)
		}
		add(hwTypeNetwork, nicProduct, addr, mac, "")
	}
	discoverDisks(m, add)
	m.devices = found
	for _, i := range m.ifaces {
		i.linkSpeed = defaultLinkSpeed
		if hw.faults.SlowLinkMbps > 0 && i.mac == macs[len(macs)-1] {
			i.linkSpeed = hw.faults.SlowLinkMbps
		}
	}
}

var (
	nodeDevicesResource = resource{"GET ": (*Simulator).listNodeDevices}
	nodeDeviceResource  = resource{"GET ": (*Simulator).readNodeDevice}
)

type nodeDeviceJSON struct {
	ID                  int              `json:"id"`
	Bus                 int              `json:"bus"`
	BusName             string           `json:"bus_name"`
	HardwareType        int              `json:"hardware_type"`
	HardwareTypeName    string           `json:"hardware_type_name"`
	SystemID            string           `json:"system_id"`
	NUMANode            int              `json:"numa_node"`
	PhysicalBlockDevice *blockDeviceJSON `json:"physical_blockdevice"`
	PhysicalInterface   *ifaceJSON       `json:"physical_interface"`
	VendorID            string           `json:"vendor_id"`
	ProductID           string           `json:"product_id"`
	VendorName          string           `json:"vendor_name"`
	ProductName         string           `json:"product_name"`
	CommissioningDriver string           `json:"commissioning_driver"`
	BusNumber           int              `json:"bus_number"`
	DeviceNumber        int              `json:"device_number"`
	PCIAddress          *string          `json:"pci_address"`
	ResourceURI         string           `json:"resource_uri"`
}

// renderNodeDevices renders m's devices in id order. A device whose
// interface was deleted is gone with it: physical_interface is a OneToOne
// with on_delete=CASCADE (MS/models/nodedevice.py). The related interface
// and block device nest as their own handlers render them. Every device is
// on NUMA node 0, the one node the machine's numanode_set lists.
func renderNodeDevices(m *machine) []nodeDeviceJSON {
	disks := renderDisks(m)
	out := make([]nodeDeviceJSON, 0, len(m.devices))
	for _, d := range m.devices {
		j := nodeDeviceJSON{
			ID: d.id, Bus: busPCIE, BusName: "PCIE",
			HardwareType: d.hardwareType, HardwareTypeName: hardwareTypeNames[d.hardwareType],
			SystemID: m.systemID, VendorID: d.product.vendorID, ProductID: d.product.productID,
			VendorName: d.product.vendorName, ProductName: d.product.productName,
			CommissioningDriver: d.product.driver, BusNumber: d.busNumber, DeviceNumber: d.deviceNumber,
			PCIAddress:  strPtr(d.pciAddress),
			ResourceURI: fmt.Sprintf("%snodes/%s/devices/%d/", apiPrefix, m.systemID, d.id),
		}
		if d.ifaceMAC != "" {
			i := m.ifaceByMAC(d.ifaceMAC)
			if i == nil {
				continue
			}
			r := renderIface(m, i)
			j.PhysicalInterface = &r
		}
		if d.diskName != "" {
			for n := range disks {
				if disks[n].Name == d.diskName {
					j.PhysicalBlockDevice = &disks[n]
				}
			}
		}
		out = append(out, j)
	}
	return out
}

func (m *machine) ifaceByMAC(mac string) *iface {
	for _, i := range m.ifaces {
		if i.mac == mac && i.kind == "" {
			return i
		}
	}
	return nil
}

// translateBus is MAAS's translate_bus: a numeric value or PCIE/USB in
// either case (MS/models/nodedevice.py).
func translateBus(v string) (int, bool) {
	switch v {
	case "1", "PCIE", "pcie":
		return busPCIE, true
	case "2", "USB", "usb":
		return busUSB, true
	}
	return 0, false
}

// translateHardwareType is MAAS's translate_hardware_type
// (metadataserver/models/script.py): a numeric value or one of its aliases.
func translateHardwareType(v string) (int, string) {
	if n, err := strconv.Atoi(v); err == nil {
		if _, ok := hardwareTypeNames[n]; ok {
			return n, ""
		}
		return 0, "Invalid hardware type numeric value."
	}
	switch strings.ToLower(v) {
	case "node", "machine", "controller", "other", "generic":
		return hwTypeNode, ""
	case "cpu", "processor":
		return hwTypeCPU, ""
	case "memory", "ram":
		return hwTypeMemory, ""
	case "storage", "disk", "ssd":
		return hwTypeStorage, ""
	case "network", "net", "interface":
		return hwTypeNetwork, ""
	case "gpu", "graphics":
		return hwTypeGPU, ""
	}
	return 0, "Hardware type must be node, cpu, memory, storage, network or gpu"
}

// listNodeDevices applies the read filters of NodeDevicesHandler: bus and
// hardware_type are translated (a bad value is a 400 with the validation
// message as text, MAASAPIValidationError of one message); vendor_id,
// product_id, vendor_name, product_name and commissioning_driver match
// exactly, ignoring case (__iexact).
func (s *Simulator) listNodeDevices(rq *request) reply {
	m, bad := s.lookupNode(rq)
	if bad != nil {
		return *bad
	}
	p := rq.params
	bus, hwType := -1, -1
	if v, ok := p["bus"]; ok && len(v) > 0 {
		b, ok := translateBus(v[0])
		if !ok {
			if _, err := strconv.Atoi(v[0]); err == nil {
				return badRequest("Invalid bus numeric value!")
			}
			return badRequest("Bus must be PCIE or USB!")
		}
		bus = b
	}
	if v, ok := p["hardware_type"]; ok && len(v) > 0 {
		t, msg := translateHardwareType(v[0])
		if msg != "" {
			return badRequest(msg)
		}
		hwType = t
	}
	textFilters := []struct {
		param string
		field func(nodeDeviceJSON) string
	}{
		{"vendor_id", func(d nodeDeviceJSON) string { return d.VendorID }},
		{"product_id", func(d nodeDeviceJSON) string { return d.ProductID }},
		{"vendor_name", func(d nodeDeviceJSON) string { return d.VendorName }},
		{"product_name", func(d nodeDeviceJSON) string { return d.ProductName }},
		{"commissioning_driver", func(d nodeDeviceJSON) string { return d.CommissioningDriver }},
	}
	all := renderNodeDevices(m)
	out := all[:0]
next:
	for _, d := range all {
		if (bus >= 0 && d.Bus != bus) || (hwType >= 0 && d.HardwareType != hwType) {
			continue
		}
		for _, f := range textFilters {
			if v, ok := p[f.param]; ok && len(v) > 0 && !strings.EqualFold(f.field(d), v[0]) {
				continue next
			}
		}
		out = append(out, d)
	}
	return jsonReply(http.StatusOK, out)
}

// readNodeDevice resolves {id} as NodeDeviceHandler does: digits are the
// id, "bus:device" the bus and device numbers (decimal), anything else the
// PCI address; a malformed bus:device is 400 "Invalid id format!".
func (s *Simulator) readNodeDevice(rq *request) reply {
	m, bad := s.lookupNode(rq)
	if bad != nil {
		return *bad
	}
	spec := rq.vars[1]
	match := func(d nodeDeviceJSON) bool { return d.PCIAddress != nil && *d.PCIAddress == spec }
	if _, err := strconv.Atoi(spec); err == nil {
		match = func(d nodeDeviceJSON) bool { return strconv.Itoa(d.ID) == spec }
	} else if parts := strings.Split(spec, ":"); len(parts) == 2 {
		bus, err1 := strconv.Atoi(parts[0])
		dev, err2 := strconv.Atoi(parts[1])
		if err1 != nil || err2 != nil {
			return badRequest("Invalid id format!")
		}
		match = func(d nodeDeviceJSON) bool { return d.BusNumber == bus && d.DeviceNumber == dev }
	}
	for _, d := range renderNodeDevices(m) {
		if match(d) {
			return jsonReply(http.StatusOK, d)
		}
	}
	return notFound("NodeDevice")
}
