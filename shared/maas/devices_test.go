package maas

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// nodeDevicesBody is a node devices reply in MAAS's shape: a GPU, a NIC
// with its interface nested, an NVMe disk with its block device nested,
// and a USB device whose related objects come as bare ids or null.
const nodeDevicesBody = `[
 {"id": 11, "bus": 1, "bus_name": "PCIE", "hardware_type": 5, "hardware_type_name": "GPU", "system_id": "k3tgaq",
  "numa_node": 1, "physical_blockdevice": null, "physical_interface": null,
  "vendor_id": "10de", "product_id": "2330", "vendor_name": "NVIDIA Corporation", "product_name": "GH100 [H100 SXM5 80GB]",
  "commissioning_driver": "nvidia", "bus_number": 24, "device_number": 0, "pci_address": "0000:18:00.0",
  "resource_uri": "/MAAS/api/2.0/nodes/k3tgaq/devices/11/"},
 {"id": 12, "bus": 1, "bus_name": "PCIE", "hardware_type": 4, "hardware_type_name": "Network", "system_id": "k3tgaq",
  "numa_node": 0, "physical_blockdevice": null,
  "physical_interface": {"id": 7, "name": "enp26s0np0", "type": "physical", "mac_address": "0c:c4:7a:01:01:01",
   "link_speed": 25000, "interface_speed": 100000, "links": [], "vlan": null},
  "vendor_id": "8086", "product_id": "1592", "vendor_name": "Intel Corporation", "product_name": "Ethernet Controller E810-C for QSFP",
  "commissioning_driver": "ice", "bus_number": 26, "device_number": 0, "pci_address": "0000:1a:00.0"},
 {"id": 13, "bus": 1, "bus_name": "PCIE", "hardware_type": 3, "hardware_type_name": "Storage", "system_id": "k3tgaq",
  "numa_node": 0, "physical_interface": null,
  "physical_blockdevice": {"id": 3, "name": "nvme0n1", "path": "/dev/disk/by-dname/nvme0n1", "id_path": "/dev/disk/by-id/nvme-S64H",
   "model": "SAMSUNG MZQL23T8HCLS-00A07", "serial": "S64H", "size": 3840755982336},
  "vendor_id": "144d", "product_id": "a80a", "vendor_name": "Samsung Electronics Co Ltd", "product_name": "NVMe SSD Controller PM9A1/PM9A3/980PRO",
  "commissioning_driver": "nvme", "bus_number": 97, "device_number": 0, "pci_address": "0000:61:00.0"},
 {"id": 14, "bus": 2, "bus_name": "USB", "hardware_type": 0, "hardware_type_name": "Node", "system_id": "k3tgaq",
  "numa_node": 0, "physical_interface": 9, "physical_blockdevice": null,
  "vendor_id": "0b95", "product_id": "1790", "vendor_name": "ASIX Electronics Corp.", "product_name": "AX88179 Gigabit Ethernet",
  "commissioning_driver": "ax88179_178a", "bus_number": 1, "device_number": 3, "pci_address": null}
]`

func TestNodeDevicesDecodes(t *testing.T) {
	f := newFakeMAAS(t).on(http.MethodGet, "nodes/k3tgaq/devices/", "", http.StatusOK, nodeDevicesBody)
	got, err := f.client().NodeDevices(context.Background(), "k3tgaq")
	require.NoError(t, err)
	assert.Equal(t, []NodeDevice{
		{
			ID: 11, Bus: "PCIE", HardwareType: HardwareGPU, VendorID: "10de", ProductID: "2330",
			VendorName: "NVIDIA Corporation", ProductName: "GH100 [H100 SXM5 80GB]", CommissioningDriver: "nvidia",
			PCIAddress: "0000:18:00.0", BusNumber: 24, NUMANode: 1,
		},
		{
			ID: 12, Bus: "PCIE", HardwareType: HardwareNetwork, VendorID: "8086", ProductID: "1592",
			VendorName: "Intel Corporation", ProductName: "Ethernet Controller E810-C for QSFP", CommissioningDriver: "ice",
			PCIAddress: "0000:1a:00.0", BusNumber: 26,
			Interface: &DeviceInterface{ID: 7, Name: "enp26s0np0", MACAddress: "0c:c4:7a:01:01:01", LinkSpeed: 25000, InterfaceSpeed: 100000},
		},
		{
			ID: 13, Bus: "PCIE", HardwareType: HardwareStorage, VendorID: "144d", ProductID: "a80a",
			VendorName: "Samsung Electronics Co Ltd", ProductName: "NVMe SSD Controller PM9A1/PM9A3/980PRO", CommissioningDriver: "nvme",
			PCIAddress: "0000:61:00.0", BusNumber: 97,
			BlockDevice: &DeviceBlockDevice{
				ID: 3, Name: "nvme0n1", Path: "/dev/disk/by-dname/nvme0n1", IDPath: "/dev/disk/by-id/nvme-S64H",
				Model: "SAMSUNG MZQL23T8HCLS-00A07", Serial: "S64H", SizeBytes: 3840755982336,
			},
		},
		{
			ID: 14, Bus: "USB", HardwareType: HardwareNode, VendorID: "0b95", ProductID: "1790",
			VendorName: "ASIX Electronics Corp.", ProductName: "AX88179 Gigabit Ethernet", CommissioningDriver: "ax88179_178a",
			BusNumber: 1, DeviceNumber: 3, Interface: &DeviceInterface{ID: 9},
		},
	}, got)
	req := f.only()
	assert.Equal(t, http.MethodGet, req.Method)
	assert.Empty(t, req.Query, "no filter: one call reads every device")
}

func TestNodeDevicesErrors(t *testing.T) {
	f := newFakeMAAS(t).
		on(http.MethodGet, "nodes/gone01/devices/", "", http.StatusNotFound, "No Node matches the given query.").
		on(http.MethodGet, "nodes/bad001/devices/", "", http.StatusOK, `{"not": "a list"}`)
	c := f.client()

	_, err := c.NodeDevices(context.Background(), "gone01")
	assert.Equal(t, &MAASNotFoundError{Op: "list node devices", SystemID: "gone01", Message: "No Node matches the given query."}, err)

	_, err = c.NodeDevices(context.Background(), "bad001")
	var unexpected *MAASUnexpectedResponseError
	require.ErrorAs(t, err, &unexpected)

	_, err = c.NodeDevices(context.Background(), " ")
	var bad *MAASBadRequestError
	require.ErrorAs(t, err, &bad)
	assert.Contains(t, bad.Message, "system_id")
	assert.Len(t, f.requests(), 2, "an empty system id is refused before any call")
}
