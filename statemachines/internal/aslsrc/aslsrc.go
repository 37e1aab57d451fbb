// Package aslsrc renders the state machines' YAML sources into the ASL
// JSON files that are deployed and embedded.
//
// A source is the ASL document written in YAML (JSON is YAML, so a state
// copied from the JSON is already valid source), with two additions:
//
//   - statemachines/src/errors.yaml is read in front of every source, so
//     the error lists and retriers it anchors (&name) are used by alias
//     (*name) in each machine: a list of errors is written once.
//   - Inside ErrorEquals, Retry and Catch, an element that is itself a list
//     is spliced into the enclosing list, so a Catch can name its own
//     errors and then shared lists: [MachineStateUnsafeError, *maas_transient].
//
// Top-level members whose names start with "x-" hold the anchors and are
// left out of the JSON. Member order, numbers and text are kept as
// written, so the JSON is stable under regeneration.
package aslsrc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// spliced are the members whose lists take nested lists as their elements.
var spliced = map[string]bool{"ErrorEquals": true, "Retry": true, "Catch": true}

// Render returns the ASL JSON of src read after shared: indented by two
// spaces, ending in a newline.
func Render(shared, src []byte) ([]byte, error) {
	doc := make([]byte, 0, len(shared)+len(src)+1)
	doc = append(append(append(doc, shared...), '\n'), src...)
	var root yaml.Node
	if err := yaml.Unmarshal(doc, &root); err != nil {
		return nil, err
	}
	if root.Kind != yaml.DocumentNode || len(root.Content) != 1 || root.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("a source is one YAML mapping")
	}
	var b bytes.Buffer
	if err := writeMapping(&b, root.Content[0], "", true); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b.Bytes(), "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

func resolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

func write(b *bytes.Buffer, n *yaml.Node, path string) error {
	n = resolve(n)
	switch n.Kind {
	case yaml.MappingNode:
		return writeMapping(b, n, path, false)
	case yaml.SequenceNode:
		b.WriteByte('[')
		first := true
		if err := writeElements(b, n, path, spliced[lastKey(path)], &first); err != nil {
			return err
		}
		b.WriteByte(']')
		return nil
	case yaml.ScalarNode:
		return writeScalar(b, n, path)
	}
	return fmt.Errorf("%s: unsupported YAML node", path)
}

// writeElements writes the elements of sequence n, splicing nested
// sequences when splice is set.
func writeElements(b *bytes.Buffer, n *yaml.Node, path string, splice bool, first *bool) error {
	for i, e := range n.Content {
		e = resolve(e)
		if splice && e.Kind == yaml.SequenceNode {
			if err := writeElements(b, e, path, true, first); err != nil {
				return err
			}
			continue
		}
		if !*first {
			b.WriteByte(',')
		}
		*first = false
		if err := write(b, e, fmt.Sprintf("%s[%d]", path, i)); err != nil {
			return err
		}
	}
	return nil
}

func writeMapping(b *bytes.Buffer, n *yaml.Node, path string, top bool) error {
	b.WriteByte('{')
	seen := map[string]bool{}
	first := true
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := resolve(n.Content[i])
		if k.Kind != yaml.ScalarNode {
			return fmt.Errorf("%s: a member name must be text", path)
		}
		if k.Value == "<<" {
			return fmt.Errorf("%s: merge keys are not used in sources", path)
		}
		if top && strings.HasPrefix(k.Value, "x-") {
			continue
		}
		if seen[k.Value] {
			return fmt.Errorf("%s: member %q is given twice", path, k.Value)
		}
		seen[k.Value] = true
		if !first {
			b.WriteByte(',')
		}
		first = false
		if err := writeString(b, k.Value); err != nil {
			return err
		}
		b.WriteByte(':')
		if err := write(b, n.Content[i+1], path+"/"+k.Value); err != nil {
			return err
		}
	}
	b.WriteByte('}')
	return nil
}

func writeScalar(b *bytes.Buffer, n *yaml.Node, path string) error {
	switch n.ShortTag() {
	case "!!str":
		return writeString(b, n.Value)
	case "!!int", "!!float":
		if !json.Valid([]byte(n.Value)) {
			return fmt.Errorf("%s: %q is not a JSON number", path, n.Value)
		}
		b.WriteString(n.Value)
	case "!!bool":
		var v bool
		if err := n.Decode(&v); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		fmt.Fprint(b, v)
	case "!!null":
		b.WriteString("null")
	default:
		return fmt.Errorf("%s: unsupported scalar %s", path, n.ShortTag())
	}
	return nil
}

func writeString(b *bytes.Buffer, s string) error {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return err
	}
	b.Truncate(b.Len() - 1) // Encode's newline
	return nil
}

func lastKey(path string) string {
	return path[strings.LastIndexByte(path, '/')+1:]
}
