package maassim

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gpuHost adds a host with two extra NICs and two disks, commissions a
// machine for it and returns its system id.
func (h *harness) gpuHost(t *testing.T, n int, hw Hardware) string {
	t.Helper()
	hw.BMCIP = fmt.Sprintf("10.10.1.%d", n)
	hw.PXEMAC = fmt.Sprintf("0c:c4:7a:01:00:%02x", n)
	hw.ExtraMACs = []string{fmt.Sprintf("0c:c4:7a:01:01:%02x", n), fmt.Sprintf("0c:c4:7a:01:02:%02x", n)}
	hw.Disks = []Disk{
		{Name: "nvme0n1", SizeBytes: 960197124096, Model: "SAMSUNG MZ1L2960", Serial: fmt.Sprintf("S0%02x", n)},
		{Name: "nvme1n1", SizeBytes: 3840755982336, Model: "SAMSUNG MZQL23T8", Serial: fmt.Sprintf("S1%02x", n)},
	}
	require.NoError(t, h.sim.AddHardware(hw))
	sid := h.create(t, fmt.Sprintf("gpu-%d", n), hw.BMCIP, false)
	r := h.call(t, http.MethodPost, "machines/"+sid+"/", "commission", url.Values{"skip_bmc_config": {"1"}})
	require.Equal(t, http.StatusOK, r.code, "body: %s", r.body)
	h.clock.Advance(3 * time.Minute)
	require.Equal(t, "Ready", h.statusName(t, sid))
	return sid
}

func (h *harness) devices(t *testing.T, sid string, filter url.Values) []map[string]any {
	t.Helper()
	r := h.call(t, http.MethodGet, "nodes/"+sid+"/devices/", "", filter)
	require.Equal(t, http.StatusOK, r.code, "body: %s", r.body)
	var out []map[string]any
	r.json(t, &out)
	return out
}

func countByType(devs []map[string]any) map[string]int {
	out := map[string]int{}
	for _, d := range devs {
		out[d["hardware_type_name"].(string)]++
	}
	return out
}

// Commissioning records the host's GPUs, NICs and NVMe disks as node
// devices with MAAS's fields; each NIC is its physical interface and each
// disk its physical block device.
func TestNodeDevicesAfterCommissioning(t *testing.T) {
	h := newHarness(t)
	sid := h.create(t, "gpu-new", h.host(t, 1, Faults{}), false)
	assert.Empty(t, h.devices(t, sid, nil), "a machine never commissioned has no devices")

	sid = h.gpuHost(t, 2, Hardware{})
	devs := h.devices(t, sid, nil)
	assert.Equal(t, map[string]int{"GPU": 8, "Network": 3, "Storage": 2}, countByType(devs))

	gpu := devs[0]
	assert.Equal(t, "GPU", gpu["hardware_type_name"])
	assert.EqualValues(t, hwTypeGPU, gpu["hardware_type"])
	assert.EqualValues(t, 1, gpu["bus"])
	assert.Equal(t, "PCIE", gpu["bus_name"])
	assert.Equal(t, "10de", gpu["vendor_id"])
	assert.Equal(t, "2330", gpu["product_id"])
	assert.Equal(t, "NVIDIA Corporation", gpu["vendor_name"])
	assert.Equal(t, "GH100 [H100 SXM5 80GB]", gpu["product_name"])
	assert.Equal(t, "nvidia", gpu["commissioning_driver"])
	assert.Equal(t, "0000:18:00.0", gpu["pci_address"])
	assert.EqualValues(t, 0x18, gpu["bus_number"], "parsed from the BDF address")
	assert.EqualValues(t, 0, gpu["device_number"])
	assert.EqualValues(t, 0, gpu["numa_node"])
	assert.Nil(t, gpu["physical_interface"])
	assert.Nil(t, gpu["physical_blockdevice"])
	assert.Equal(t, sid, gpu["system_id"])
	assert.Equal(t, fmt.Sprintf("/MAAS/api/2.0/nodes/%s/devices/%v/", sid, gpu["id"]), gpu["resource_uri"])

	r := h.call(t, http.MethodGet, "nodes/"+sid+"/interfaces/", "", nil)
	var ifaces []map[string]any
	r.json(t, &ifaces)
	byMAC := map[string]map[string]any{}
	for _, i := range ifaces {
		byMAC[i["mac_address"].(string)] = i
	}
	nics := h.devices(t, sid, url.Values{"hardware_type": {"network"}})
	require.Len(t, nics, 3)
	assert.Equal(t, "0000:0c:00.0", nics[0]["pci_address"], "the PXE NIC")
	for _, d := range nics {
		assert.Equal(t, "8086", d["vendor_id"])
		assert.Equal(t, "ice", d["commissioning_driver"])
		pi := d["physical_interface"].(map[string]any)
		i := byMAC[pi["mac_address"].(string)]
		require.NotNil(t, i, "the device is one of the machine's interfaces")
		assert.Equal(t, i["id"], pi["id"])
		assert.EqualValues(t, 100000, pi["link_speed"])
	}
	disks := h.devices(t, sid, url.Values{"hardware_type": {"storage"}})
	require.Len(t, disks, 2)
	assert.Equal(t, "nvme0n1", disks[0]["physical_blockdevice"].(map[string]any)["name"])
	assert.Equal(t, "nvme1n1", disks[1]["physical_blockdevice"].(map[string]any)["name"])
	assert.Equal(t, "nvme", disks[1]["commissioning_driver"])
}

