package maassim

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRefusedTransitions pins MAAS's refusals: status code and exact text
// (maas-behaviour §5).
func TestRefusedTransitions(t *testing.T) {
	type setup func(t *testing.T, h *harness) string
	newMachine := func(t *testing.T, h *harness) string {
		t.Helper()
		return h.create(t, "gpu-new", h.host(t, 1, Faults{}), false)
	}
	ready := func(t *testing.T, h *harness) string {
		t.Helper()
		return h.ready(t, "gpu-ready", 1, Faults{})
	}
	deploying := func(t *testing.T, h *harness) string {
		t.Helper()
		sid := ready(t, h)
		require.Equal(t, http.StatusOK, h.call(t, http.MethodPost, "machines/"+sid+"/", "deploy", nil).code)
		return sid
	}
	deployed := func(t *testing.T, h *harness) string {
		t.Helper()
		sid := deploying(t, h)
		h.clock.Advance(8 * time.Minute)
		require.Equal(t, "Deployed", h.statusName(t, sid))
		return sid
	}
	erasing := func(t *testing.T, h *harness) string {
		t.Helper()
		sid := deployed(t, h)
		require.Equal(t, http.StatusOK, h.call(t, http.MethodPost, "machines/"+sid+"/", "release", url.Values{"erase": {"true"}}).code)
		return sid
	}
	tests := []struct {
		name   string
		setup  setup
		op     string
		params url.Values
		code   int
		body   string
	}{
		{"commission while Deployed", deployed, "commission", nil, http.StatusBadRequest,
			`{"__all__": ["Commission is not available because of the current state of the node."]}`},
		{"deploy while New", newMachine, "deploy", nil, http.StatusConflict, "Can't deploy a machine that is in the 'New' state"},
		{"deploy while Deploying", deploying, "deploy", nil, http.StatusConflict, "Can't deploy a machine that is in the 'Deploying' state"},
		{"release while New", newMachine, "release", nil, http.StatusConflict, "Machine cannot be released in its current state ('New')."},
		{"release while Disk erasing", erasing, "release", nil, http.StatusConflict, "Machine cannot be released in its current state ('Disk erasing')."},
		{"abort while Ready", ready, "abort", nil, http.StatusConflict, "Cannot abort in current state: node {sid} is in state Ready."},
		{"abort while Deployed", deployed, "abort", nil, http.StatusConflict, "Cannot abort in current state: node {sid} is in state Deployed."},
		{"mark_fixed while Ready", ready, "mark_fixed", nil, http.StatusConflict, "Can't mark a non-broken node as 'Ready'."},
		{"mark_broken unowned", ready, "mark_broken", nil, http.StatusForbidden, ""},
		{"power_on unallocated", ready, "power_on", nil, http.StatusConflict, "Can't start node: it hasn't been allocated."},
		{"storage layout while Deployed", deployed, "set_storage_layout", url.Values{"storage_layout": {"lvm"}},
			http.StatusConflict, "Cannot change the storage layout on a machine that is not Ready."},
		{"unknown storage layout", ready, "set_storage_layout", url.Values{"storage_layout": {"zfs"}},
			http.StatusBadRequest, `{"storage_layout": ["Select a valid choice. zfs is not one of the available choices."]}`},
		{"rescue mode while Deploying", deploying, "rescue_mode", nil, http.StatusConflict, "Invalid transition: Deploying -> Entering rescue mode."},
		{"exit rescue mode while Ready", ready, "exit_rescue_mode", nil, http.StatusConflict, "Invalid transition: Ready -> Exiting rescue mode."},
		{"lock while Ready", ready, "lock", nil, http.StatusConflict, "Can't lock, node is not deployed or deploying"},
		{"unlock while unlocked", deployed, "unlock", nil, http.StatusConflict, "Machine is not locked"},
		{"bad distro series", ready, "deploy", url.Values{"distro_series": {"warty"}}, http.StatusBadRequest,
			`{"distro_series": ["'warty' is not a valid distro_series.  It should be one of: '', 'ubuntu/focal', 'ubuntu/jammy', 'ubuntu/noble'."]}`},
		{"removed deploy option", ready, "deploy", url.Values{"install_kvm": {"true"}}, http.StatusBadRequest,
			"Support for install_kvm allocation parameter has been removed."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			sid := tc.setup(t, h)
			before := h.statusName(t, sid)
			r := h.call(t, http.MethodPost, "machines/"+sid+"/", tc.op, tc.params)
			assert.Equal(t, tc.code, r.code)
			want := tc.body
			if want != "" {
				want = replaceSID(want, sid)
			}
			assert.Equal(t, want, string(r.body))
			assert.Equal(t, before, h.statusName(t, sid), "a refused operation changes nothing")
		})
	}
}

