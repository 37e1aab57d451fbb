package activities_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/connector"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/secrets"
)

type siteMap map[string]domain.Site

func (m siteMap) GetSite(_ context.Context, id string) (domain.Site, error) { return m[id], nil }

func TestSiteConnectorChoosesThePath(t *testing.T) {
	ctx := context.Background()
	store := secrets.NewFileStore(filepath.Join(t.TempDir(), "s.json"))
	require.NoError(t, secrets.PutSiteCredentials(ctx, store, "vpc-http", domain.SiteCredentials{MAASAPIKey: "a:b:c", BMCPassword: "p"}))
	require.NoError(t, secrets.PutSiteCredentials(ctx, store, "edge", domain.SiteCredentials{BMCPassword: "p"}))
	sites := siteMap{
		"vpc-http": {ID: "vpc-http", MAASURL: "http://203.0.113.9:5240/MAAS"},
		"edge":     {ID: "edge", MAASURL: "http://maas.edge/MAAS", Connectivity: domain.ConnectivityConnector},
		"lost":     {ID: "lost", MAASURL: "http://maas.lost/MAAS", Connectivity: domain.ConnectivityConnector},
	}
	broker := connector.NewBroker([]byte("k"), nil)
	defer broker.Close()
	c := activities.NewSiteConnector(sites, store, activities.NewMAASClient).
		WithPaths(&connector.Paths{Relay: broker, Status: broker, RequireHTTPS: true})

	_, err := c.ForSite(ctx, "vpc-http")
	var creds *activities.SiteCredentialsError
	require.ErrorAs(t, err, &creds)
	assert.Contains(t, creds.Reason, "plain http")

	// A connector site with no key: the client is built, unsigned; its
	// calls go to the broker, where no connector answers before the deadline.
	client, err := c.ForSite(ctx, "edge")
	require.NoError(t, err)
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_, err = client.Get(short, "abc")
	require.Error(t, err)

	// The fetch checks of a connector site go through the connector.
	doer, own, err := c.SiteHTTP(ctx, "edge")
	require.NoError(t, err)
	require.True(t, own)
	req, _ := http.NewRequestWithContext(short, http.MethodGet, "http://bootstrap.edge/site.sh", nil)
	_, err = doer.Do(req)
	require.Error(t, err, "no connector for the site answers")
	_, own, err = c.SiteHTTP(ctx, "vpc-http")
	require.NoError(t, err)
	assert.False(t, own, "a vpc site fetches with the default client")

	// A connector site without credentials at all still builds (the key
	// stays with the connector); the BMC account is read where needed.
	_, err = c.ForSite(ctx, "lost")
	require.NoError(t, err)
}

func TestSiteConnectorVPCPathOverHTTPS(t *testing.T) {
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	defer srv.Close()
	ctx := context.Background()
	store := secrets.NewFileStore(filepath.Join(t.TempDir(), "s.json"))
	require.NoError(t, secrets.PutSiteCredentials(ctx, store, "dc1", domain.SiteCredentials{MAASAPIKey: "a:b:c"}))
	c := activities.NewSiteConnector(siteMap{"dc1": {ID: "dc1", MAASURL: srv.URL + "/MAAS"}}, store, activities.NewMAASClient).
		WithPaths(&connector.Paths{RequireHTTPS: true})
	_, err := c.ForSite(ctx, "dc1")
	require.NoError(t, err, "https passes the rule")
}