// Re-commissioning keeps the rows (and ids) of devices seen again, as
// update_node_devices matches them by PCI address.
func TestNodeDeviceIDsSurviveRecommissioning(t *testing.T) {
	h := newHarness(t)
	sid := h.gpuHost(t, 1, Hardware{})
	before := h.devices(t, sid, nil)
	r := h.call(t, http.MethodPost, "machines/"+sid+"/", "commission", url.Values{"skip_bmc_config": {"1"}})
	require.Equal(t, http.StatusOK, r.code, "body: %s", r.body)
	h.clock.Advance(3 * time.Minute)
	after := h.devices(t, sid, nil)
	require.Len(t, after, len(before))
	for n := range before {
		assert.Equal(t, before[n]["id"], after[n]["id"])
		assert.Equal(t, before[n]["pci_address"], after[n]["pci_address"])
	}
}

// The read filters of NodeDevicesHandler: bus and hardware_type translated,
// the text fields matched ignoring case; bad values are 400 with MAAS's text.
func TestNodeDeviceFilters(t *testing.T) {
	h := newHarness(t)
	sid := h.gpuHost(t, 1, Hardware{})
	for name, tc := range map[string]struct {
		filter url.Values
		want   int
	}{
		"bus PCIE":              {url.Values{"bus": {"PCIE"}}, 13},
		"bus 1":                 {url.Values{"bus": {"1"}}, 13},
		"bus usb":               {url.Values{"bus": {"usb"}}, 0},
		"hardware_type gpu":     {url.Values{"hardware_type": {"gpu"}}, 8},
		"hardware_type 5":       {url.Values{"hardware_type": {"5"}}, 8},
		"hardware_type disk":    {url.Values{"hardware_type": {"disk"}}, 2},
		"vendor_id upper case":  {url.Values{"vendor_id": {"10DE"}}, 8},
		"product_id":            {url.Values{"product_id": {"1592"}}, 3},
		"vendor_name":           {url.Values{"vendor_name": {"nvidia corporation"}}, 8},
		"product_name":          {url.Values{"product_name": {"GH100 [H100 SXM5 80GB]"}}, 8},
		"product_name no match": {url.Values{"product_name": {"GH100"}}, 0},
		"commissioning_driver":  {url.Values{"commissioning_driver": {"nvme"}}, 2},
		"two filters":           {url.Values{"hardware_type": {"gpu"}, "vendor_id": {"8086"}}, 0},
	} {
		t.Run(name, func(t *testing.T) {
			assert.Len(t, h.devices(t, sid, tc.filter), tc.want)
		})
	}
	for filter, msg := range map[string]string{
		"bus=pci":            "Bus must be PCIE or USB!",
		"bus=7":              "Invalid bus numeric value!",
		"hardware_type=fpga": "Hardware type must be node, cpu, memory, storage, network or gpu",
		"hardware_type=9":    "Invalid hardware type numeric value.",
	} {
		q, err := url.ParseQuery(filter)
		require.NoError(t, err)
		r := h.call(t, http.MethodGet, "nodes/"+sid+"/devices/", "", q)
		assert.Equal(t, http.StatusBadRequest, r.code, filter)
		assert.Equal(t, msg, string(r.body), filter)
	}
	r := h.call(t, http.MethodGet, "nodes/nosuch/devices/", "", nil)
	assert.Equal(t, http.StatusNotFound, r.code)
	assert.Equal(t, "No Node matches the given query.", string(r.body))
}

// One device is read by id, by bus:device numbers or by PCI address.
func TestReadNodeDevice(t *testing.T) {
	h := newHarness(t)
	sid := h.gpuHost(t, 1, Hardware{})
	gpu := h.devices(t, sid, nil)[1]
	for _, spec := range []string{fmt.Sprint(gpu["id"]), "42:0", "0000:2a:00.0"} {
		r := h.call(t, http.MethodGet, "nodes/"+sid+"/devices/"+spec+"/", "", nil)
		require.Equal(t, http.StatusOK, r.code, "%s: %s", spec, r.body)
		assert.Equal(t, gpu["id"], r.obj(t)["id"], spec)
	}
	r := h.call(t, http.MethodGet, "nodes/"+sid+"/devices/9999/", "", nil)
	assert.Equal(t, http.StatusNotFound, r.code)
	assert.Equal(t, "No NodeDevice matches the given query.", string(r.body))
	r = h.call(t, http.MethodGet, "nodes/"+sid+"/devices/a:b/", "", nil)
	assert.Equal(t, http.StatusBadRequest, r.code)
	assert.Equal(t, "Invalid id format!", string(r.body))
}

