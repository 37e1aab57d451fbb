package onboarding

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/enroll"
)

// selfSignedCA is a fresh CA certificate in PEM, named cn so two of them
// differ.
func selfSignedCA(t *testing.T, cn string) string {
	t.Helper()
	ca, err := enroll.NewSelfSignedCA(cn)
	require.NoError(t, err)
	return ca
}

// TestPayloadCABundleIsThePolicysElseTheDeployments renders the first-boot
// payload and reads back the node bundle's CA: the site policy's bundle
// wins, the deployment's fills in when the policy sets none, and with
// neither nothing renders (a node could not trust the enrollment API).
func TestPayloadCABundleIsThePolicysElseTheDeployments(t *testing.T) {
	siteCA, deployCA := selfSignedCA(t, "site CA"), selfSignedCA(t, "deployment CA")
	policy := func(ca string) domain.EffectivePolicy {
		return domain.EffectivePolicy{Bootstrap: domain.BootstrapRef{
			URL: "https://boot.example/site-bootstrap.sh", Version: "2026.11.1", CABundle: ca}}
	}
	tests := []struct {
		name             string
		policyCA, deploy string
		want             string
	}{
		{"the policy's bundle wins", siteCA, deployCA, siteCA},
		{"the policy's bundle without a deployment default", siteCA, "", siteCA},
		{"the deployment's bundle when the policy sets none", "", deployCA, deployCA},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := New(activities.Deps{Config: activities.Config{APIURL: "https://enroll.example", CABundle: tc.deploy, Package: enroll.DevPackage()}})
			p, err := a.renderPayload(policy(tc.policyCA), "node-1", domain.Secret("token-abc"))
			require.NoError(t, err)
			_, bundle, err := enroll.ParseUserData([]byte(p.UserData.Reveal()))
			require.NoError(t, err)
			assert.Equal(t, tc.want, bundle.CABundlePEM)
			fp, err := enroll.Fingerprint(tc.want)
			require.NoError(t, err)
			assert.Equal(t, fp, bundle.CAFingerprint)
		})
	}
	t.Run("neither gives no bundle", func(t *testing.T) {
		a := New(activities.Deps{Config: activities.Config{APIURL: "https://enroll.example", Package: enroll.DevPackage()}})
		_, err := a.renderPayload(policy(""), "node-1", domain.Secret("token-abc"))
		var pe *PayloadRenderError
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, partNodeBootstrap, pe.Part)
		assert.NotContains(t, pe.Error(), "token-abc")
	})
}

// TestBootstrapInputsAcceptTheDeploymentsCABundle: the pre-deploy check
// applies the same rule as the payload, so a policy without a CA bundle
// passes when the deployment has one and is refused, naming the policy
// field, when it has none.
func TestBootstrapInputsAcceptTheDeploymentsCABundle(t *testing.T) {
	deployCA := selfSignedCA(t, "deployment CA")
	pol := domain.EffectivePolicy{Bootstrap: domain.BootstrapRef{URL: "https://boot.example/b.sh", Version: "1"}}
	assert.Nil(t, domain.CheckBootstrapInputs(pol, "https://enroll.example", deployCA))
	bad := domain.CheckBootstrapInputs(pol, "https://enroll.example", "")
	require.NotNil(t, bad)
	assert.Equal(t, domain.FieldBootstrapCA, bad.Field)
	pol.Bootstrap.CABundle = "<BOOTSTRAP_BUNDLE_CA_PEM>"
	bad = domain.CheckBootstrapInputs(pol, "https://enroll.example", deployCA)
	require.NotNil(t, bad, "a bad policy bundle is not hidden by the deployment's")
	assert.Equal(t, domain.FieldBootstrapCA, bad.Field)
}
