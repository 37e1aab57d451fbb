package design

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
)

// Change actions of a plan.
const (
	ActionAdd    = "add"
	ActionChange = "change"
	ActionRemove = "remove"
)

// Plan is what applying a design would do to the stored one: records to
// add, change or remove, hosts to onboard and nodes whose network would be
// reconfigured. Hash names exactly this plan (the stored design it starts
// from and the design it ends at), so an apply can insist on it.
type Plan struct {
	Hash        string   `json:"hash"`
	Changes     []Change `json:"changes"`
	Onboard     []string `json:"onboard"`
	Reconfigure []string `json:"reconfigure"`
}

// Change is one record's change; Fields lists the changed fields
// ("path: old -> new") of a change.
type Change struct {
	Action string   `json:"action"`
	Kind   string   `json:"kind"`
	Name   string   `json:"name"`
	Fields []string `json:"fields,omitempty"`
}

// Empty tells whether the plan changes nothing.
func (p Plan) Empty() bool { return len(p.Changes) == 0 }

// Lines renders the plan one line per record, like terraform plan: a new
// node says it will be onboarded and a changed one whose network changes
// says it will be reconfigured, so one changed address is one line.
func (p Plan) Lines() []string {
	onboard, reconf := set(p.Onboard), set(p.Reconfigure)
	out := make([]string, 0, len(p.Changes))
	for _, c := range p.Changes {
		sign := map[string]string{ActionAdd: "+", ActionChange: "~", ActionRemove: "-"}[c.Action]
		line := fmt.Sprintf("%s %s %s", sign, c.Kind, c.Name)
		if len(c.Fields) > 0 {
			line += ": " + strings.Join(c.Fields, ", ")
		}
		if c.Kind == KindNode && onboard[c.Name] {
			line += " (onboard)"
		}
		if c.Kind == KindNode && reconf[c.Name] {
			line += " (network reconfigured)"
		}
		out = append(out, line)
	}
	return out
}

func set(xs []string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// Hash is a design's content hash (its canonical JSON).
func Hash(d Design) string {
	b, err := json.Marshal(d)
	if err != nil {
		panic(fmt.Sprintf("design: marshal: %v", err)) // only plain data: cannot fail
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// MakePlan compares the stored design (zero when there is none) with a
// validated new one. Nodes only in the new design are to be onboarded; a
// node in both whose effective interfaces differ is to be reconfigured. A
// node only in the old design is removed from the design; decommissioning
// it stays an explicit operation.
func MakePlan(old, next Design) (Plan, error) {
	p := Plan{Changes: []Change{}, Onboard: []string{}, Reconfigure: []string{}}
	sum := sha256.Sum256([]byte(Hash(old) + ":" + Hash(next)))
	p.Hash = hex.EncodeToString(sum[:])
	diffKind(&p, KindHardwareProfile, old.HardwareProfiles, next.HardwareProfiles, func(o HardwareProfile) string { return o.Name })
	diffKind(&p, KindHostProfile, old.HostProfiles, next.HostProfiles, func(o HostProfile) string { return o.Name })
	diffKind(&p, KindNetwork, old.Networks, next.Networks, func(o Network) string { return o.Name })
	diffKind(&p, KindNetworkLink, old.NetworkLinks, next.NetworkLinks, func(o NetworkLink) string { return o.Name })
	diffKind(&p, KindNode, old.Nodes, next.Nodes, func(o NodeAssignment) string { return o.Hostname })

	oldIx, newIx := newIndex(old), newIndex(next)
	for _, n := range next.Nodes {
		if _, had := oldIx.nodes[n.Hostname]; !had {
			p.Onboard = append(p.Onboard, n.Hostname)
			continue
		}
		before, err := oldIx.effective(n.Hostname)
		if err != nil {
			return Plan{}, fmt.Errorf("stored design: %w", err)
		}
		after, err := newIx.effective(n.Hostname)
		if err != nil {
			return Plan{}, err
		}
		if networkOf(before) != networkOf(after) {
			p.Reconfigure = append(p.Reconfigure, n.Hostname)
			if !slices.ContainsFunc(p.Changes, func(c Change) bool { return c.Kind == KindNode && c.Name == n.Hostname }) {
				// The node's own record is unchanged: its profile or a
				// network moved under it. Say so on its line.
				p.Changes = append(p.Changes, Change{Action: ActionChange, Kind: KindNode, Name: n.Hostname, Fields: []string{"effective network"}})
			}
		}
	}
	return p, nil
}

// networkOf is what reaches MAAS's interfaces and disks for a node.
func networkOf(e Effective) string {
	b, _ := json.Marshal(struct {
		I []EffectiveInterface
		B *BootDisk
		A []DeviceAlias
	}{e.Interfaces, e.BootDisk, e.DeviceAliases})
	return string(b)
}

func diffKind[T any](p *Plan, kind string, old, next []T, name func(T) string) {
	before := map[string]T{}
	for _, o := range old {
		before[name(o)] = o
	}
	after := map[string]T{}
	for _, o := range next {
		after[name(o)] = o
	}
	for _, n := range slices.Sorted(maps.Keys(after)) {
		o, had := before[n]
		if !had {
			p.Changes = append(p.Changes, Change{Action: ActionAdd, Kind: kind, Name: n})
			continue
		}
		if reflect.DeepEqual(o, after[n]) {
			continue // the common case, without flattening both
		}
		if fields := fieldDiff(o, after[n]); len(fields) > 0 {
			p.Changes = append(p.Changes, Change{Action: ActionChange, Kind: kind, Name: n, Fields: fields})
		}
	}
	for _, n := range slices.Sorted(maps.Keys(before)) {
		if _, kept := after[n]; !kept {
			p.Changes = append(p.Changes, Change{Action: ActionRemove, Kind: kind, Name: n})
		}
	}
}

// fieldDiff lists the leaf fields that differ between two records as
// "path: old -> new".
func fieldDiff(a, b any) []string {
	fa, fb := flatten(a), flatten(b)
	keys := map[string]bool{}
	for k := range fa {
		keys[k] = true
	}
	for k := range fb {
		keys[k] = true
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		va, okA := fa[k]
		vb, okB := fb[k]
		switch {
		case okA && okB && va == vb:
		case !okA:
			out = append(out, fmt.Sprintf("%s: (none) -> %s", k, vb))
		case !okB:
			out = append(out, fmt.Sprintf("%s: %s -> (none)", k, va))
		default:
			out = append(out, fmt.Sprintf("%s: %s -> %s", k, va, vb))
		}
	}
	return out
}

func flatten(v any) map[string]string {
	b, _ := json.Marshal(v)
	var x any
	_ = json.Unmarshal(b, &x)
	out := map[string]string{}
	var walk func(prefix string, x any)
	walk = func(prefix string, x any) {
		switch t := x.(type) {
		case map[string]any:
			for k, c := range t {
				if prefix == "" {
					walk(k, c)
				} else {
					walk(prefix+"."+k, c)
				}
			}
		case []any:
			for i, c := range t {
				walk(fmt.Sprintf("%s[%d]", prefix, i), c)
			}
		default:
			j, _ := json.Marshal(t)
			out[prefix] = strings.Trim(string(j), `"`)
		}
	}
	walk("", x)
	return out
}
