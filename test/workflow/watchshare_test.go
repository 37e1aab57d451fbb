package workflow_test

import (
	"net/http"
	"sync/atomic"

	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/activities/activitiestest"
	"github.com/maasflow/maasflow/shared/activities/onboarding"
	"github.com/maasflow/maasflow/shared/asl"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
	"github.com/maasflow/maasflow/shared/store"
)

// watchShare is the machine watch's own handle on the database and on
// MAAS, so that the benchmarks report its cost apart from the workflow's:
// the watch records (WatchMachine's registration, WatchSites' rounds) and
// WatchSites' site reads go through db; its event queries through maas.
type watchShare struct {
	db    *store.Counting
	store *store.Store
	maas  countingTransport
}

func newWatchShare(f *activitiestest.Fixture, vc *asl.VirtualClock) *watchShare {
	w := &watchShare{db: store.NewCounting(f.DB.DynamoDB)}
	w.store = store.New(w.db, "", vc.Now)
	w.maas.base = f.SimServer.Client().Transport
	w.maas.calls = new(atomic.Int64)
	return w
}

// watchSites is the WatchSites handler on the watch's own handles.
func (w *watchShare) watchSites(d activities.Deps) any {
	d.Store, d.Watches = w.store, w.store
	client := &http.Client{Transport: w.maas}
	d.MAAS = activities.NewSiteConnector(w.store, d.Secrets, func(url string, key domain.Secret) (activities.MAAS, error) {
		return maas.NewClient(url, key, maas.WithNow(d.Clock.Now), maas.WithHTTPClient(client))
	})
	return onboarding.New(d).WatchSites
}

// countingTransport counts the HTTP requests it carries.
type countingTransport struct {
	base  http.RoundTripper
	calls *atomic.Int64
}

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.calls.Add(1)
	return c.base.RoundTrip(r)
}