func replaceSID(s, sid string) string {
	out := []byte{}
	for i := 0; i < len(s); i++ {
		if i+5 <= len(s) && s[i:i+5] == "{sid}" {
			out = append(out, sid...)
			i += 4
			continue
		}
		out = append(out, s[i])
	}
	return string(out)
}

// TestAllowedTransitions walks each operation MAAS allows and checks the
// immediate reply and where the machine ends up on the clock.
func TestAllowedTransitions(t *testing.T) {
	post := func(t *testing.T, h *harness, sid, op string, params url.Values) map[string]any {
		t.Helper()
		r := h.call(t, http.MethodPost, "machines/"+sid+"/", op, params)
		require.Equal(t, http.StatusOK, r.code, "body: %s", r.body)
		return r.obj(t)
	}
	t.Run("commission then test then ready, owner cleared", func(t *testing.T) {
		h := newHarness(t)
		sid := h.create(t, "gpu-1", h.host(t, 1, Faults{}), false)
		m := post(t, h, sid, "commission", nil)
		assert.EqualValues(t, 1, m["status"])
		assert.Equal(t, "admin", m["owner"])
		h.clock.Advance(2*time.Minute - time.Second)
		assert.Equal(t, "Commissioning", h.statusName(t, sid))
		h.clock.Advance(time.Second)
		assert.Equal(t, "Testing", h.statusName(t, sid))
		h.clock.Advance(time.Minute)
		m = h.machine(t, sid)
		assert.Equal(t, "Ready", m["status_name"])
		assert.Nil(t, m["owner"])
		assert.Equal(t, "Ready", m["status_message"])
		assert.Equal(t, "amd64/generic", m["architecture"])
		assert.EqualValues(t, 64, m["cpu_count"])
		assert.EqualValues(t, 2, m["commissioning_status"])
		assert.Equal(t, "Passed", m["testing_status_name"])
		assert.Equal(t, "off", m["power_state"])
	})
	t.Run("testing_scripts=none goes straight to Ready", func(t *testing.T) {
		h := newHarness(t)
		sid := h.create(t, "gpu-1", h.host(t, 1, Faults{}), false)
		post(t, h, sid, "commission", url.Values{"testing_scripts": {"none"}})
		h.clock.Advance(2 * time.Minute)
		assert.Equal(t, "Ready", h.statusName(t, sid))
	})
	t.Run("commissioning without skip_bmc_config replaces the BMC credentials", func(t *testing.T) {
		h := newHarness(t)
		sid := h.create(t, "gpu-1", h.host(t, 1, Faults{}), true)
		h.clock.Advance(3 * time.Minute)
		r := h.call(t, http.MethodGet, "machines/"+sid+"/", "power_parameters", nil)
		require.Equal(t, http.StatusOK, r.code)
		pp := r.obj(t)
		assert.Equal(t, "maas", pp["power_user"])
		assert.NotEqual(t, "bmc-password-1", pp["power_pass"])
		assert.Equal(t, "10.10.0.1", pp["power_address"])
	})
	t.Run("create commissions by default", func(t *testing.T) {
		h := newHarness(t)
		sid := h.create(t, "gpu-1", h.host(t, 1, Faults{}), true)
		assert.Equal(t, "Commissioning", h.statusName(t, sid))
	})
	t.Run("abort commissioning lands in New after the reply", func(t *testing.T) {
		h := newHarness(t)
		sid := h.create(t, "gpu-1", h.host(t, 1, Faults{}), true)
		m := post(t, h, sid, "abort", nil)
		assert.Equal(t, "Commissioning", m["status_name"], "abort is asynchronous")
		assert.Equal(t, "New", h.statusName(t, sid))
	})
	t.Run("deploy from Ready allocates implicitly", func(t *testing.T) {
		h := newHarness(t)
		sid := h.ready(t, "gpu-1", 1, Faults{})
		m := post(t, h, sid, "deploy", url.Values{"distro_series": {"ubuntu/noble"}})
		assert.Equal(t, "Deploying", m["status_name"])
		assert.Equal(t, "admin", m["owner"])
		assert.Equal(t, "noble", m["distro_series"])
		assert.Equal(t, "ga-24.04", m["hwe_kernel"])
		h.clock.Advance(8*time.Minute - time.Second)
		assert.Equal(t, "Deploying", h.statusName(t, sid))
		h.clock.Advance(time.Second)
		m = h.machine(t, sid)
		assert.Equal(t, "Deployed", m["status_name"])
		assert.Equal(t, []any{"10.20.0.2"}, m["ip_addresses"])
		assert.Equal(t, "on", m["power_state"])
	})
	t.Run("abort deploying returns to Allocated, still owned", func(t *testing.T) {
		h := newHarness(t)
		sid := h.ready(t, "gpu-1", 1, Faults{})
		post(t, h, sid, "deploy", nil)
		h.clock.Advance(time.Minute)
		m := post(t, h, sid, "abort", nil)
		assert.Equal(t, "Deploying", m["status_name"])
		m = h.machine(t, sid)
		assert.Equal(t, "Allocated", m["status_name"])
		assert.Equal(t, "admin", m["owner"])
		assert.Empty(t, m["ip_addresses"])
		h.clock.Advance(10 * time.Minute)
		assert.Equal(t, "Allocated", h.statusName(t, sid), "the aborted install never completes")
	})
	t.Run("abort disk erasing then release without erase", func(t *testing.T) {
		h := newHarness(t)
		sid := h.ready(t, "gpu-1", 1, Faults{})
		h.deployed(t, sid, "")
		post(t, h, sid, "release", url.Values{"erase": {"true"}})
		post(t, h, sid, "abort", nil)
		assert.Equal(t, "Failed disk erasing", h.statusName(t, sid))
		m := post(t, h, sid, "release", nil)
		assert.Equal(t, "Ready", m["status_name"], "a host already off releases inside the request")
	})
	t.Run("mark broken on Deployed, fixed back to Deployed", func(t *testing.T) {
		h := newHarness(t)
		sid := h.ready(t, "gpu-1", 1, Faults{})
		h.deployed(t, sid, "")
		m := post(t, h, sid, "mark_broken", url.Values{"comment": {"bad DIMM"}})
		assert.Equal(t, "Broken", m["status_name"])
		assert.Equal(t, "bad DIMM", m["error_description"])
		assert.Equal(t, "off", m["power_state"])
		m = post(t, h, sid, "mark_fixed", nil)
		assert.Equal(t, "Deployed", m["status_name"])
		assert.Equal(t, "", m["error_description"]) //nolint:testifylint // empty: the field must be present and a string, which Empty does not check
	})
	t.Run("mark broken on Allocated, fixed to Ready", func(t *testing.T) {
		h := newHarness(t)
		sid := h.ready(t, "gpu-1", 1, Faults{})
		require.Equal(t, http.StatusOK, h.call(t, http.MethodPost, "machines/", "allocate", url.Values{"system_id": {sid}}).code)
		post(t, h, sid, "mark_broken", nil)
		m := post(t, h, sid, "mark_fixed", nil)
		assert.Equal(t, "Ready", m["status_name"])
		assert.Nil(t, m["owner"])
	})
	t.Run("release from Broken completes at once", func(t *testing.T) {
		h := newHarness(t)
		sid := h.ready(t, "gpu-1", 1, Faults{})
		h.deployed(t, sid, "")
		post(t, h, sid, "mark_broken", nil)
		assert.Equal(t, "Ready", post(t, h, sid, "release", nil)["status_name"])
	})
	t.Run("release of Ready is a no-op", func(t *testing.T) {
		h := newHarness(t)
		sid := h.ready(t, "gpu-1", 1, Faults{})
		assert.Equal(t, "Ready", post(t, h, sid, "release", nil)["status_name"])
	})
	t.Run("release of a never-commissioned record lands in New", func(t *testing.T) {
		h := newHarness(t)
		sid, err := h.sim.AddMachine(MachineSeed{Hostname: "gpu-x", Status: "allocated"})
		require.NoError(t, err)
		m := post(t, h, sid, "release", nil)
		assert.Equal(t, "Releasing", m["status_name"])
		h.clock.Advance(5 * time.Minute)
		assert.Equal(t, "Releasing failed", h.statusName(t, sid), "no BMC answers: the power-off never comes")
		assert.True(t, hasEvent(h.events(t, sid), "Marking node failed", "Node operation 'Releasing' timed out after 5 minutes."))
	})
	t.Run("rescue mode round trip", func(t *testing.T) {
		h := newHarness(t)
		sid := h.ready(t, "gpu-1", 1, Faults{})
		assert.Equal(t, "Entering rescue mode", post(t, h, sid, "rescue_mode", nil)["status_name"])
		h.clock.Advance(time.Minute)
		assert.Equal(t, "Rescue mode", h.statusName(t, sid))
		assert.Equal(t, "Exiting rescue mode", post(t, h, sid, "exit_rescue_mode", nil)["status_name"])
		h.clock.Advance(time.Minute)
		assert.Equal(t, "Ready", h.statusName(t, sid))
	})
	t.Run("locked machine refuses edits with an empty 403", func(t *testing.T) {
		h := newHarness(t)
		sid := h.ready(t, "gpu-1", 1, Faults{})
		h.deployed(t, sid, "")
		post(t, h, sid, "lock", nil)
		r := h.call(t, http.MethodPost, "machines/"+sid+"/", "release", nil)
		assert.Equal(t, http.StatusForbidden, r.code)
		assert.Empty(t, r.body)
		r = h.call(t, http.MethodPost, "machines/"+sid+"/", "lock", nil)
		assert.Equal(t, "Machine is already locked", string(r.body))
		post(t, h, sid, "unlock", nil)
		assert.Equal(t, "Releasing", post(t, h, sid, "release", nil)["status_name"])
	})
	t.Run("storage layout on Ready", func(t *testing.T) {
		h := newHarness(t)
		sid := h.ready(t, "gpu-1", 1, Faults{})
		m := post(t, h, sid, "set_storage_layout", url.Values{"storage_layout": {"lvm"}})
		disks := m["physicalblockdevice_set"].([]any)
		require.Len(t, disks, 1)
		assert.Contains(t, disks[0].(map[string]any)["used_for"], "lvm")
	})
	t.Run("delete is 204 and then 404", func(t *testing.T) {
		h := newHarness(t)
		sid := h.ready(t, "gpu-1", 1, Faults{})
		r := h.call(t, http.MethodDelete, "machines/"+sid+"/", "", nil)
		assert.Equal(t, http.StatusNoContent, r.code)
		assert.Empty(t, r.body)
		r = h.call(t, http.MethodGet, "machines/"+sid+"/", "", nil)
		assert.Equal(t, http.StatusNotFound, r.code)
		assert.Equal(t, "No Machine matches the given query.", string(r.body))
	})
}

