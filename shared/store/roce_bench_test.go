package store

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/design"
	"github.com/maasflow/maasflow/shared/domain"
)

// BenchmarkListRoCEOfADesignedSite lists RoCE rows on a site whose design
// names 2,000 nodes of 8 rails and an address each (16,000 rows read from
// the design) and which has 100 direct rows of other hosts, on local mode's database: one
// designed host's rows (what apply_roce reads), one direct host's, and the
// whole site (the RoCE API's list).
func BenchmarkListRoCEOfADesignedSite(b *testing.B) {
	ctx := context.Background()
	db, err := NewLocalDB(ctx, "")
	require.NoError(b, err)
	s := New(db, "", nil)
	require.NoError(b, s.CreateSite(ctx, domain.Site{ID: "s1", Name: "big", MAASURL: "http://maas.example/MAAS"}))
	var direct []domain.RoCEAssignment
	for i := range 100 {
		direct = append(direct, roce(fmt.Sprintf("cpu-%03d", i/4), fmt.Sprintf("ens%d", i%4), fmt.Sprintf("10.1.%d.%d/31", i/100, 2*(i%100))))
	}
	_, err = s.UpsertRoCEAssignments(ctx, "s1", direct)
	require.NoError(b, err)
	// As Compose leaves it: every object's source document recorded.
	d := design.Design{HostProfiles: []design.HostProfile{{Name: "gpu"}}, Sources: map[string]string{"host_profile/gpu": "site.yaml"}}
	for n := range 2000 {
		node := design.NodeAssignment{Hostname: fmt.Sprintf("gpu-%04d", n), BMCAddress: fmt.Sprintf("10.10.%d.%d", n/250, n%250), HostProfile: "gpu"}
		for r := range 8 {
			node.RoCERails = append(node.RoCERails, design.RoCERail{Interface: fmt.Sprintf("rail%d", r), IPv4CIDR: fmt.Sprintf("10.%d.%d.%d/31", 20+r, n/128, 2*(n%128))})
		}
		node.Addresses = []design.Address{{Interface: "eno1", Network: "mgmt", Address: fmt.Sprintf("10.0.%d.%d", n/250, n%250)}}
		d.Nodes = append(d.Nodes, node)
		d.Sources["node/"+node.Hostname] = "rack.yaml"
	}
	_, err = s.PutSiteDesign(ctx, SiteDesign{SiteID: "s1", Hash: design.Hash(d), Design: d}, 0)
	require.NoError(b, err)

	for _, c := range []struct {
		name, host string
		rows       int
	}{{"designed_host", "gpu-1234", 8}, {"direct_host", "cpu-007", 4}, {"site", "", 16_100}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				rows, err := s.ListRoCEAssignments(ctx, "s1", c.host)
				if err != nil || len(rows) != c.rows {
					b.Fatalf("%d rows, %v", len(rows), err)
				}
			}
		})
	}
}
