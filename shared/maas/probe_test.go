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

	var forbidden *MAASForbiddenError
	require.ErrorAs(t, err, &forbidden)
	assert.Same(t, forbidden, err, "the typed error itself, not wrapped")
	assert.Equal(t, `maas whoami: forbidden: user "operator" is not a MAAS administrator (is_superuser false); `+
		`onboarding needs an admin key to create, commission and deploy machines`, err.Error())
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
}

// A whoami without is_superuser (a proxy that strips fields, an unexpected
// MAAS) is not taken as admin: the probe fails closed.
func TestProbeFailsClosedWithoutIsSuperuser(t *testing.T) {
	f := newFakeMAAS(t)
	f.onFile(http.MethodGet, "version/", "", "version-maas-3.5.json")
	f.on(http.MethodGet, "users/", "whoami", http.StatusOK, `{"username":"maasflow"}`)

	_, err := SiteProber{}.Probe(context.Background(), f.baseURL(), testKey)
	var forbidden *MAASForbiddenError
	require.ErrorAs(t, err, &forbidden)
	assert.Contains(t, forbidden.Message, `user "maasflow" is not a MAAS administrator`)
}
