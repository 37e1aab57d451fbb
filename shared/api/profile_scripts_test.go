package api

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestProfileScriptsAreStoredAndPatched(t *testing.T) {
	h := newHarness(t)
	site := h.readySite("dc1")
	created := h.mustAdmin(http.StatusCreated, "POST", "/api/v1/admin/maas-sites/"+site+"/profiles", map[string]any{
		"name": "h100", "architecture": "amd64/generic", "distro_series": "jammy",
		"commissioning_scripts": []string{"firmware-update", "raid-config", "hardware-manifest"},
		"testing_scripts":       []string{"gpu-burn"},
	})
	id := created["id"].(string)
	got := h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/maas-sites/"+site+"/profiles/"+id, nil)
	assert.Equal(t, []any{"firmware-update", "raid-config", "hardware-manifest"}, got["commissioning_scripts"])
	assert.Equal(t, []any{"gpu-burn"}, got["testing_scripts"])

	patched := h.mustAdmin(http.StatusOK, "PATCH", "/api/v1/admin/maas-sites/"+site+"/profiles/"+id,
		map[string]any{"testing_scripts": []string{"none"}})
	assert.Equal(t, []any{"none"}, patched["testing_scripts"])
	assert.Equal(t, []any{"firmware-update", "raid-config", "hardware-manifest"}, patched["commissioning_scripts"], "a list not sent is kept")

	cleared := h.mustAdmin(http.StatusOK, "PATCH", "/api/v1/admin/maas-sites/"+site+"/profiles/"+id,
		map[string]any{"commissioning_scripts": []string{}})
	assert.Nil(t, cleared["commissioning_scripts"])
}

func TestProfileScriptNamesAreValidated(t *testing.T) {
	cases := []struct {
		name  string
		field string
		body  map[string]any
	}{
		{"script content", "commissioning_scripts", map[string]any{"commissioning_scripts": []string{"#!/bin/sh\nreboot"}}},
		{"spaces", "commissioning_scripts", map[string]any{"commissioning_scripts": []string{"update firmware"}}},
		{"a comma", "testing_scripts", map[string]any{"testing_scripts": []string{"gpu-burn,memtester"}}},
		{"a number", "testing_scripts", map[string]any{"testing_scripts": []string{"42"}}},
		{"twice", "commissioning_scripts", map[string]any{"commissioning_scripts": []string{"raid-config", "raid-config"}}},
		{"none in commissioning", "commissioning_scripts", map[string]any{"commissioning_scripts": []string{"none"}}},
		{"none with others", "testing_scripts", map[string]any{"testing_scripts": []string{"none", "gpu-burn"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			site := h.readySite("dc1")
			body := map[string]any{"name": "h100", "architecture": "amd64/generic", "distro_series": "jammy"}
			for k, v := range c.body {
				body[k] = v
			}
			r := h.admin("POST", "/api/v1/admin/maas-sites/"+site+"/profiles", body)
			require.Equal(t, http.StatusBadRequest, r.status, "%s", r.body)
			assert.Contains(t, string(r.body), c.field, "the error names the field")

			id := h.profile(site, nil)
			r = h.admin("PATCH", "/api/v1/admin/maas-sites/"+site+"/profiles/"+id, c.body)
			require.Equal(t, http.StatusBadRequest, r.status, "%s", r.body)
			assert.Contains(t, string(r.body), c.field)
			got := h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/maas-sites/"+site+"/profiles/"+id, nil)
			assert.Nil(t, got[c.field], "nothing written")
		})
	}
}
