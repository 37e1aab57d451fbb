package maas

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
)

func TestSiteProber(t *testing.T) {
	f := newFakeMAAS(t)
	f.onFile(http.MethodGet, "version/", "", "version-maas-3.5.json")
	f.onFile(http.MethodGet, "users/", "whoami", "whoami-maas-3.5.json")

	got, err := SiteProber{}.Probe(context.Background(), f.baseURL(), testKey)
	require.NoError(t, err)
	assert.NotEmpty(t, got.Version)
	assert.Len(t, f.requests(), 2)
}

func TestSiteProberRefusesABadKeyWithoutSendingIt(t *testing.T) {
	_, err := SiteProber{}.Probe(context.Background(), "http://127.0.0.1:1/MAAS", domain.Secret("only-one-part"))
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "only-one-part")
}
