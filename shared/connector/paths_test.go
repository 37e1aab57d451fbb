package connector_test

import (
	"context"
	"errors"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/connector"
	"github.com/maasflow/maasflow/shared/domain"
)

func TestCheckDirectRequiresHTTPSUnlessPrivateAndAllowed(t *testing.T) {
	lookup := func(_ context.Context, host string) ([]netip.Addr, error) {
		switch host {
		case "maas.internal":
			return []netip.Addr{netip.MustParseAddr("10.1.2.3"), netip.MustParseAddr("fd00::5")}, nil
		case "maas.public":
			return []netip.Addr{netip.MustParseAddr("10.1.2.3"), netip.MustParseAddr("203.0.113.7")}, nil
		}
		return nil, errors.New("no such host")
	}
	p := &connector.Paths{RequireHTTPS: true, LookupHost: lookup}
	tests := []struct {
		url       string
		allowHTTP bool
		wantErr   string
	}{
		{url: "https://maas.public/MAAS"},
		{url: "http://maas.internal:5240/MAAS", wantErr: "use https, or set allow_http"},
		{url: "http://maas.internal:5240/MAAS", allowHTTP: true},
		{url: "http://192.168.1.9:5240/MAAS", allowHTTP: true},
		{url: "http://maas.public:5240/MAAS", allowHTTP: true, wantErr: "public address 203.0.113.7"},
		{url: "http://8.8.8.8:5240/MAAS", allowHTTP: true, wantErr: "public address 8.8.8.8"},
		{url: "http://nowhere:5240/MAAS", allowHTTP: true, wantErr: "does not resolve"},
	}
	for _, tt := range tests {
		err := p.CheckDirect(context.Background(), domain.Site{ID: "s1", MAASURL: tt.url, AllowHTTP: tt.allowHTTP})
		if tt.wantErr == "" {
			require.NoError(t, err, tt.url)
			continue
		}
		var nr *connector.NotReachableError
		require.ErrorAs(t, err, &nr, tt.url)
		assert.Contains(t, nr.Reason, tt.wantErr, tt.url)
	}
	// Local mode does not require https.
	require.NoError(t, (&connector.Paths{}).CheckDirect(context.Background(), domain.Site{MAASURL: "http://8.8.8.8/MAAS"}))
}

func TestConnectorSiteWithoutTransport(t *testing.T) {
	p := &connector.Paths{}
	site := domain.Site{ID: "s1", MAASURL: "http://maas/MAAS", Connectivity: domain.ConnectivityConnector}
	_, err := p.MAASClient(context.Background(), site, "")
	var nr *connector.NotReachableError
	require.ErrorAs(t, err, &nr)
	assert.Contains(t, nr.Reason, "no connector transport")
	_, _, err = p.FetchClient(site)
	require.ErrorAs(t, err, &nr)
	_, own, err := p.FetchClient(domain.Site{ID: "s2"})
	require.NoError(t, err)
	assert.False(t, own, "a vpc site fetches with the caller's own client")
}
