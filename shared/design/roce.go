package design

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"
	"strings"

	"github.com/maasflow/maasflow/shared/domain"
)

// KindRoCERow names one of a site's RoCE rows in a plan: "roce_row
// gpu-a01:rail0".
const KindRoCERow = "roce_row"

// RoCERowID is a RoCE row's id: "<hostname>:<interface>", as the store
// keys its rows (the hostname in lower case, which a design's hostnames
// already are).
func RoCERowID(hostname, iface string) string { return strings.ToLower(hostname) + ":" + iface }

// Hosts are the hostnames the design assigns. The design owns the RoCE
// rows of each: its roce_rails are the host's rows, none when it has no
// rails.
func (d Design) Hosts() map[string]bool {
	out := make(map[string]bool, len(d.Nodes))
	for _, n := range d.Nodes {
		out[strings.ToLower(n.Hostname)] = true
	}
	return out
}

// RoCERows are the RoCE rows the design's nodes own, one per rail, in id
// order, with Source RoCESourceDesign; SiteID and UpdatedAt are the
// caller's to set.
func RoCERows(d Design) []domain.RoCEAssignment {
	var out []domain.RoCEAssignment
	for _, n := range d.Nodes {
		for _, r := range n.RoCERails {
			out = append(out, domain.RoCEAssignment{ID: RoCERowID(n.Hostname, r.Interface), Hostname: strings.ToLower(n.Hostname),
				Interface: r.Interface, IPv4CIDR: r.IPv4CIDR, Source: domain.RoCESourceDesign})
		}
	}
	slices.SortFunc(out, func(a, b domain.RoCEAssignment) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// AddRoCE adds to the plan the site's RoCE rows the apply changes. before
// is what the site's rows read now: the stored design's rails and the
// direct rows of the hosts it does not name. After the apply, every host
// next names has its rails as its rows, and the direct rows of the other
// hosts stay. So a host's direct rows are superseded by the design that
// first names it: a row the design repeats changes its source (and its
// address when the rail's differs), the others are removed; a host or a
// rail that leaves the design takes its rows with it.
//
// The plan's hash then also covers these changes, so a direct row written
// between plan and apply makes the apply refuse the plan it no longer is.
func (p *Plan) AddRoCE(before []domain.RoCEAssignment, next Design) {
	hosts := next.Hosts()
	was := make(map[string]domain.RoCEAssignment, len(before))
	for _, r := range before {
		was[r.ID] = r
	}
	will := map[string]domain.RoCEAssignment{}
	for _, r := range RoCERows(next) {
		will[r.ID] = r
	}
	for _, r := range before {
		if r.Source != domain.RoCESourceDesign && !hosts[strings.ToLower(r.Hostname)] {
			will[r.ID] = r
		}
	}
	var changes []Change
	for _, id := range slices.Sorted(maps.Keys(will)) {
		n := will[id]
		o, had := was[id]
		if !had {
			changes = append(changes, Change{Action: ActionAdd, Kind: KindRoCERow, Name: id, Fields: []string{"ipv4_cidr: " + n.IPv4CIDR}})
			continue
		}
		var fields []string
		if o.IPv4CIDR != n.IPv4CIDR {
			fields = append(fields, "ipv4_cidr: "+o.IPv4CIDR+" -> "+n.IPv4CIDR)
		}
		if o.Source != n.Source {
			fields = append(fields, "source: "+sourceName(o.Source)+" -> "+sourceName(n.Source))
		}
		if len(fields) > 0 {
			changes = append(changes, Change{Action: ActionChange, Kind: KindRoCERow, Name: id, Fields: fields})
		}
	}
	for _, id := range slices.Sorted(maps.Keys(was)) {
		if _, kept := will[id]; kept {
			continue
		}
		c := Change{Action: ActionRemove, Kind: KindRoCERow, Name: id}
		if was[id].Source != domain.RoCESourceDesign {
			c.Fields = []string{"superseded by the design"}
		}
		changes = append(changes, c)
	}
	if len(changes) == 0 {
		return
	}
	p.Changes = append(p.Changes, changes...)
	lines := Plan{Changes: changes}.Lines()
	sum := sha256.Sum256([]byte(p.Hash + "\n" + strings.Join(lines, "\n")))
	p.Hash = hex.EncodeToString(sum[:])
}

func sourceName(s string) string {
	if s == "" {
		return domain.RoCESourceDirect
	}
	return s
}
