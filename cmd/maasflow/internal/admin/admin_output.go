package admin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"go.yaml.in/yaml/v3"
)

// emit writes an API answer for programs: -o json verbatim, ending with a
// newline; -o yaml the same document as YAML, keys in the API's order.
func (r *adminRun) emit(body []byte) {
	if len(body) == 0 {
		return
	}
	if r.yaml() {
		y, err := jsonToYAML(body)
		if err == nil {
			_, _ = r.env.stdout.Write(y)
			return
		}
		// Not JSON (never from this API): show it as it came.
	}
	_, _ = r.env.stdout.Write(body)
	if body[len(body)-1] != '\n' {
		_, _ = io.WriteString(r.env.stdout, "\n")
	}
}

// emitValue marshals v and emits it.
func (r *adminRun) emitValue(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode output: %w", err)
	}
	r.emit(b)
	return nil
}

// jsonToYAML converts one JSON document to block-style YAML. JSON is YAML,
// so the parser keeps the key order; clearing the flow style makes it
// block style, and the encoder quotes any string that would otherwise read
// as another type ("true", "1").
func jsonToYAML(b []byte) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("convert to YAML: %w", err)
	}
	var blockStyle func(n *yaml.Node)
	blockStyle = func(n *yaml.Node) {
		n.Style &^= yaml.FlowStyle | yaml.DoubleQuotedStyle
		for _, c := range n.Content {
			blockStyle(c)
		}
	}
	blockStyle(&doc)
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, fmt.Errorf("convert to YAML: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("convert to YAML: %w", err)
	}
	return out.Bytes(), nil
}

// adminText makes text from the API safe for a terminal: MAAS installation
// output and script results are machine-written and may hold escape
// sequences, which must not reach the operator's terminal. Newlines and tabs
// stay; every other control character becomes U+FFFD.
func adminText(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return r
		}
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			return unicode.ReplacementChar
		}
		return r
	}, s)
}

// adminCell is adminText on one line, for a table cell or a message.
func adminCell(s string) string {
	s = adminText(s)
	s = strings.ReplaceAll(s, "\r", " ")
	s = strings.ReplaceAll(s, "\n", " ⏎ ")
	return strings.ReplaceAll(s, "\t", " ")
}

// adminTime prints an API time in UTC, "-" when unset.
func adminTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func adminTimePtr(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return adminTime(*t)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// adminTable writes aligned columns; every cell is made terminal-safe.
type adminTable struct {
	tw        *tabwriter.Writer
	rows      int
	noHeaders bool
}

func newAdminTable(w io.Writer, header ...string) *adminTable {
	t := &adminTable{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
	t.row(header...)
	t.rows = 0
	return t
}

// table is newAdminTable on stdout, without the header under --no-headers.
func (r *adminRun) table(header ...string) *adminTable {
	if !r.noHeaders {
		return newAdminTable(r.env.stdout, header...)
	}
	return &adminTable{tw: tabwriter.NewWriter(r.env.stdout, 0, 0, 2, ' ', 0), noHeaders: true}
}

func (t *adminTable) row(cells ...string) {
	for i, c := range cells {
		cells[i] = adminCell(orDash(c))
	}
	fmt.Fprintln(t.tw, strings.Join(cells, "\t"))
	t.rows++
}

// flush writes the table; a table without rows says so under its header
// (and prints nothing at all without one, for scripts).
func (t *adminTable) flush() {
	if t.rows == 0 && !t.noHeaders {
		fmt.Fprintln(t.tw, "(none)")
	}
	_ = t.tw.Flush()
}

// adminFields writes "Label:  value" lines, aligned.
type adminFields struct {
	tw *tabwriter.Writer
}

func newAdminFields(w io.Writer) *adminFields {
	return &adminFields{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
}

func (f *adminFields) add(label, value string) {
	fmt.Fprintf(f.tw, "%s:\t%s\n", label, adminCell(orDash(value)))
}

func (f *adminFields) flush() { _ = f.tw.Flush() }

// adminPolicyLines prints a policy object as sorted "key  value" lines
// under an indent; nested objects print as compact JSON.
func adminPolicyLines(w io.Writer, policy map[string]json.RawMessage) {
	keys := make([]string, 0, len(policy))
	for k := range policy {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, k := range keys {
		fmt.Fprintf(tw, "  %s\t%s\n", adminCell(k), adminCell(adminJSONValue(policy[k])))
	}
	_ = tw.Flush()
}

// adminJSONValue prints a JSON value for humans: strings unquoted, the rest
// as compact JSON.
func adminJSONValue(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return string(raw)
	}
	return string(b)
}

// adminIndent indents every line of a multi-line text.
func adminIndent(w io.Writer, text, indent string) {
	text = strings.TrimRight(adminText(text), "\n")
	for _, line := range strings.Split(text, "\n") {
		fmt.Fprintf(w, "%s%s\n", indent, line)
	}
}

// named is a record's name for a table cell: the name the API gave beside
// the id, else the id (an older server, or a record gone since).
func named(name, id string) string {
	if name != "" {
		return name
	}
	return id
}

// namedID is a name and its id for a detail field: "lab-a (5e00…)".
func namedID(name, id string) string {
	if name == "" || id == "" {
		return id
	}
	return name + " (" + id + ")"
}
