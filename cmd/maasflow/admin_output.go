package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
)

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
	tw   *tabwriter.Writer
	rows int
}

func newAdminTable(w io.Writer, header ...string) *adminTable {
	t := &adminTable{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
	t.row(header...)
	t.rows = 0
	return t
}

func (t *adminTable) row(cells ...string) {
	for i, c := range cells {
		cells[i] = adminCell(orDash(c))
	}
	fmt.Fprintln(t.tw, strings.Join(cells, "\t"))
	t.rows++
}

// flush writes the table; a table without rows says so under its header.
func (t *adminTable) flush() {
	if t.rows == 0 {
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
