package asl

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ohler55/ojg/jp"
)

// path is a compiled JSONPath. AWS follows Jayway JsonPath: a definite path
// (names and indexes only) yields one value, anything else (wildcards,
// slices, filters, unions, deep scan) yields an array of the matches.
//
// Definite paths are walked here, without allocation, and accept any
// character in a dotted name except '.' and '[' (Jayway reads
// "$.dest-code" as the key "dest-code"); the rest goes to ojg's jp.
type path struct {
	text     string
	context  bool    // "$$…": evaluated against the context object
	variable string  // "$name…": evaluated against a workflow variable
	segs     []seg   // definite path
	expr     jp.Expr // indefinite path; nil when definite
}

type seg struct {
	key     string
	index   int
	isIndex bool
}

// definite reports whether the path names a single node.
func (p *path) definite() bool { return p.expr == nil }

// isRoot reports whether the path is "$".
func (p *path) isRoot() bool {
	return p.expr == nil && len(p.segs) == 0 && !p.context && p.variable == ""
}

// parsePath compiles a JSONPath ("$…" or "$$…").
func parsePath(text string) (*path, error) {
	if !strings.HasPrefix(text, "$") {
		return nil, fmt.Errorf("%q is not a JSONPath: it must start with '$'", text)
	}
	p := &path{text: text}
	rest := text[1:]
	if strings.HasPrefix(rest, "$") {
		p.context = true
		rest = rest[1:]
	}
	if !p.context && rest != "" && rest[0] != '.' && rest[0] != '[' {
		n := strings.IndexAny(rest, ".[")
		if n < 0 {
			n = len(rest)
		}
		if !validVariableName(rest[:n]) {
			return nil, fmt.Errorf("%q is not a JSONPath: %q is not a valid variable name", text, rest[:n])
		}
		p.variable, rest = rest[:n], rest[n:]
	} else if rest != "" && rest[0] != '.' && rest[0] != '[' {
		return nil, fmt.Errorf("%q is not a JSONPath: it must continue with '.' or '['", text)
	}
	segs, definite, err := parseDefinite(rest)
	if err != nil {
		return nil, fmt.Errorf("%q is not a valid JSONPath: %w", text, err)
	}
	if definite {
		p.segs = segs
		return p, nil
	}
	x, err := jp.ParseString("$" + rest)
	if err != nil {
		return nil, fmt.Errorf("%q is not a valid JSONPath: %w", text, err)
	}
	p.expr = x
	return p, nil
}

// parseReferencePath compiles a reference path: names and indexes only,
// which identifies a single node (ResultPath, ItemsPath, Variable targets).
func parseReferencePath(text string) (*path, error) {
	p, err := parsePath(text)
	if err != nil {
		return nil, err
	}
	if !p.definite() {
		return nil, fmt.Errorf("%q is not a reference path: only '.name', ['name'] and [index] are allowed (no @ .. , : ? *)", text)
	}
	return p, nil
}

// parseDefinite reads ".name", "['name']" and "[index]" segments. It reports
// definite=false (and no error) at the first construct that only ojg knows.
func parseDefinite(s string) ([]seg, bool, error) {
	var segs []seg
	for i := 0; i < len(s); {
		switch s[i] {
		case '.':
			i++
			if i >= len(s) {
				return nil, false, fmt.Errorf("ends with '.'")
			}
			if s[i] == '.' || s[i] == '*' || s[i] == '[' {
				return nil, false, nil
			}
			j := i
			for j < len(s) && s[j] != '.' && s[j] != '[' {
				j++
			}
			name := s[i:j]
			if strings.ContainsAny(name, "*@?,:()' \"") {
				return nil, false, fmt.Errorf("unexpected character in name %q", name)
			}
			segs = append(segs, seg{key: name})
			i = j
		case '[':
			end := strings.IndexByte(s[i:], ']')
			if end < 0 {
				return nil, false, fmt.Errorf("unclosed '['")
			}
			inner := strings.TrimSpace(s[i+1 : i+end])
			if len(inner) >= 2 && (inner[0] == '\'' || inner[0] == '"') && inner[len(inner)-1] == inner[0] {
				key := inner[1 : len(inner)-1]
				if strings.ContainsAny(key, "'\"") {
					return nil, false, nil
				}
				segs = append(segs, seg{key: key})
				i += end + 1
				continue
			}
			n, err := strconv.Atoi(inner)
			if err != nil {
				return nil, false, nil
			}
			segs = append(segs, seg{index: n, isIndex: true})
			i += end + 1
		default:
			return nil, false, fmt.Errorf("unexpected %q", s[i:])
		}
	}
	return segs, true, nil
}