func TestAllocate(t *testing.T) {
	h := newHarness(t)
	r := h.call(t, http.MethodPost, "machines/", "allocate", nil)
	assert.Equal(t, http.StatusConflict, r.code)
	assert.Equal(t, "No machine available.", string(r.body))

	sid := h.ready(t, "gpu-1", 1, Faults{})
	tests := []struct {
		name   string
		params url.Values
		code   int
		body   string
	}{
		{"hostname is not a constraint", url.Values{"hostname": {"gpu-1"}}, http.StatusBadRequest, `{"hostname": ["No such constraint."]}`},
		{"unknown name", url.Values{"name": {"gpu-9"}}, http.StatusConflict,
			`No available machine matches constraints: [('name', ['gpu-9'])] (resolved to "name=gpu-9")`},
		{"unknown system id", url.Values{"system_id": {"xxxxxx"}}, http.StatusConflict, "No machine with system ID xxxxxx available."},
		{"unknown zone", url.Values{"zone": {"rack9"}}, http.StatusBadRequest, `{"zone": ["No such zone: 'rack9'."]}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := h.call(t, http.MethodPost, "machines/", "allocate", tc.params)
			assert.Equal(t, tc.code, r.code)
			assert.Equal(t, tc.body, string(r.body))
		})
	}
	r = h.call(t, http.MethodPost, "machines/", "allocate", url.Values{"name": {"gpu-1.maas"}, "comment": {"x"}, "agent_name": {"maasflow"}})
	require.Equal(t, http.StatusOK, r.code, "body: %s", r.body)
	m := r.obj(t)
	assert.Equal(t, sid, m["system_id"])
	assert.Equal(t, "Allocated", m["status_name"])
	assert.Equal(t, map[string]any{}, m["constraints_by_type"], "allocate replies carry constraints_by_type")
	r = h.call(t, http.MethodGet, "machines/", "list_allocated", nil)
	var list []map[string]any
	r.json(t, &list)
	require.Len(t, list, 1)
	assert.Equal(t, sid, list[0]["system_id"])
}

func TestCreateMachine(t *testing.T) {
	tests := []struct {
		name   string
		params url.Values
		code   int
		check  func(t *testing.T, h *harness, r apiResp)
	}{
		{"ipmi without architecture drops the MACs", url.Values{"power_type": {"ipmi"}, "hostname": {"gpu-a"}, "commission": {"false"},
			"power_parameters_power_address": {"10.10.0.1"}, "mac_addresses": {"0c:c4:7a:00:00:01"}}, http.StatusOK,
			func(t *testing.T, h *harness, r apiResp) {
				t.Helper()
				m := r.obj(t)
				assert.Empty(t, m["interface_set"])
				assert.Equal(t, "New", m["status_name"])
				assert.Equal(t, "ipmi", m["power_type"])
				assert.Equal(t, "off", m["power_state"], "linked to its host by BMC address")
			}},
		{"architecture keeps the MACs", url.Values{"power_type": {"ipmi"}, "architecture": {"amd64"}, "commission": {"false"},
			"power_parameters_power_address": {"10.10.0.1"}, "mac_addresses": {"0C:C4:7A:00:00:01"}}, http.StatusOK,
			func(t *testing.T, h *harness, r apiResp) {
				t.Helper()
				m := r.obj(t)
				require.Len(t, m["interface_set"], 1)
				assert.Equal(t, "0c:c4:7a:00:00:01", m["interface_set"].([]any)[0].(map[string]any)["mac_address"])
				assert.Equal(t, "amd64/generic", m["architecture"])
				assert.NotEmpty(t, m["hostname"], "MAAS names a machine created without hostname")
			}},
		{"bad power type", url.Values{"power_type": {"ilo9"}}, http.StatusBadRequest, func(t *testing.T, h *harness, r apiResp) {
			t.Helper()
			assert.Equal(t, `{"power_type": ["Select a valid choice. ilo9 is not one of the available choices."]}`, string(r.body))
		}},
		{"bad MAC", url.Values{"architecture": {"amd64/generic"}, "mac_addresses": {"zz"}}, http.StatusBadRequest, func(t *testing.T, h *harness, r apiResp) {
			t.Helper()
			assert.Equal(t, `{"mac_addresses": ["'zz' is not a valid MAC address."]}`, string(r.body))
		}},
		{"ipmi with architecture and no MAC", url.Values{"power_type": {"ipmi"}, "hostname": {"gpu-a"}, "architecture": {"amd64/generic"},
			"commission": {"false"}, "power_parameters_power_address": {"10.10.0.1"}}, http.StatusOK,
			func(t *testing.T, h *harness, r apiResp) {
				t.Helper()
				m := r.obj(t)
				assert.Equal(t, "New", m["status_name"])
				assert.Equal(t, "amd64/generic", m["architecture"], "the architecture is kept")
				assert.Empty(t, m["interface_set"])
				assert.Equal(t, "off", m["power_state"], "linked to its host by BMC address")
				// Commissioning PXE-boots the host and records its NICs.
				sid := m["system_id"].(string)
				c := h.call(t, http.MethodPost, "machines/"+sid+"/", "commission", url.Values{"skip_bmc_config": {"1"}})
				require.Equal(t, http.StatusOK, c.code, "body: %s", c.body)
				h.clock.Advance(3 * time.Minute)
				m = h.machine(t, sid)
				assert.Equal(t, "Ready", m["status_name"])
				require.Len(t, m["interface_set"], 1)
				assert.Equal(t, "0c:c4:7a:00:00:01", m["interface_set"].([]any)[0].(map[string]any)["mac_address"])
			}},
		{"ipmi with neither architecture nor MAC", url.Values{"power_type": {"ipmi"}, "hostname": {"gpu-a"}, "commission": {"false"},
			"power_parameters_power_address": {"10.10.0.1"}}, http.StatusOK,
			func(t *testing.T, h *harness, r apiResp) {
				t.Helper()
				m := r.obj(t)
				assert.Equal(t, "New", m["status_name"])
				assert.Empty(t, m["architecture"])
				assert.Empty(t, m["interface_set"])
				assert.Equal(t, "off", m["power_state"], "linked to its host by BMC address")
			}},
		{"manual power without MAC", url.Values{"architecture": {"amd64/generic"}, "power_type": {"manual"}}, http.StatusBadRequest,
			func(t *testing.T, h *harness, r apiResp) {
				t.Helper()
				assert.Equal(t, `{"mac_addresses": ["This field is required."], `+
					`"power_type": ["Can't set power type to manual without network interfaces"]}`, string(r.body))
			}},
		{"redfish power with a blank MAC", url.Values{"architecture": {"amd64/generic"}, "power_type": {"redfish"}, "mac_addresses": {""}},
			http.StatusBadRequest, func(t *testing.T, h *harness, r apiResp) {
				t.Helper()
				assert.Equal(t, `{"mac_addresses": ["This field is required."], `+
					`"power_type": ["Can't set power type to redfish without network interfaces"]}`, string(r.body))
			}},
		{"no power type needs architecture and MAC", url.Values{"hostname": {"gpu-a"}}, http.StatusBadRequest,
			func(t *testing.T, h *harness, r apiResp) {
				t.Helper()
				assert.Equal(t, `{"architecture": ["This field is required."], "mac_addresses": ["This field is required."]}`, string(r.body))
			}},
		{"duplicate hostname", url.Values{"power_type": {"ipmi"}, "hostname": {"taken"}, "power_parameters_power_address": {"10.10.0.1"}},
			http.StatusBadRequest, func(t *testing.T, h *harness, r apiResp) {
				t.Helper()
				assert.Equal(t, `{"hostname": ["Node with this Hostname already exists."]}`, string(r.body))
			}},
		{"duplicate MAC", url.Values{"architecture": {"amd64"}, "mac_addresses": {"0c:c4:7a:00:00:99"}, "power_type": {"manual"}},
			http.StatusBadRequest, func(t *testing.T, h *harness, r apiResp) {
				t.Helper()
				assert.Equal(t, `{"mac_addresses": ["MAC address 0c:c4:7a:00:00:99 already in use on taken."]}`, string(r.body))
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.host(t, 1, Faults{})
			_, err := h.sim.AddMachine(MachineSeed{Hostname: "taken", BMCIP: "10.10.0.99", PXEMAC: "0c:c4:7a:00:00:99", Status: "ready"})
			require.NoError(t, err)
			r := h.call(t, http.MethodPost, "machines/", "", tc.params)
			require.Equal(t, tc.code, r.code, "body: %s", r.body)
			tc.check(t, h, r)
		})
	}
}

func TestUpdatePowerTypeNeedsInterfaces(t *testing.T) {
	h := newHarness(t)
	sid := h.create(t, "gpu-a", h.host(t, 1, Faults{}), false)
	put := func(pt string) apiResp {
		return h.call(t, http.MethodPut, "machines/"+sid+"/", "", url.Values{"power_type": {pt}})
	}
	r := h.call(t, http.MethodPut, "machines/"+sid+"/", "", url.Values{"power_type": {"manual"}, "hostname": {"gpu-renamed"}})
	assert.Equal(t, http.StatusBadRequest, r.code)
	assert.Equal(t, `{"power_type": ["Can't set power type to manual without network interfaces"]}`, string(r.body))
	m := h.machine(t, sid)
	assert.Equal(t, "ipmi", m["power_type"], "nothing changed")
	assert.Equal(t, "gpu-a", m["hostname"], "the request was rolled back whole")

	r = h.call(t, http.MethodPost, "machines/"+sid+"/", "commission", url.Values{"skip_bmc_config": {"1"}})
	require.Equal(t, http.StatusOK, r.code, "body: %s", r.body)
	h.clock.Advance(3 * time.Minute)
	r = put("manual")
	require.Equal(t, http.StatusOK, r.code, "body: %s", r.body)
	assert.Equal(t, "manual", r.obj(t)["power_type"], "commissioning gave it interfaces")
}

func TestListFilters(t *testing.T) {
	h := newHarness(t)
	a := h.ready(t, "gpu-a", 1, Faults{})
	b := h.create(t, "gpu-b", h.host(t, 2, Faults{}), false)
	tests := []struct {
		name   string
		params url.Values
		want   []string
	}{
		{"all, by id", nil, []string{a, b}},
		{"hostname", url.Values{"hostname": {"gpu-b"}}, []string{b}},
		{"fqdn", url.Values{"hostname": {"gpu-a.maas"}}, []string{a}},
		{"status name", url.Values{"status": {"ready"}}, []string{a}},
		{"two statuses", url.Values{"status": {"ready", "new"}}, []string{a, b}},
		{"MAC of the PXE NIC", url.Values{"mac_address": {"0C:C4:7A:00:00:01"}}, []string{a}},
		{"id", url.Values{"id": {b}}, []string{b}},
		{"hostname and status AND", url.Values{"hostname": {"gpu-a"}, "status": {"new"}}, []string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := h.call(t, http.MethodGet, "machines/", "", tc.params)
			require.Equal(t, http.StatusOK, r.code, "body: %s", r.body)
			var list []map[string]any
			r.json(t, &list)
			got := []string{}
			for _, m := range list {
				got = append(got, m["system_id"].(string))
			}
			assert.Equal(t, tc.want, got)
		})
	}
	r := h.call(t, http.MethodGet, "machines/", "", url.Values{"status": {"6"}})
	assert.Equal(t, `{"status": ["Select a valid choice. 6 is not one of the available choices."]}`, string(r.body))
	r = h.call(t, http.MethodGet, "machines/", "", url.Values{"mac_address": {"nope"}})
	assert.Equal(t, `{"mac_address": ["'nope' is not a valid MAC address."]}`, string(r.body))
	r = h.call(t, http.MethodGet, "machines/", "", url.Values{"colour": {"red"}})
	assert.Equal(t, `{"colour": ["No such constraint."]}`, string(r.body))
}

func TestSystemIDsAreSeeded(t *testing.T) {
	ids := func(seed int64) []string {
		h := newHarness(t, func(o *Options) { o.Seed = seed })
		var out []string
		for n := 1; n <= 5; n++ {
			sid, err := h.sim.AddMachine(MachineSeed{Hostname: "h", Status: "new"})
			require.NoError(t, err)
			require.Len(t, sid, 6)
			for _, c := range sid {
				require.Contains(t, systemIDAlphabet, string(c))
			}
			out = append(out, sid)
		}
		return out
	}
	first, again := ids(7), ids(7)
	assert.Equal(t, first, again, "the same seed gives the same IDs")
	assert.NotEqual(t, ids(7), ids(8))
}