// Deleting an interface deletes its node device (on_delete=CASCADE).
func TestDeletingAnInterfaceDeletesItsDevice(t *testing.T) {
	h := newHarness(t)
	sid := h.gpuHost(t, 1, Hardware{})
	nics := h.devices(t, sid, url.Values{"hardware_type": {"network"}})
	last := nics[2]["physical_interface"].(map[string]any)
	r := h.call(t, http.MethodDelete, fmt.Sprintf("nodes/%s/interfaces/%v/", sid, last["id"]), "", nil)
	require.Equal(t, http.StatusNoContent, r.code, "body: %s", r.body)
	assert.Len(t, h.devices(t, sid, url.Values{"hardware_type": {"network"}}), 2)
}

// The hardware faults: what commissioning sees differs from what was sold.
func TestNodeDeviceFaults(t *testing.T) {
	h := newHarness(t)

	sid := h.gpuHost(t, 1, Hardware{Faults: Faults{MissingGPUs: 2}})
	assert.Len(t, h.devices(t, sid, url.Values{"hardware_type": {"gpu"}}), 6, "missing_gpus")

	sid = h.gpuHost(t, 2, Hardware{Faults: Faults{OtherGPUModel: "h100-pcie"}})
	gpus := h.devices(t, sid, url.Values{"hardware_type": {"gpu"}})
	require.Len(t, gpus, 8)
	assert.Equal(t, "GH100 [H100 PCIe]", gpus[0]["product_name"], "other_gpu_model: same chip, another model")
	assert.Equal(t, "2331", gpus[0]["product_id"])

	sid = h.gpuHost(t, 3, Hardware{GPUModel: "a100-sxm4", GPUs: 4})
	gpus = h.devices(t, sid, url.Values{"hardware_type": {"gpu"}})
	require.Len(t, gpus, 4, "a host built with other GPUs")
	assert.Equal(t, "GA100 [A100 SXM4 80GB]", gpus[0]["product_name"])

	sid = h.gpuHost(t, 4, Hardware{Faults: Faults{MissingNICs: 1}})
	assert.Len(t, h.devices(t, sid, url.Values{"hardware_type": {"network"}}), 2, "missing_nics: no device")
	r := h.call(t, http.MethodGet, "nodes/"+sid+"/interfaces/", "", nil)
	var ifaces []map[string]any
	r.json(t, &ifaces)
	assert.Len(t, ifaces, 2, "missing_nics: no interface either")

	sid = h.gpuHost(t, 5, Hardware{Faults: Faults{SlowLinkMbps: 25000}})
	nics := h.devices(t, sid, url.Values{"hardware_type": {"network"}})
	require.Len(t, nics, 3)
	slow := nics[2]["physical_interface"].(map[string]any)
	assert.EqualValues(t, 25000, slow["link_speed"], "slow_link_mbps: the last NIC trained down")
	assert.EqualValues(t, 100000, slow["interface_speed"])
	assert.EqualValues(t, 100000, nics[0]["physical_interface"].(map[string]any)["link_speed"])

	sid = h.gpuHost(t, 6, Hardware{Faults: Faults{MissingDisks: 1}})
	disks := h.devices(t, sid, url.Values{"hardware_type": {"storage"}})
	require.Len(t, disks, 1, "missing_disks")
	assert.Len(t, h.machine(t, sid)["physicalblockdevice_set"], 1, "missing_disks: no block device either")
}

// Device faults that cannot happen are refused naming the field.
func TestNodeDeviceFaultValidation(t *testing.T) {
	h := newHarness(t)
	for field, hw := range map[string]Hardware{
		"gpu_model":              {GPUModel: "b200"},
		"gpus":                   {GPUs: -1},
		"faults.other_gpu_model": {Faults: Faults{OtherGPUModel: "gh100"}},
		"faults.missing_gpus":    {Faults: Faults{MissingGPUs: 9}},
		"faults.missing_nics":    {Faults: Faults{MissingNICs: 1}},
		"faults.missing_disks":   {Faults: Faults{MissingDisks: 2}},
		"faults.slow_link_mbps":  {Faults: Faults{SlowLinkMbps: -1}},
	} {
		hw.BMCIP, hw.PXEMAC = "10.10.2.1", "0c:c4:7a:02:00:01"
		err := h.sim.AddHardware(hw)
		var in *SimulatorInputError
		require.ErrorAs(t, err, &in, field)
		assert.Equal(t, field, in.Field)
	}
}