// get evaluates the path. A definite path that matches nothing returns
// found=false; an indefinite one returns the (possibly empty) match list.
func (p *path) get(input any, ctx scope) (any, bool) {
	root := input
	if p.context {
		root = ctx.context()
	} else if p.variable != "" {
		v, ok := ctx.variable(p.variable)
		if !ok {
			return nil, false
		}
		root = v
	}
	if p.expr != nil {
		res := p.expr.Get(root)
		if res == nil {
			res = []any{}
		}
		return res, true
	}
	return walk(root, p.segs)
}

func walk(v any, segs []seg) (any, bool) {
	for _, s := range segs {
		if s.isIndex {
			a, ok := v.([]any)
			if !ok {
				return nil, false
			}
			i := s.index
			if i < 0 {
				i += len(a)
			}
			if i < 0 || i >= len(a) {
				return nil, false
			}
			v = a[i]
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		v, ok = m[s.key]
		if !ok {
			return nil, false
		}
	}
	return v, true
}

// normalized renders the path as Jayway does in its messages: $['a'][0].
func (p *path) normalized() string {
	if p.expr != nil {
		return p.text
	}
	var b strings.Builder
	b.WriteString("$")
	for _, s := range p.segs {
		if s.isIndex {
			fmt.Fprintf(&b, "[%d]", s.index)
		} else {
			fmt.Fprintf(&b, "['%s']", s.key)
		}
	}
	return b.String()
}

// set returns root with the node at the reference path replaced by val,
// creating missing intermediate objects. Containers along the path are
// copied, never modified. ok=false when the path runs through a value that
// is neither an object nor (for an index) an array that long.
func (p *path) set(root, val any) (any, bool) {
	return setSegs(root, p.segs, val)
}

func setSegs(v any, segs []seg, val any) (any, bool) {
	if len(segs) == 0 {
		return val, true
	}
	s := segs[0]
	if s.isIndex {
		a, ok := v.([]any)
		if !ok {
			return nil, false
		}
		i := s.index
		if i < 0 {
			i += len(a)
		}
		if i < 0 || i >= len(a) {
			return nil, false
		}
		child, ok := setSegs(a[i], segs[1:], val)
		if !ok {
			return nil, false
		}
		out := make([]any, len(a))
		copy(out, a)
		out[i] = child
		return out, true
	}
	var m map[string]any
	switch t := v.(type) {
	case map[string]any:
		m = t
	case nil:
		if len(segs) > 0 {
			// A missing intermediate node is created as an object.
			m = nil
		}
	default:
		return nil, false
	}
	cur, exists := m[s.key]
	if !exists {
		cur = nil
	}
	child, ok := setSegs(cur, segs[1:], val)
	if !ok {
		return nil, false
	}
	out := make(map[string]any, len(m)+1)
	for k, e := range m {
		out[k] = e
	}
	out[s.key] = child
	return out, true
}

// validVariableName reports whether name may name a workflow variable: a
// letter or '_' first, then letters, digits and '_' (AWS's rule, which
// also keeps "$states" reserved).
func validVariableName(name string) bool {
	if name == "" || name == "states" || len(name) > 80 {
		return false
	}
	for i, c := range name {
		switch {
		case c == '_', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case i > 0 && c >= '0' && c <= '9':
		default:
			return false
		}
	}
	return true
}
