package maas_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/internal/maassim"
	"github.com/maasflow/maasflow/shared/clock"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
)

const siteEventsKey = "ck-site-events:tk-site-events:site-events-secret"

// siteWithEvents is a simulated region with five machines that each
// logged a DEBUG user request (allocate) next to whatever else MAAS logged.
func siteWithEvents(t *testing.T) *maas.Client {
	t.Helper()
	sim := maassim.New(maassim.Options{APIKey: siteEventsKey, Clock: clock.NewFake(time.Date(2025, 1, 7, 10, 0, 0, 0, time.UTC)), Seed: 7})
	srv := httptest.NewServer(sim)
	t.Cleanup(func() {
		srv.Close()
		sim.Close()
	})
	c, err := maas.NewClient(srv.URL+"/MAAS", domain.Secret(siteEventsKey))
	require.NoError(t, err)
	for n := range 5 {
		sid, err := sim.AddMachine(maassim.MachineSeed{Hostname: fmt.Sprintf("gpu-%02d", n), BMCIP: fmt.Sprintf("10.0.0.%d", n+10), Status: "ready"})
		require.NoError(t, err)
		_, err = c.Allocate(context.Background(), sid)
		require.NoError(t, err)
	}
	return c
}

func TestSiteEventsReadsEveryMachineOfTheRegion(t *testing.T) {
	c := siteWithEvents(t)
	all, err := c.SiteEvents(context.Background(), maas.SiteEventQuery{Limit: 1000})
	require.NoError(t, err)
	nodes := map[string]bool{}
	debug := 0
	for _, e := range all {
		nodes[e.Node] = true
		if e.Level == maas.EventLevelDebug {
			debug++
		}
	}
	assert.Len(t, nodes, 5, "one query, every machine")
	assert.GreaterOrEqual(t, debug, 5, "the DEBUG requests are in")
	assert.True(t, slices.IsSortedFunc(all, func(a, b maas.Event) int { return int(b.ID - a.ID) }), "newest first")
}

// TestSiteEventsPagesForward: with after, MAAS returns the oldest events
// after the id, newest first; paging with after = the page's newest id
// while pages come back full reads every event once, in order.
func TestSiteEventsPagesForward(t *testing.T) {
	c := siteWithEvents(t)
	ctx := context.Background()
	all, err := c.SiteEvents(ctx, maas.SiteEventQuery{Limit: 1000})
	require.NoError(t, err)
	require.Greater(t, len(all), 4)
	newest, err := c.SiteEvents(ctx, maas.SiteEventQuery{Limit: 2})
	require.NoError(t, err)
	require.Len(t, newest, 2)
	assert.Equal(t, all[0].ID, newest[0].ID, "without after: the newest page")

	var read []int64
	// From the oldest event on: after=0 would mean "the newest".
	after := all[len(all)-1].ID
	for pages := 0; ; pages++ {
		require.Less(t, pages, len(all), "paging must end")
		page, err := c.SiteEvents(ctx, maas.SiteEventQuery{After: after, Limit: 2})
		require.NoError(t, err)
		for n := len(page) - 1; n >= 0; n-- {
			read = append(read, page[n].ID)
		}
		if len(page) < 2 {
			break
		}
		assert.Greater(t, page[0].ID, page[1].ID, "a page is newest first")
		after = page[0].ID
	}
	var want []int64
	for n := len(all) - 2; n >= 0; n-- {
		want = append(want, all[n].ID)
	}
	assert.Equal(t, want, read)
}

func TestSiteEventsRefusesAnOversizedPage(t *testing.T) {
	c, err := maas.NewClient("http://127.0.0.1:1/MAAS", domain.Secret(siteEventsKey))
	require.NoError(t, err)
	_, err = c.SiteEvents(context.Background(), maas.SiteEventQuery{Limit: 1001})
	var bad *maas.MAASBadRequestError
	require.ErrorAs(t, err, &bad)
	assert.Contains(t, bad.Message, "limit")
}
