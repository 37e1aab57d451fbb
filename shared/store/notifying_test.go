package store

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
)

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestNotifyingWakesOnWritesOnly(t *testing.T) {
	ctx := context.Background()
	db, err := NewLocalDB(ctx, "")
	require.NoError(t, err)
	n := NewNotifying(db)
	s := New(n, "", t0.UTC)

	before := n.Changed()
	assert.Equal(t, before, n.Changed(), "waiters between two writes share one channel")
	site := mustSite(t, s, "site-1", "fra1")
	assert.True(t, closed(before), "a write wakes the waiters")

	after := n.Changed()
	assert.False(t, closed(after), "a fresh channel after the wake")
	_, err = s.GetSite(ctx, site.ID)
	require.NoError(t, err)
	_, err = s.ListSites(ctx)
	require.NoError(t, err)
	assert.False(t, closed(after), "reads wake no one")

	err = s.CreateSite(ctx, domain.Site{ID: site.ID, Name: "fra1", MAASURL: "http://maas.example/MAAS"})
	require.Error(t, err, "the site exists: the conditional write is refused")
	assert.False(t, closed(after), "a refused write changed nothing and wakes no one")

	_, err = s.UpdateSite(ctx, site.ID, func(st *domain.Site) error { st.Name = "fra2"; return nil })
	require.NoError(t, err)
	assert.True(t, closed(after))
}
