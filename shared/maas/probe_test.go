package maas

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A key whose user is not a MAAS administrator is a working key that cannot
// onboard anything (maas-behaviour §13): the probe says so, and still hands
// back what it read.
func TestProbeRefusesANonAdminKey(t *testing.T) {
	f := newFakeMAAS(t)
	f.onFile(http.MethodGet, "version/", "", "version-maas-3.5.json")
	f.on(http.MethodGet, "users/", "whoami", http.StatusOK,
		`{"username":"operator","email":"op@example.com","is_local":true,"is_superuser":false,"resource_uri":"/MAAS/api/2.0/users/operator/"}`)

	got, err := f.client().Probe(context.Background())

	require.NoError(t, err, "the region answered: being no admin is a finding, not a failed call")
	assert.Equal(t, `maas whoami: user "operator" is not a MAAS administrator (is_superuser false): `+
		`onboarding needs an admin key to create, commission and deploy machines`, got.Problem())
	assert.Equal(t, "3.5.4", got.Version)
	assert.Equal(t, "operator", got.Username)
	assert.False(t, got.IsAdmin)
}

func TestProbeAcceptsAnAdminKey(t *testing.T) {
	f := newFakeMAAS(t)
	f.onFile(http.MethodGet, "version/", "", "version-maas-3.5.json")
	f.onFile(http.MethodGet, "users/", "whoami", "whoami-maas-3.5.json")

	got, err := f.client().Probe(context.Background())
	require.NoError(t, err)
	assert.True(t, got.IsAdmin)
	assert.Empty(t, got.Problem())
}

// A whoami without is_superuser (a proxy that strips fields, an unexpected
// MAAS) is not taken as admin: the probe fails closed.
func TestProbeFailsClosedWithoutIsSuperuser(t *testing.T) {
	f := newFakeMAAS(t)
	f.onFile(http.MethodGet, "version/", "", "version-maas-3.5.json")
	f.on(http.MethodGet, "users/", "whoami", http.StatusOK, `{"username":"maasflow"}`)

	got, err := SiteProber{}.Probe(context.Background(), f.baseURL(), testKey)
	require.NoError(t, err)
	assert.False(t, got.IsAdmin)
	assert.Contains(t, got.Problem(), `user "maasflow" is not a MAAS administrator`)
}
