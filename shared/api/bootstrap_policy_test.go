package api

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/enroll"
)

// bootstrapPolicy is a site policy whose static bootstrap inputs resolve.
func bootstrapPolicy(t testing.TB) map[string]any {
	t.Helper()
	ca, err := enroll.DevCA()
	require.NoError(t, err)
	return map[string]any{
		"bootstrap":      map[string]any{"url": "https://boot.example/site-bootstrap.sh", "version": "2026.11.1", "ca_bundle_pem": ca},
		"enrollment_url": "https://api.example",
	}
}

func TestOnboardingWithIncompleteBootstrapPolicyIsRefusedBeforeMAAS(t *testing.T) {
	full := bootstrapPolicy(t)
	noCA := map[string]any{"bootstrap": map[string]any{"url": "https://boot.example/b.sh", "version": "1"}, "enrollment_url": "https://api.example"}
	noEnrollment := map[string]any{"bootstrap": full["bootstrap"]}
	cases := []struct {
		name, field string
		site        map[string]any
	}{
		{"no bootstrap policy at all", "policy.bootstrap.url", nil},
		{"no CA bundle", "policy.bootstrap.ca_bundle_pem", noCA},
		{"no enrollment url anywhere", "policy.enrollment_url", noEnrollment},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			site := h.readySiteWith("site-x", tc.site)
			f := fixture{site: site, profile: h.profile(site, nil), sku: h.sku("h100-x")}
			res := h.admin("POST", "/api/v1/admin/onboardings", f.onboarding("gpu-a01"))
			require.Equal(t, http.StatusUnprocessableEntity, res.status, string(res.body))
			body := res.json(t)["error"].(map[string]any)
			assert.Equal(t, CodePolicyIncomplete, body["code"])
			assert.Equal(t, tc.field, body["field"])
			// Nothing started: no workflow, so nothing reached MAAS, and no
			// onboarding record holds the host.
			assert.Empty(t, h.starter.started())
			list := h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/onboardings?site_id="+f.site, nil)
			assert.Empty(t, list["items"])
		})
	}
}

func TestPatchWarnsWhenPolicyCannotOnboard(t *testing.T) {
	h := newHarness(t)
	site := h.readySiteWith("site-bare", nil)
	profile := h.profile(site, nil)

	prof := h.mustAdmin(http.StatusOK, "PATCH", "/api/v1/admin/maas-sites/"+site+"/profiles/"+profile, map[string]any{"name": "gpu-renamed"})
	require.Contains(t, prof, "warnings")
	assert.Contains(t, prof["warnings"].([]any)[0], "policy.bootstrap.url")

	bare := h.mustAdmin(http.StatusOK, "PATCH", "/api/v1/admin/maas-sites/"+site, map[string]any{"description": "rack 4"})
	require.Contains(t, bare, "warnings")
	assert.Len(t, bare["warnings"], 1)
	assert.Contains(t, bare["warnings"].([]any)[0], "profile "+profile)

	fixed := h.mustAdmin(http.StatusOK, "PATCH", "/api/v1/admin/maas-sites/"+site, map[string]any{"policy": bootstrapPolicy(t)})
	assert.NotContains(t, fixed, "warnings", "a complete policy has nothing to warn about")
	prof = h.mustAdmin(http.StatusOK, "PATCH", "/api/v1/admin/maas-sites/"+site+"/profiles/"+profile, map[string]any{"name": "gpu-again"})
	assert.NotContains(t, prof, "warnings")
}
