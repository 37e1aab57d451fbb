package design

import (
	"cmp"
	"slices"
)

// Design is the composition of one site's documents: every object once,
// ordered by name, with the document each came from.
type Design struct {
	HostProfiles     []HostProfile     `json:"host_profiles"`
	HardwareProfiles []HardwareProfile `json:"hardware_profiles"`
	Networks         []Network         `json:"networks"`
	NetworkLinks     []NetworkLink     `json:"network_links"`
	Nodes            []NodeAssignment  `json:"nodes"`
	// Sources maps "<kind>/<name>" to the document that defined it.
	Sources map[string]string `json:"sources"`
}

// SourceOf names the document an object came from.
func (d Design) SourceOf(kind, name string) string { return d.Sources[kind+"/"+name] }

// Compose assembles documents in precedence order: the first is the base
// and each later one takes precedence over those before it. A later
// document may add objects; it may replace an object of the same kind and
// name only when its definition says override: true, and then it replaces
// the whole object (no field merge across documents: inheritance is how
// profiles share values). Any other repeat is a conflict naming both
// documents, and so is a repeat within one document.
func Compose(docs ...Document) (Design, error) {
	var ps problems
	d := Design{Sources: map[string]string{}}
	hp := composeKind(&ps, &d, KindHostProfile, docs, func(x Document) []HostProfile { return x.HostProfiles },
		func(o HostProfile) (string, bool) { return o.Name, o.Override })
	hw := composeKind(&ps, &d, KindHardwareProfile, docs, func(x Document) []HardwareProfile { return x.HardwareProfiles },
		func(o HardwareProfile) (string, bool) { return o.Name, o.Override })
	nw := composeKind(&ps, &d, KindNetwork, docs, func(x Document) []Network { return x.Networks },
		func(o Network) (string, bool) { return o.Name, o.Override })
	nl := composeKind(&ps, &d, KindNetworkLink, docs, func(x Document) []NetworkLink { return x.NetworkLinks },
		func(o NetworkLink) (string, bool) { return o.Name, o.Override })
	nd := composeKind(&ps, &d, KindNode, docs, func(x Document) []NodeAssignment { return x.Nodes },
		func(o NodeAssignment) (string, bool) { return o.Hostname, o.Override })
	d.HostProfiles, d.HardwareProfiles, d.Networks, d.NetworkLinks, d.Nodes = hp, hw, nw, nl, nd
	if err := ps.err(); err != nil {
		return Design{}, err
	}
	return d, nil
}

func composeKind[T any](ps *problems, d *Design, kind string, docs []Document, list func(Document) []T, ident func(T) (string, bool)) []T {
	byName := map[string]T{}
	for di, doc := range docs {
		docName := documentName(doc, di)
		seenHere := map[string]bool{}
		for i, o := range list(doc) {
			name, override := ident(o)
			field := kind + "s[" + itoa(i) + "]"
			if name == "" {
				ps.add(docName, kind, "", field+".name", "is required")
				continue
			}
			if seenHere[name] {
				ps.add(docName, kind, name, field, "is defined twice in %s", docName)
				continue
			}
			seenHere[name] = true
			if prev, dup := d.Sources[kind+"/"+name]; dup && !override {
				ps.add(docName, kind, name, field, "conflicts with its definition in %s (set override: true to replace it)", prev)
				continue
			}
			byName[name] = o
			d.Sources[kind+"/"+name] = docName
		}
	}
	out := make([]T, 0, len(byName))
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	slices.SortFunc(names, cmp.Compare)
	for _, n := range names {
		out = append(out, byName[n])
	}
	return out
}

func documentName(doc Document, i int) string {
	if doc.Name != "" {
		return doc.Name
	}
	return "documents[" + itoa(i) + "]"
}
