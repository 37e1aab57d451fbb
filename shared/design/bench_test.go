package design

import (
	"fmt"
	"testing"
)

// siteOf is the fixture's site with n nodes in the rack file.
func siteOf(n int) []Document {
	docs := site()
	docs[0].Nodes = nil
	docs[0].Networks[0].CIDR, docs[0].Networks[0].Gateway = "10.0.0.0/16", "10.0.0.1"
	docs[0].Networks[1].CIDR, docs[0].Networks[1].Gateway, docs[0].Networks[1].Routes[0].Gateway = "10.1.0.0/16", "10.1.0.1", "10.1.255.254"
	proto := docs[1].Nodes[0]
	docs[1].Nodes = make([]NodeAssignment, n)
	for i := range n {
		a := proto
		a.Hostname = fmt.Sprintf("gpu-%05d", i)
		a.BMCAddress = fmt.Sprintf("10.10.%d.%d", i/250, i%250+1)
		a.Addresses = []Address{
			{Interface: "pxe0", Network: "mgmt", Address: fmt.Sprintf("10.0.%d.%d", i/250+1, i%250+1)},
			{Interface: "bond0", Network: "storage", Address: fmt.Sprintf("10.1.%d.%d", i/250+1, i%250+1)},
		}
		a.RoCERails = []RoCERail{{Interface: "rail0", IPv4CIDR: fmt.Sprintf("10.20.%d.%d/31", i/128, i%128*2)}}
		docs[1].Nodes[i] = a
	}
	return docs
}

// BenchmarkPlanSite is what a plan of a 1000-node site costs the API:
// compose, validate, and plan against the same site with one address
// changed.
func BenchmarkPlanSite(b *testing.B) {
	old := mustCompose(siteOf(1000)...)
	docs := siteOf(1000)
	docs[1].Nodes[500].Addresses[1].Address = "10.1.200.200"
	b.ReportAllocs()
	for b.Loop() {
		d, err := Compose(docs...)
		if err != nil {
			b.Fatal(err)
		}
		if err := Validate(d); err != nil {
			b.Fatal(err)
		}
		p, err := MakePlan(old, d)
		if err != nil || len(p.Changes) != 1 {
			b.Fatalf("plan %v, %v", p.Lines(), err)
		}
	}
}
