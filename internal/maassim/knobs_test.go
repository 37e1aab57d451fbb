package maassim

import (
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pxeInterface returns the machine's PXE (boot) interface as MAAS renders it.
func (h *harness) pxeInterface(t *testing.T, sid string) map[string]any {
	t.Helper()
	r := h.call(t, http.MethodGet, "nodes/"+sid+"/interfaces/", "", nil)
	require.Equal(t, http.StatusOK, r.code, "body: %s", r.body)
	var ifaces []map[string]any
	r.json(t, &ifaces)
	require.NotEmpty(t, ifaces)
	boot := h.machine(t, sid)["boot_interface"].(map[string]any)
	for _, i := range ifaces {
		if i["id"] == boot["id"] {
			return i
		}
	}
	t.Fatalf("boot interface %v not listed", boot["id"])
	return nil
}

func requireDiscoveredLease(t *testing.T, iface map[string]any) {
	t.Helper()
	discovered, ok := iface["discovered"].([]any)
	require.True(t, ok, "discovered must be a list: %v", iface["discovered"])
	require.Len(t, discovered, 1)
	d := discovered[0].(map[string]any)
	ip, err := netip.ParseAddr(d["ip_address"].(string))
	require.NoError(t, err)
	assert.True(t, netip.MustParsePrefix("10.20.0.0/24").Contains(ip))
	assert.GreaterOrEqual(t, ip.As4()[3], byte(200), "a lease from the dynamic range")
	assert.Equal(t, "10.20.0.0/24", d["subnet"].(map[string]any)["cidr"], "the subnet as a whole object")
}

// By default the PXE interface is AUTO-linked to the subnet it was
// discovered on, and discovered shows the lease (maas-behaviour §9).
func TestCommissioningRecordsDiscoveredLease(t *testing.T) {
	h := newHarness(t)
	sid := h.ready(t, "gpu-d1", 1, Faults{})
	iface := h.pxeInterface(t, sid)
	requireDiscoveredLease(t, iface)
	links := iface["links"].([]any)
	require.Len(t, links, 1)
	assert.Equal(t, "auto", links[0].(map[string]any)["mode"])
}

// pxe_link_up_only: the boot interface keeps its VLAN but has only a
// link_up link with no subnet; discovered still names the subnet. Deploy
// refuses until the interface is linked, and AUTO replaces the link_up link.
func TestPXELinkUpOnlyFault(t *testing.T) {
	h := newHarness(t)
	sid := h.ready(t, "gpu-l1", 1, Faults{PXELinkUpOnly: true})

	iface := h.pxeInterface(t, sid)
	require.NotNil(t, iface["vlan"], "still on its VLAN")
	assert.InDelta(t, 5001, iface["vlan"].(map[string]any)["id"], 0)
	links := iface["links"].([]any)
	require.Len(t, links, 1)
	link := links[0].(map[string]any)
	assert.Equal(t, "link_up", link["mode"])
	assert.NotContains(t, link, "subnet", "a link_up link has no subnet")
	assert.NotContains(t, link, "ip_address")
	requireDiscoveredLease(t, iface)

	r := h.call(t, http.MethodPost, "machines/"+sid+"/", "deploy", nil)
	assert.Equal(t, http.StatusBadRequest, r.code)
	assert.JSONEq(t, `{"network": ["Node must be configured to use a network"]}`, string(r.body))

	ifaceID := strconv.Itoa(int(iface["id"].(float64)))
	r = h.call(t, http.MethodPost, "nodes/"+sid+"/interfaces/"+ifaceID+"/", "link_subnet",
		url.Values{"mode": {"AUTO"}, "subnet": {"1"}})
	require.Equal(t, http.StatusOK, r.code, "body: %s", r.body)
	links = r.obj(t)["links"].([]any)
	require.Len(t, links, 1, "AUTO replaces the link_up link")
	assert.Equal(t, "auto", links[0].(map[string]any)["mode"])

	r = h.call(t, http.MethodPost, "machines/"+sid+"/", "deploy", nil)
	assert.Equal(t, http.StatusOK, r.code, "body: %s", r.body)
}

// pxe_not_discovered: commissioning saw no lease, discovered is null.
func TestPXENotDiscoveredFault(t *testing.T) {
	h := newHarness(t)
	sid := h.ready(t, "gpu-n1", 1, Faults{PXELinkUpOnly: true, PXENotDiscovered: true})
	iface := h.pxeInterface(t, sid)
	assert.Contains(t, iface, "discovered")
	assert.Nil(t, iface["discovered"], "null, as MAAS renders no discovered address")
	assert.Equal(t, "link_up", iface["links"].([]any)[0].(map[string]any)["mode"])
}

// ClockSkew shifts every timestamp MAAS writes, never the event ids.
func TestClockSkewShiftsMAASTimestamps(t *testing.T) {
	for _, skew := range []time.Duration{-10 * time.Minute, 10 * time.Minute} {
		t.Run(skew.String(), func(t *testing.T) {
			h := newHarness(t, func(o *Options) { o.ClockSkew = skew })
			sid := h.create(t, "gpu-s1", h.host(t, 1, Faults{}), true)

			events := h.events(t, sid)
			require.NotEmpty(t, events)
			want := testStart.Add(skew).UTC().Format(eventTimeFormat)
			for _, e := range events {
				assert.Equal(t, want, e.Created, "event %d %s", e.ID, e.Type)
			}

			// Events after an id are found by id whatever the clocks say.
			h.clock.Advance(time.Minute)
			r := h.call(t, http.MethodGet, "events/", "query", url.Values{
				"id": {sid}, "level": {"DEBUG"}, "after": {strconv.Itoa(events[0].ID)},
			})
			require.Equal(t, http.StatusOK, r.code)
			var later struct {
				Events []eventJSON `json:"events"`
			}
			r.json(t, &later)
			require.NotEmpty(t, later.Events, "the 'Loading ephemeral' and 'Commissioning' events")
			for _, e := range later.Events {
				assert.Greater(t, e.ID, events[0].ID)
				assert.Equal(t, testStart.Add(time.Minute/2+skew).UTC().Format(eventTimeFormat), e.Created)
			}

			h.clock.Advance(2 * time.Minute)
			r = h.call(t, http.MethodGet, "nodes/"+sid+"/results/current-commissioning/", "", nil)
			require.Equal(t, http.StatusOK, r.code, "body: %s", r.body)
			set := r.obj(t)
			assert.Equal(t, testStart.Add(time.Minute/2+skew).UTC().Format(resultTimeFormat), set["started"])
			res := set["results"].([]any)[0].(map[string]any)
			assert.InDelta(t, float64(testStart.Add(time.Minute/2+skew).Unix()), res["starttime"], 0.001)
		})
	}
}

// no_boot_until_power_cycle: the first power-on hangs the host; commissioning
// waits, a power_off + power_on boots it and commissioning completes.
func TestNoBootUntilPowerCycle(t *testing.T) {
	h := newHarness(t)
	sid := h.create(t, "gpu-p1", h.host(t, 1, Faults{NoBootUntilPowerCycle: true}), true)

	h.clock.Advance(10 * time.Minute)
	assert.Equal(t, "Commissioning", h.statusName(t, sid))
	assert.False(t, hasEvent(h.events(t, sid), "Performing PXE boot", ""), "a hung host never asks for PXE")
	assert.Equal(t, "on", h.machine(t, sid)["power_state"], "the BMC reports power on all the same")

	// power_on on a host that is already on does not boot it.
	r := h.call(t, http.MethodPost, "machines/"+sid+"/", "power_on", nil)
	require.Equal(t, http.StatusOK, r.code, "body: %s", r.body)
	assert.False(t, hasEvent(h.events(t, sid), "Performing PXE boot", ""))

	r = h.call(t, http.MethodPost, "machines/"+sid+"/", "power_off", nil)
	require.Equal(t, http.StatusOK, r.code, "body: %s", r.body)
	assert.Equal(t, "Commissioning", h.statusName(t, sid), "power_off does not end commissioning")
	r = h.call(t, http.MethodPost, "machines/"+sid+"/", "power_on", nil)
	require.Equal(t, http.StatusOK, r.code, "body: %s", r.body)
	assert.True(t, hasEvent(h.events(t, sid), "Performing PXE boot", ""))

	h.clock.Advance(3 * time.Minute)
	assert.Equal(t, "Ready", h.statusName(t, sid))

	// The fault was consumed: the next commissioning boots at once.
	r = h.call(t, http.MethodPost, "machines/"+sid+"/", "commission", nil)
	require.Equal(t, http.StatusOK, r.code, "body: %s", r.body)
	h.clock.Advance(3 * time.Minute)
	assert.Equal(t, "Ready", h.statusName(t, sid))
}

// Without a power cycle MAAS's node_timeout fails the commissioning.
func TestNoBootUntilPowerCycleTimesOut(t *testing.T) {
	h := newHarness(t)
	sid := h.create(t, "gpu-p2", h.host(t, 1, Faults{NoBootUntilPowerCycle: true}), true)

	h.clock.Advance(30*time.Minute - time.Second)
	assert.Equal(t, "Commissioning", h.statusName(t, sid))
	h.clock.Advance(time.Second)
	m := h.machine(t, sid)
	assert.Equal(t, "Failed commissioning", m["status_name"])
	assert.Equal(t, "Node operation 'Commissioning' timed out after 30 minutes.", m["error_description"])
	assert.True(t, hasEvent(h.events(t, sid), "Marking node failed", "timed out after 30 minutes"))
}

// never_boots: no power cycle boots the host; MAAS's node_timeout fails
// the commissioning.
func TestNeverBootsIgnoresPowerCycles(t *testing.T) {
	h := newHarness(t)
	sid := h.create(t, "gpu-p4", h.host(t, 1, Faults{NeverBoots: true}), true)
	h.clock.Advance(10 * time.Minute)
	assert.EqualValues(t, 0, h.machine(t, sid)["commissioning_status"], "the scripts are pending")
	for range 2 {
		r := h.call(t, http.MethodPost, "machines/"+sid+"/", "power_off", nil)
		require.Equal(t, http.StatusOK, r.code, "body: %s", r.body)
		r = h.call(t, http.MethodPost, "machines/"+sid+"/", "power_on", nil)
		require.Equal(t, http.StatusOK, r.code, "body: %s", r.body)
	}
	assert.False(t, hasEvent(h.events(t, sid), "Performing PXE boot", ""))
	h.clock.Advance(20 * time.Minute)
	assert.Equal(t, "Failed commissioning", h.statusName(t, sid))
}

// A normal commissioning is not touched by the timeout that guards it.
func TestCommissioningTimeoutSparesAFinishedCommissioning(t *testing.T) {
	h := newHarness(t)
	sid := h.ready(t, "gpu-p3", 1, Faults{})
	h.clock.Advance(40 * time.Minute)
	assert.Equal(t, "Ready", h.statusName(t, sid))
}

// SecondSubnet puts two subnets on the PXE VLAN; either can be linked.
func TestSecondSubnetOnThePXEVLAN(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.SecondSubnet = true })
	r := h.call(t, http.MethodGet, "subnets/", "", nil)
	require.Equal(t, http.StatusOK, r.code)
	var subnets []map[string]any
	r.json(t, &subnets)
	require.Len(t, subnets, 2)
	assert.Equal(t, "10.20.0.0/24", subnets[0]["cidr"])
	assert.Equal(t, "10.21.0.0/24", subnets[1]["cidr"])
	assert.Equal(t, "10.21.0.1", subnets[1]["gateway_ip"])
	for _, sn := range subnets {
		assert.InDelta(t, 5001, sn["vlan"].(map[string]any)["id"], 0, "both on the PXE VLAN")
	}

	sid := h.ready(t, "gpu-t1", 1, Faults{PXELinkUpOnly: true, PXENotDiscovered: true})
	iface := h.pxeInterface(t, sid)
	ifaceID := strconv.Itoa(int(iface["id"].(float64)))
	r = h.call(t, http.MethodPost, "nodes/"+sid+"/interfaces/"+ifaceID+"/", "link_subnet",
		url.Values{"mode": {"AUTO"}, "subnet": {"10.21.0.0/24"}})
	require.Equal(t, http.StatusOK, r.code, "body: %s", r.body)
	h.deployed(t, sid, "")
	ips := h.machine(t, sid)["ip_addresses"].([]any)
	require.Len(t, ips, 1)
	ip, err := netip.ParseAddr(ips[0].(string))
	require.NoError(t, err)
	assert.True(t, netip.MustParsePrefix("10.21.0.0/24").Contains(ip), "the AUTO address comes from the linked subnet: %s", ip)
}
