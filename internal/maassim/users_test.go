package maassim

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
)

const testUserKey = "uk1234567890:ut1234567890:usersecretsignaturevalue"

func withUserKey(o *Options) { o.UserAPIKey = testUserKey }

func TestWhoamiTellsAdminFromUser(t *testing.T) {
	h := newHarness(t, withUserKey)
	assert.Equal(t, testUserKey, h.sim.UserAPIKey())

	admin := h.call(t, http.MethodGet, "users/", "whoami", nil)
	require.Equal(t, http.StatusOK, admin.code)
	assert.Equal(t, adminUser, admin.obj(t)["username"])
	assert.Equal(t, true, admin.obj(t)["is_superuser"])

	user := h.callAs(t, testUserKey, http.MethodGet, "users/", "whoami", nil)
	require.Equal(t, http.StatusOK, user.code)
	assert.Equal(t, regularUser, user.obj(t)["username"])
	assert.Equal(t, false, user.obj(t)["is_superuser"])
}

func TestGeneratedUserKeyDiffersFromAdminKey(t *testing.T) {
	s := New(Options{})
	defer s.Close()
	assert.NotEmpty(t, s.UserAPIKey())
	assert.NotEqual(t, s.APIKey(), s.UserAPIKey())
}

// The probe a site runs with a non-admin key reports it (maas-behaviour §13),
// end to end through maasflow's own client.
func TestProbeWithANonAdminKeyIsRefused(t *testing.T) {
	h := newHarness(t, withUserKey)

	user, err := maas.SiteProber{}.Probe(context.Background(), h.srv.URL+"/MAAS", domain.Secret(testUserKey))
	require.NoError(t, err)
	assert.Equal(t, regularUser, user.Username)
	assert.False(t, user.IsAdmin)
	assert.Contains(t, user.Problem(), "is not a MAAS administrator")

	res, err := maas.SiteProber{}.Probe(context.Background(), h.srv.URL+"/MAAS", domain.Secret(testKey))
	require.NoError(t, err)
	assert.True(t, res.IsAdmin)
	assert.Empty(t, res.Problem())
}

// What a non-admin key can and cannot do (maas-behaviour §5, §6, §9).
func TestNonAdminUserPermissions(t *testing.T) {
	h := newHarness(t, withUserKey)
	bmc := h.host(t, 1, Faults{})

	// Create: allowed, but the machine is not commissioned.
	r := h.callAs(t, testUserKey, http.MethodPost, "machines/", "", url.Values{
		"hostname": {"gpu-u1"}, "power_type": {"ipmi"}, "commission": {"true"},
		"power_parameters_power_address": {bmc},
		// With an architecture MAAS keeps the MAC (maas-behaviour §14.9).
		"architecture": {"amd64/generic"}, "mac_addresses": {"0c:c4:7a:00:00:01"},
	})
	require.Equal(t, http.StatusOK, r.code, "body: %s", r.body)
	sid := r.obj(t)["system_id"].(string)
	assert.Equal(t, "New", r.obj(t)["status_name"], "a non-admin's new machine stays New")

	// Admin operations: MAAS's empty 403; an unknown machine is still 404.
	refused := []struct{ method, path, op string }{
		{http.MethodPost, "machines/" + sid + "/", "commission"},
		{http.MethodPost, "machines/" + sid + "/", "set_storage_layout"},
		{http.MethodPost, "machines/" + sid + "/", "mark_fixed"},
		{http.MethodGet, "machines/" + sid + "/", "power_parameters"},
		{http.MethodGet, "machines/", "power_parameters"},
		{http.MethodDelete, "machines/" + sid + "/", ""},
	}
	for _, c := range refused {
		r := h.callAs(t, testUserKey, c.method, c.path, c.op, nil)
		assert.Equal(t, http.StatusForbidden, r.code, "%s %s op=%s: %s", c.method, c.path, c.op, r.body)
		assert.Empty(t, r.body, "%s %s op=%s", c.method, c.path, c.op)
	}
	iface := h.machine(t, sid)["interface_set"].([]any)[0].(map[string]any)["id"]
	r = h.callAs(t, testUserKey, http.MethodPost, "nodes/"+sid+"/interfaces/"+jsonNumber(iface)+"/", "link_subnet",
		url.Values{"mode": {"AUTO"}, "subnet": {"1"}})
	assert.Equal(t, http.StatusForbidden, r.code, "link_subnet: %s", r.body)
	r = h.callAs(t, testUserKey, http.MethodPost, "machines/nosuch/", "commission", nil)
	assert.Equal(t, http.StatusNotFound, r.code)

	// The admin key still commissions the same machine.
	r = h.call(t, http.MethodPost, "machines/"+sid+"/", "commission", nil)
	require.Equal(t, http.StatusOK, r.code, "body: %s", r.body)
	assert.Equal(t, "Commissioning", r.obj(t)["status_name"])
}

// Edit permission: a non-admin may not touch a machine another user owns.
func TestNonAdminCannotEditAnotherUsersMachine(t *testing.T) {
	h := newHarness(t, withUserKey)
	sid := h.ready(t, "gpu-a1", 2, Faults{})
	r := h.call(t, http.MethodPost, "machines/", "allocate", url.Values{"system_id": {sid}})
	require.Equal(t, http.StatusOK, r.code, "body: %s", r.body)

	r = h.callAs(t, testUserKey, http.MethodPost, "machines/"+sid+"/", "release", nil)
	assert.Equal(t, http.StatusForbidden, r.code, "release of the admin's machine: %s", r.body)
	assert.Equal(t, "Allocated", h.statusName(t, sid))
}

func jsonNumber(v any) string {
	f, _ := v.(float64)
	return itoa(int(f))
}
