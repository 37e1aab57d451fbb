package maas_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/internal/maassim"
	"github.com/maasflow/maasflow/shared/clock"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
)

const devicesKey = "ck-devices:tk-devices:devices-secret"

// readyHost adds a host with two extra NICs and the given faults to a
// simulated region, seeds a Ready machine for it and returns a client and
// the machine's system id.
func readyHost(t *testing.T, faults maassim.Faults) (*maas.Client, string) {
	t.Helper()
	sim := maassim.New(maassim.Options{APIKey: devicesKey, Clock: clock.NewFake(time.Date(2025, 1, 7, 10, 0, 0, 0, time.UTC)), Seed: 3})
	srv := httptest.NewServer(sim)
	t.Cleanup(func() {
		srv.Close()
		sim.Close()
	})
	require.NoError(t, sim.AddHardware(maassim.Hardware{
		BMCIP: "10.0.0.21", PXEMAC: "0c:c4:7a:00:00:21",
		ExtraMACs: []string{"0c:c4:7a:00:01:21", "0c:c4:7a:00:02:21"}, Faults: faults,
	}))
	sid, err := sim.AddMachine(maassim.MachineSeed{Hostname: "gpu-21", BMCIP: "10.0.0.21", Status: "ready"})
	require.NoError(t, err)
	c, err := maas.NewClient(srv.URL+"/MAAS", domain.Secret(devicesKey))
	require.NoError(t, err)
	return c, sid
}

func byType(devs []maas.NodeDevice) map[maas.HardwareType][]maas.NodeDevice {
	out := map[maas.HardwareType][]maas.NodeDevice{}
	for _, d := range devs {
		out[d.HardwareType] = append(out[d.HardwareType], d)
	}
	return out
}

// The client reads what the simulator models: eight H100 SXM5 GPUs, each
// NIC with its interface (MAC, link speed) and the disk with its block
// device, all by PCI address.
func TestNodeDevicesFromTheSimulator(t *testing.T) {
	c, sid := readyHost(t, maassim.Faults{})
	ctx := context.Background()
	devs, err := c.NodeDevices(ctx, sid)
	require.NoError(t, err)
	got := byType(devs)

	require.Len(t, got[maas.HardwareGPU], 8)
	for _, g := range got[maas.HardwareGPU] {
		assert.Equal(t, "10de", g.VendorID)
		assert.Equal(t, "GH100 [H100 SXM5 80GB]", g.ProductName)
		assert.Regexp(t, `^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$`, g.PCIAddress)
		assert.Equal(t, "PCIE", g.Bus)
	}

	ifaces, err := c.Interfaces(ctx, sid)
	require.NoError(t, err)
	nameByMAC := map[string]string{}
	for _, i := range ifaces {
		nameByMAC[i.MACAddress] = i.Name
	}
	require.Len(t, got[maas.HardwareNetwork], 3)
	for _, n := range got[maas.HardwareNetwork] {
		require.NotNil(t, n.Interface, n.PCIAddress)
		assert.Equal(t, nameByMAC[n.Interface.MACAddress], n.Interface.Name, "the NIC is one of the machine's interfaces")
		assert.Equal(t, 100000, n.Interface.LinkSpeed)
	}

	require.Len(t, got[maas.HardwareStorage], 1)
	disk := got[maas.HardwareStorage][0]
	require.NotNil(t, disk.BlockDevice)
	assert.Equal(t, "nvme0n1", disk.BlockDevice.Name)
	assert.Positive(t, disk.BlockDevice.SizeBytes)
	assert.NotEmpty(t, disk.BlockDevice.Serial)
}

func TestNodeDevicesShowHardwareFaults(t *testing.T) {
	ctx := context.Background()
	for name, tc := range map[string]struct {
		faults maassim.Faults
		check  func(t *testing.T, got map[maas.HardwareType][]maas.NodeDevice)
	}{
		"fewer GPUs": {maassim.Faults{MissingGPUs: 2}, func(t *testing.T, got map[maas.HardwareType][]maas.NodeDevice) {
			t.Helper()
			assert.Len(t, got[maas.HardwareGPU], 6)
		}},
		"another GPU model": {maassim.Faults{OtherGPUModel: "a100-sxm4"}, func(t *testing.T, got map[maas.HardwareType][]maas.NodeDevice) {
			t.Helper()
			require.Len(t, got[maas.HardwareGPU], 8)
			assert.Equal(t, "GA100 [A100 SXM4 80GB]", got[maas.HardwareGPU][0].ProductName)
			assert.Equal(t, "20b2", got[maas.HardwareGPU][0].ProductID)
		}},
		"a missing NIC": {maassim.Faults{MissingNICs: 1}, func(t *testing.T, got map[maas.HardwareType][]maas.NodeDevice) {
			t.Helper()
			assert.Len(t, got[maas.HardwareNetwork], 2)
		}},
		"a slower link": {maassim.Faults{SlowLinkMbps: 25000}, func(t *testing.T, got map[maas.HardwareType][]maas.NodeDevice) {
			t.Helper()
			nics := got[maas.HardwareNetwork]
			require.Len(t, nics, 3)
			assert.Equal(t, 25000, nics[2].Interface.LinkSpeed)
			assert.Equal(t, 100000, nics[2].Interface.InterfaceSpeed)
		}},
		"a missing disk": {maassim.Faults{MissingDisks: 1}, func(t *testing.T, got map[maas.HardwareType][]maas.NodeDevice) {
			t.Helper()
			assert.Empty(t, got[maas.HardwareStorage])
		}},
	} {
		t.Run(name, func(t *testing.T) {
			c, sid := readyHost(t, tc.faults)
			devs, err := c.NodeDevices(ctx, sid)
			require.NoError(t, err)
			tc.check(t, byType(devs))
		})
	}
}

func TestNodeDevicesOfAnUnknownMachine(t *testing.T) {
	c, _ := readyHost(t, maassim.Faults{})
	_, err := c.NodeDevices(context.Background(), "nosuch")
	var nf *maas.MAASNotFoundError
	require.ErrorAs(t, err, &nf)
	assert.Equal(t, "No Node matches the given query.", nf.Message)
}
