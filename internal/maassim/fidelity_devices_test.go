package maassim

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/canonical/gomaasclient/entity"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fDevice is one node device as any driver reports it.
type fDevice struct {
	ID           int
	Bus          string // bus_name
	HardwareType int
	VendorID     string
	ProductID    string
	ProductName  string
	PCIAddress   string
	BusNumber    int
	// InterfaceMAC and LinkSpeed describe the physical interface of a NIC;
	// BlockDevice names the physical block device of a disk.
	InterfaceMAC string
	LinkSpeed    int
	BlockDevice  string
}

func (d *gomaasDriver) NodeDevices(_ context.Context, sid string) ([]fDevice, error) {
	ds, err := d.c.NodeDevices.Get(sid, &entity.NodeDeviceParams{})
	if err != nil {
		return nil, asFidelity(err)
	}
	out := make([]fDevice, 0, len(ds))
	for _, x := range ds {
		out = append(out, fDevice{
			ID: x.ID, Bus: x.BusName, HardwareType: int(x.HardwareType), VendorID: x.VendorID, ProductID: x.ProductID,
			ProductName: x.ProductName, PCIAddress: x.PCIAddress, BusNumber: x.BusNumber,
			InterfaceMAC: x.PhysicalNetworkInterface.MACAddress, LinkSpeed: x.PhysicalNetworkInterface.LinkSpeed,
			BlockDevice: x.PhysicalBlockDevice.Name,
		})
	}
	return out, nil
}

func (d *maasflowDriver) NodeDevices(ctx context.Context, sid string) ([]fDevice, error) {
	ds, err := d.c.NodeDevices(ctx, sid)
	if err != nil {
		return nil, asFidelityMAAS(err)
	}
	types := map[string]int{"node": 0, "cpu": 1, "memory": 2, "storage": 3, "network": 4, "gpu": 5}
	out := make([]fDevice, 0, len(ds))
	for _, x := range ds {
		f := fDevice{
			ID: x.ID, Bus: x.Bus, HardwareType: types[string(x.HardwareType)], VendorID: x.VendorID, ProductID: x.ProductID,
			ProductName: x.ProductName, PCIAddress: x.PCIAddress, BusNumber: x.BusNumber,
		}
		if x.Interface != nil {
			f.InterfaceMAC, f.LinkSpeed = x.Interface.MACAddress, x.Interface.LinkSpeed
		}
		if x.BlockDevice != nil {
			f.BlockDevice = x.BlockDevice.Name
		}
		out = append(out, f)
	}
	return out, nil
}

// devicesConsistent checks what holds on any MAAS: PCIe devices carry a
// BDF address whose bus is bus_number, each NIC device is one of the
// machine's interfaces, each disk device names a block device.
var devicesConsistent = step("node devices match the machine", func(t *testing.T, r *fidelityRun) {
	t.Helper()
	devs, err := r.env.d.NodeDevices(r.ctx, r.sid)
	require.NoError(t, err)
	require.NotEmpty(t, devs, "a commissioned machine has devices")
	ifaces, err := r.env.d.Interfaces(r.ctx, r.sid)
	require.NoError(t, err)
	macs := map[string]bool{}
	for _, i := range ifaces {
		macs[i.MAC] = true
	}
	for _, d := range devs {
		if d.Bus != "PCIE" {
			continue
		}
		parts := strings.Split(d.PCIAddress, ":")
		require.Len(t, parts, 3, "BDF address %q", d.PCIAddress)
		bus, err := strconv.ParseInt(parts[1], 16, 32)
		require.NoError(t, err)
		assert.EqualValues(t, bus, d.BusNumber, "bus_number is parsed from %s", d.PCIAddress)
		if d.InterfaceMAC != "" {
			assert.True(t, macs[d.InterfaceMAC], "NIC %s is an interface of the machine", d.PCIAddress)
		}
		if d.HardwareType == hwTypeStorage && d.VendorID == nvmeProduct.vendorID {
			assert.NotEmpty(t, d.BlockDevice, "NVMe %s names its block device", d.PCIAddress)
		}
	}
})

// gpusAre checks the GPUs the simulated host's faults leave.
func gpusAre(n int, product string) fidelityStep {
	return step(fmt.Sprintf("%d × %s", n, product), func(t *testing.T, r *fidelityRun) {
		t.Helper()
		devs, err := r.env.d.NodeDevices(r.ctx, r.sid)
		require.NoError(t, err)
		var gpus []fDevice
		for _, d := range devs {
			if d.HardwareType == hwTypeGPU {
				gpus = append(gpus, d)
			}
		}
		require.Len(t, gpus, n)
		for _, g := range gpus {
			assert.Equal(t, "10de", g.VendorID)
			assert.Equal(t, product, g.ProductName)
		}
	})
}

func deviceScenarios() []fidelityScenario {
	return []fidelityScenario{
		{name: "node devices after commissioning", mutates: true, steps: withReady(devicesConsistent, deleteStep)},
		{name: "fewer GPUs of another model", faults: Faults{MissingGPUs: 2, OtherGPUModel: "a100-sxm4"}, mutates: true,
			steps: withReady(devicesConsistent, gpusAre(6, "GA100 [A100 SXM4 80GB]"), deleteStep)},
		{name: "all GPUs and a slow link", faults: Faults{SlowLinkMbps: 25000}, mutates: true,
			steps: withReady(devicesConsistent, gpusAre(8, "GH100 [H100 SXM5 80GB]"), step("the NIC links at 25000", func(t *testing.T, r *fidelityRun) {
				t.Helper()
				devs, err := r.env.d.NodeDevices(r.ctx, r.sid)
				require.NoError(t, err)
				var speeds []int
				for _, d := range devs {
					if d.HardwareType == hwTypeNetwork {
						speeds = append(speeds, d.LinkSpeed)
					}
				}
				assert.Equal(t, []int{25000}, speeds, "the host's one NIC trained down")
			}), deleteStep)},
	}
}
