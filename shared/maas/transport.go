package maas

import (
	"net/http"
	"net/url"
	"sync"
	"time"
)

// Every Client built without WithHTTPClient shares one *http.Transport per
// MAAS region (scheme and host of its URL). Activities build a client per
// call, so that a rotated key or a moved region takes effect at once; with
// a transport per client each call opened fresh connections and left them
// idle until the process ran out of file descriptors. A transport holds no
// credential (every request is signed on its own), so sharing it between
// clients of one region is safe.
var sharedTransports sync.Map // "scheme://host" → *http.Transport

// maxIdlePerRegion keeps enough idle connections for many concurrent
// activities of one site to reuse them instead of reconnecting (the
// standard library keeps 2 per host).
const maxIdlePerRegion = 64

// regionTransport returns the transport every default client of apiURL's
// region shares.
func regionTransport(apiURL string) http.RoundTripper {
	u, err := url.Parse(apiURL)
	if err != nil {
		return nil
	}
	key := u.Scheme + "://" + u.Host
	if t, ok := sharedTransports.Load(key); ok {
		return t.(*http.Transport) //nolint:forcetypeassert // only transports are stored
	}
	base, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		return nil
	}
	t := base.Clone()
	t.MaxIdleConnsPerHost = maxIdlePerRegion
	t.MaxIdleConns = 4 * maxIdlePerRegion
	t.IdleConnTimeout = 90 * time.Second
	actual, _ := sharedTransports.LoadOrStore(key, t)
	return actual.(*http.Transport) //nolint:forcetypeassert // only transports are stored
}
