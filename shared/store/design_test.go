package store

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/design"
)

func TestSiteDesignRoundTripAndVersions(t *testing.T) {
	s, _, _ := newTestStore(t)
	ctx := context.Background()
	mustSite(t, s, "s1", "one")

	_, err := s.GetSiteDesign(ctx, "s1")
	var nf *ItemNotFoundError
	require.ErrorAs(t, err, &nf)

	d := design.Design{
		Networks: []design.Network{{Name: "mgmt", CIDR: "10.0.0.0/24", DNSServers: []string{"10.0.0.2"}}},
		Nodes:    []design.NodeAssignment{{Hostname: "gpu-01", BMCAddress: "10.1.0.1", HostProfile: "p"}},
		Sources:  map[string]string{"network/mgmt": "site.yaml", "node/gpu-01": "site.yaml"},
	}
	put, err := s.PutSiteDesign(ctx, SiteDesign{SiteID: "s1", Hash: design.Hash(d), Design: d, UpdatedBy: "alice"}, 0)
	require.NoError(t, err)
	assert.EqualValues(t, 1, put.Version)
	got, err := s.GetSiteDesign(ctx, "s1")
	require.NoError(t, err)
	assert.Equal(t, d, got.Design)
	assert.Equal(t, design.Hash(d), got.Hash)
	assert.Equal(t, "alice", got.UpdatedBy)

	// A second apply from the same version lost the race: refused, and
	// the stored design is untouched.
	_, err = s.PutSiteDesign(ctx, SiteDesign{SiteID: "s1", Design: design.Design{}}, 0)
	var conflict *ItemConflictError
	require.ErrorAs(t, err, &conflict)
	d.Networks[0].CIDR = "10.0.9.0/24"
	put, err = s.PutSiteDesign(ctx, SiteDesign{SiteID: "s1", Design: d}, 1)
	require.NoError(t, err)
	assert.EqualValues(t, 2, put.Version)
	_, err = s.PutSiteDesign(ctx, SiteDesign{SiteID: "s1", Design: d}, 1)
	require.ErrorAs(t, err, &conflict)
	got, err = s.GetSiteDesign(ctx, "s1")
	require.NoError(t, err)
	assert.Equal(t, "10.0.9.0/24", got.Design.Networks[0].CIDR)

	_, err = s.PutSiteDesign(ctx, SiteDesign{SiteID: "nope", Design: d}, 0)
	require.ErrorAs(t, err, &nf)
}
