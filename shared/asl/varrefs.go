package asl

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// varRef is a reference to a workflow variable found in a definition.
type varRef struct {
	name, state, field string
}

// varScopeCheck gathers, for one variable scope of a definition (the state
// machine, or one distributed Map's child executions, which see no outer
// variables), the names some state assigns and the references made.
type varScopeCheck struct {
	assigned map[string]bool
	refs     []varRef
}

// varRefPattern finds $name in a path or an intrinsic call: a $ not
// followed by '.', '[' or another $ (the input and the context object).
var varRefPattern = regexp.MustCompile(`(?:^|[^$\w])\$([A-Za-z_][A-Za-z0-9_]*)`)

// checkVariableRefs refuses a reference to a variable that no state in its
// scope assigns, as Step Functions does when a state machine is created.
func (c *compiler) checkVariableRefs(top map[string]any) {
	var scopes []*varScopeCheck
	var walkMachine func(m map[string]any, prefix string, sc *varScopeCheck)
	walkMachine = func(m map[string]any, prefix string, sc *varScopeCheck) {
		states, _ := m["States"].(map[string]any)
		for _, name := range sortedKeys(states) {
			st, ok := states[name].(map[string]any)
			if !ok {
				continue
			}
			where := prefix + name
			collectAssigned(st["Assign"], sc)
			if list, ok := st["Choices"].([]any); ok {
				for _, r := range list {
					if rm, ok := r.(map[string]any); ok {
						collectAssigned(rm["Assign"], sc)
					}
				}
			}
			if list, ok := st["Catch"].([]any); ok {
				for _, r := range list {
					if rm, ok := r.(map[string]any); ok {
						collectAssigned(rm["Assign"], sc)
					}
				}
			}
			for _, k := range sortedKeys(st) {
				switch k {
				case "Branches":
					list, _ := st[k].([]any)
					for i, b := range list {
						if bm, ok := b.(map[string]any); ok {
							walkMachine(bm, fmt.Sprintf("%s/Branch %d/", where, i), sc)
						}
					}
				case "ItemProcessor", "Iterator":
					pm, ok := st[k].(map[string]any)
					if !ok {
						continue
					}
					inner := sc
					if cfg, ok := pm["ProcessorConfig"].(map[string]any); ok && cfg["Mode"] == "DISTRIBUTED" {
						inner = &varScopeCheck{assigned: map[string]bool{}}
						scopes = append(scopes, inner)
					}
					walkMachine(pm, where+"/"+k+"/", inner)
				case "Result":
					// A Pass state's Result is a literal: nothing in it is evaluated.
				default:
					collectRefs(st[k], k, where, k, sc)
				}
			}
		}
	}
	root := &varScopeCheck{assigned: map[string]bool{}}
	scopes = append(scopes, root)
	walkMachine(top, "", root)
	for _, sc := range scopes {
		for _, r := range sc.refs {
			if !sc.assigned[r.name] {
				c.add(r.state, r.field, "references the variable $%s, which no state assigns%s", r.name, scopeNote(sc, root))
			}
		}
	}
}

func scopeNote(sc, root *varScopeCheck) string {
	if sc == root {
		return ""
	}
	return " in this distributed Map (its child executions do not see outer variables)"
}

func collectAssigned(v any, sc *varScopeCheck) {
	m, ok := v.(map[string]any)
	if !ok {
		return
	}
	for k := range m {
		sc.assigned[strings.TrimSuffix(k, ".$")] = true
	}
}

// collectRefs finds variable references in the value of field key: a
// path field ("…Path", Choice's Variable), or a "….$" template key.
func collectRefs(v any, key, state, field string, sc *varScopeCheck) {
	switch t := v.(type) {
	case string:
		if !strings.HasSuffix(key, ".$") && !strings.HasSuffix(key, "Path") && key != "Variable" {
			return
		}
		seen := map[string]bool{}
		for _, m := range varRefPattern.FindAllStringSubmatch(stripQuoted(t), -1) {
			if !seen[m[1]] {
				seen[m[1]] = true
				sc.refs = append(sc.refs, varRef{name: m[1], state: state, field: field})
			}
		}
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			collectRefs(t[k], k, state, field, sc)
		}
	case []any:
		for _, e := range t {
			collectRefs(e, key, state, field, sc)
		}
	}
}

// stripQuoted blanks out the '…' string literals of an intrinsic call, so
// that a $ inside one is not taken for a variable.
func stripQuoted(s string) string {
	if !strings.Contains(s, "'") {
		return s
	}
	b := []byte(s)
	in := false
	for i := 0; i < len(b); i++ {
		switch {
		case b[i] == '\\' && in && i+1 < len(b):
			b[i], b[i+1] = ' ', ' '
			i++
		case b[i] == '\'':
			in = !in
		case in:
			b[i] = ' '
		}
	}
	return string(b)
}
