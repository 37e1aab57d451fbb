package api

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/secrets"
)

func TestPowerOverrideIsWriteOnly(t *testing.T) {
	h := newHarness(t)
	fx := h.fixture()
	path := "/api/v1/admin/maas-sites/" + fx.site + "/power-overrides"
	const pass = "override-Pa55-never-echoed"

	got := h.admin("POST", path, map[string]any{"hostname": "GPU-07", "bmc_username": "admin", "bmc_password": pass})
	require.Equal(t, http.StatusOK, got.status, "%s", got.body)
	assert.NotContains(t, string(got.body), pass)
	assert.NotContains(t, string(got.body), "admin\"", "the user is not echoed either")
	assert.JSONEq(t, `{"site_id":"`+fx.site+`","hostname":"gpu-07","set":true}`, string(got.body))
	creds, ok, err := secrets.GetPowerOverride(t.Context(), h.secrets, fx.site, domain.PowerOverrideKeyHost("gpu-07"))
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "admin", creds.Username)
	assert.Equal(t, pass, creds.Password.Reveal())

	byBMC := h.mustAdmin(http.StatusOK, "POST", path, map[string]any{"bmc_address": "10.0.0.7", "bmc_username": "root", "bmc_password": pass})
	assert.Equal(t, "10.0.0.7", byBMC["bmc_address"])
	_, ok, err = secrets.GetPowerOverride(t.Context(), h.secrets, fx.site, domain.PowerOverrideKeyBMC("10.0.0.7"))
	require.NoError(t, err)
	assert.True(t, ok)

	for _, tc := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"bmc_username": "u", "bmc_password": "p"}, "hostname"},
		{map[string]any{"hostname": "h", "bmc_address": "10.0.0.1", "bmc_username": "u", "bmc_password": "p"}, "bmc_address"},
		{map[string]any{"bmc_address": "bmc.example", "bmc_username": "u", "bmc_password": "p"}, "bmc_address"},
		{map[string]any{"hostname": "h", "bmc_password": "p"}, "bmc_username"},
		{map[string]any{"hostname": "h", "bmc_username": "u"}, "bmc_password"},
	} {
		r := h.admin("POST", path, tc.body)
		assert.Equal(t, http.StatusBadRequest, r.status, "%v: %s", tc.body, r.body)
		assert.Equal(t, tc.field, r.json(t)["error"].(map[string]any)["field"], "%v", tc.body)
	}
	assert.Equal(t, http.StatusNotFound, h.admin("POST", "/api/v1/admin/maas-sites/nope/power-overrides",
		map[string]any{"hostname": "h", "bmc_username": "u", "bmc_password": "p"}).status)
	assert.NotEmpty(t, h.auditFor("site.power_override.write"))
	assert.NotContains(t, h.logs.String(), pass, "never logged")
}
