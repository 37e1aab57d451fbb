package design

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
)

// A plan lists the RoCE rows an apply changes, and its hash covers them:
// the same design change over other direct rows is another plan.
func TestPlanAddsTheRoCERowsItChanges(t *testing.T) {
	old := Design{Nodes: []NodeAssignment{{Hostname: "gpu-01", RoCERails: []RoCERail{{Interface: "rail0", IPv4CIDR: "10.20.1.0/31"}}}}}
	next := Design{Nodes: []NodeAssignment{
		{Hostname: "gpu-01", RoCERails: []RoCERail{{Interface: "rail0", IPv4CIDR: "10.20.1.2/31"}}},
		{Hostname: "gpu-02", RoCERails: []RoCERail{{Interface: "ens1f0", IPv4CIDR: "10.20.2.0/31"}}},
	}}
	direct := func(host, iface, cidr string) domain.RoCEAssignment {
		return domain.RoCEAssignment{ID: RoCERowID(host, iface), Hostname: host, Interface: iface, IPv4CIDR: cidr, Source: domain.RoCESourceDirect}
	}
	before := append(RoCERows(old), direct("gpu-02", "ens1f0", "10.1.2.0/31"), direct("gpu-02", "ens1f1", "10.1.2.2/31"), direct("gpu-03", "ens1f0", "10.1.3.0/31"))

	p, err := MakePlan(old, next)
	require.NoError(t, err)
	bare := p.Hash
	p.AddRoCE(before, next)
	var lines []string
	for _, l := range p.Lines() {
		if strings.Contains(l, " roce_row ") {
			lines = append(lines, l)
		}
	}
	assert.Equal(t, []string{
		"~ roce_row gpu-01:rail0: ipv4_cidr: 10.20.1.0/31 -> 10.20.1.2/31",
		"~ roce_row gpu-02:ens1f0: ipv4_cidr: 10.1.2.0/31 -> 10.20.2.0/31, source: direct -> design",
		"- roce_row gpu-02:ens1f1: superseded by the design",
	}, lines, "gpu-03, which the design does not name, keeps its row")
	assert.NotEqual(t, bare, p.Hash)

	other, err := MakePlan(old, next)
	require.NoError(t, err)
	other.AddRoCE(before[:len(before)-2], next)
	assert.NotEqual(t, p.Hash, other.Hash, "another direct row, another plan")

	same, err := MakePlan(next, next)
	require.NoError(t, err)
	h := same.Hash
	same.AddRoCE(RoCERows(next), next)
	assert.True(t, same.Empty())
	assert.Equal(t, h, same.Hash, "no RoCE change leaves the hash as it was")
}
