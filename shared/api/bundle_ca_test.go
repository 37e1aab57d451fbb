package api

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/enroll"
)

// deploymentCA is a CA certificate in PEM other than enroll.DevCA (the
// test sites' own), standing for the bundle given at deploy time.
func deploymentCA(t *testing.T) string {
	t.Helper()
	ca, err := enroll.NewSelfSignedCA("deployment enrollment CA")
	require.NoError(t, err)
	return ca
}

// TestReissuedBundleCABundleIsThePolicysElseTheDeployments: the reissue
// applies the onboarding payload's rule. A site whose policy sets no CA
// bundle is onboarded with the deployment's, and its reissued bundle
// carries that one; a site's own bundle wins over it.
func TestReissuedBundleCABundleIsThePolicysElseTheDeployments(t *testing.T) {
	deployCA := deploymentCA(t)
	siteCA, err := enroll.DevCA()
	require.NoError(t, err)
	require.NotEqual(t, siteCA, deployCA)
	noCA := map[string]any{"bootstrap": map[string]any{"url": "https://boot.example/b.sh", "version": "1"}, "enrollment_url": "https://api.example"}
	tests := []struct {
		name   string
		policy map[string]any
		want   string
	}{
		{"the deployment's when the policy sets none", noCA, deployCA},
		{"the policy's wins", bootstrapPolicy(t), siteCA},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bundles := testBundles
			bundles.CABundle = deployCA
			h := newHarnessWith(t, bundles)
			site := h.readySiteWith("site-ca", tc.policy)
			f := fixture{site: site, profile: h.profile(site, nil), sku: h.sku("h100-ca")}
			o := h.mustAdmin(http.StatusAccepted, "POST", "/api/v1/admin/onboardings", f.onboarding("gpu-ca"))
			h.closeAs(o["id"].(string), domain.OnboardingFailed, "DeployFailed")

			r := h.mustAdmin(http.StatusCreated, "POST", "/api/v1/admin/nodes/"+o["node_id"].(string)+"/bootstrap-bundle", nil)
			bundle := r["bootstrap_bundle"].(map[string]any)
			assert.Equal(t, tc.want, bundle["ca_bundle_pem"])
			fp, err := enroll.Fingerprint(tc.want)
			require.NoError(t, err)
			assert.Equal(t, fp, bundle["ca_fingerprint"])
		})
	}
}

// TestPolicyWithoutCABundleIsRefusedOnlyWithoutADeploymentDefault: with a
// deployment CA bundle a site policy may leave ca_bundle_pem out; the
// case without one is TestOnboardingWithIncompleteBootstrapPolicyIsRefusedBeforeMAAS.
func TestPolicyWithoutCABundleIsRefusedOnlyWithoutADeploymentDefault(t *testing.T) {
	noCA := map[string]any{"bootstrap": map[string]any{"url": "https://boot.example/b.sh", "version": "1"}, "enrollment_url": "https://api.example"}
	for _, withDefault := range []bool{true, false} {
		bundles := testBundles
		if withDefault {
			bundles.CABundle = deploymentCA(t)
		}
		h := newHarnessWith(t, bundles)
		site := h.readySiteWith("site-noca", noCA)
		f := fixture{site: site, profile: h.profile(site, nil), sku: h.sku("h100-noca")}
		res := h.admin("POST", "/api/v1/admin/onboardings", f.onboarding("gpu-noca"))
		if withDefault {
			assert.Equal(t, http.StatusAccepted, res.status, "%s", res.body)
			continue
		}
		require.Equal(t, http.StatusUnprocessableEntity, res.status, "%s", res.body)
		assert.Equal(t, domain.FieldBootstrapCA, res.json(t)["error"].(map[string]any)["field"])
	}
}
