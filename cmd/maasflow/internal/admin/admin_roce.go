package admin

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// adminRoCEBatch is the most assignments one upsert request carries (the
// API's limit, what one store transaction holds): larger inputs go in
// several requests.
const adminRoCEBatch = 97

// adminMaxRoCEInput bounds the file read by roce upsert.
const adminMaxRoCEInput = 16 << 20

// adminRoCERow is one assignment as the API takes it.
type adminRoCERow struct {
	Hostname  string `json:"hostname"`
	Interface string `json:"interface"`
	IPv4CIDR  string `json:"ipv4_cidr"`
}

// adminRoCEView is one stored assignment.
type adminRoCEView struct {
	ID        string    `json:"id"`
	SiteID    string    `json:"site_id"`
	Hostname  string    `json:"hostname"`
	Interface string    `json:"interface"`
	IPv4CIDR  string    `json:"ipv4_cidr"`
	UpdatedAt time.Time `json:"updated_at"`
	// Source: design (the site's design owns the row) or direct.
	Source string `json:"source"`
}

var adminCSVColumns = []string{"hostname", "interface", "ipv4_cidr"}

// roceFromCSV converts hostname,interface,ipv4_cidr CSV into API items, with
// the input line of each item. A first row naming the three columns (in any
// order) is a header; without one the columns are in that order. Blank
// lines and lines starting with # are skipped. CSV is only an input format
// of this command: the API takes JSON (requirements API boundary §5.1).
func roceFromCSV(in io.Reader) ([]json.RawMessage, []int, error) {
	cr := csv.NewReader(in)
	cr.Comment = '#'
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	order := []int{0, 1, 2}
	var (
		items []json.RawMessage
		lines []int
		first = true
	)
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, usagef("CSV: %s", err.Error())
		}
		line, _ := cr.FieldPos(0)
		for i := range rec {
			rec[i] = strings.TrimSpace(rec[i])
		}
		if first {
			first = false
			if hdr, ok := csvHeader(rec); ok {
				order = hdr
				continue
			}
		}
		if len(rec) != len(adminCSVColumns) {
			return nil, nil, usagef("CSV line %d: %d fields, want 3 (hostname,interface,ipv4_cidr)", line, len(rec))
		}
		row := adminRoCERow{Hostname: rec[order[0]], Interface: rec[order[1]], IPv4CIDR: rec[order[2]]}
		for i, v := range []string{row.Hostname, row.Interface, row.IPv4CIDR} {
			if v == "" {
				return nil, nil, usagef("CSV line %d: %s is empty", line, adminCSVColumns[i])
			}
		}
		b, err := json.Marshal(row)
		if err != nil {
			return nil, nil, fmt.Errorf("CSV line %d: encode: %w", line, err)
		}
		items = append(items, b)
		lines = append(lines, line)
	}
	if len(items) == 0 {
		return nil, nil, usagef("CSV: no assignments (want rows of hostname,interface,ipv4_cidr)")
	}
	return items, lines, nil
}

// csvHeader recognises a header row and returns, for each API column, its
// index in the file.
func csvHeader(rec []string) ([]int, bool) {
	if len(rec) != len(adminCSVColumns) {
		return nil, false
	}
	idx := map[string]int{}
	for i, h := range rec {
		idx[strings.ToLower(h)] = i
	}
	order := make([]int, len(adminCSVColumns))
	for i, c := range adminCSVColumns {
		j, ok := idx[c]
		if !ok {
			return nil, false
		}
		order[i] = j
	}
	return order, true
}

// roceFromJSON reads {"items":[…]} (or a bare array of items). Items are
// passed on as written, so the API names any field it rejects.
func roceFromJSON(b []byte) ([]json.RawMessage, error) {
	trimmed := bytes.TrimSpace(b)
	var items []json.RawMessage
	if len(trimmed) > 0 && trimmed[0] == '[' {
		if err := json.Unmarshal(trimmed, &items); err != nil {
			return nil, usagef("JSON input: not a valid array of assignments")
		}
	} else {
		var doc struct {
			Items []json.RawMessage `json:"items"`
		}
		dec := json.NewDecoder(bytes.NewReader(trimmed))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&doc); err != nil {
			return nil, usagef(`JSON input: want {"items":[{"hostname","interface","ipv4_cidr"},…]} (%s)`, err.Error())
		}
		items = doc.Items
	}
	if len(items) == 0 {
		return nil, usagef("JSON input: no assignments in items")
	}
	return items, nil
}

var adminItemIndex = regexp.MustCompile(`^items\[(\d+)\]`)

func (c *cli) roceCommand() *cobra.Command {
	return c.group("roce", "RoCE assignments of a site",
		c.leaf(adminSpec{
			use: "upsert SITE --file FILE|-", short: `bulk upsert RoCE assignments from {"items":[…]} JSON or hostname,interface,ipv4_cidr CSV`,
			args: []string{"SITE"}, complete: completeSites,
			flags: func(fs *pflag.FlagSet) {
				fs.String("file", "", "input file, - for stdin")
				fs.Bool("csv", false, "the input is CSV (hostname,interface,ipv4_cidr; a header row in any order)")
			},
			run: runRoCEUpsert,
		}),
		c.leaf(adminSpec{
			use: "list SITE", short: "list a site's RoCE assignments", args: []string{"SITE"}, complete: completeSites,
			flags: func(fs *pflag.FlagSet) { fs.String("hostname", "", "only this host") },
			run:   runRoCEList,
		}),
		c.leaf(adminSpec{use: "delete SITE ASSIGNMENT_ID", short: "delete one RoCE assignment", args: []string{"SITE", "ASSIGNMENT_ID"}, complete: completeSites, run: runRoCEDelete}),
	)
}

func runRoCEUpsert(ctx context.Context, r *adminRun, args []string) error {
	if err := r.requireFlags("file"); err != nil {
		return err
	}
	file := r.str("file")
	raw, err := r.readInput(file)
	if err != nil {
		return err
	}
	var (
		items []json.RawMessage
		lines []int
	)
	if r.boolean("csv") {
		items, lines, err = roceFromCSV(bytes.NewReader(raw))
	} else {
		items, err = roceFromJSON(raw)
	}
	if err != nil {
		return err
	}
	c, err := r.client()
	if err != nil {
		return err
	}
	site, err := r.siteID(ctx, c, args[0])
	if err != nil {
		return err
	}

	path := adminPath(adminSitesPath, site) + "/roce-assignments"
	var (
		stored []json.RawMessage
		last   []byte
		calls  int
	)
	for start := 0; start < len(items); start += adminRoCEBatch {
		end := min(start+adminRoCEBatch, len(items))
		body, err := json.Marshal(struct {
			Items []json.RawMessage `json:"items"`
		}{items[start:end]})
		if err != nil {
			return fmt.Errorf("encode request: %w", err)
		}
		resp, err := c.do(ctx, http.MethodPost, path, nil, json.RawMessage(body))
		if err != nil {
			return r.roceHint(err, start, lines, file, len(items))
		}
		var l struct {
			Items []json.RawMessage `json:"items"`
		}
		if err := resp.decode(&l); err != nil {
			return err
		}
		stored = append(stored, l.Items...)
		last = resp.Body
		calls++
	}
	if r.machine() {
		if calls == 1 {
			r.emit(last)
			return nil
		}
		return r.emitValue(struct {
			Items []json.RawMessage `json:"items"`
		}{stored})
	}
	rows := make([]adminRoCEView, 0, len(stored))
	for _, s := range stored {
		var v adminRoCEView
		if err := json.Unmarshal(s, &v); err != nil {
			return fmt.Errorf("unexpected answer from the admin API: %w", err)
		}
		rows = append(rows, v)
	}
	r.printRoCE(rows)
	fmt.Fprintf(r.env.stdout, "\nupserted %d assignment(s) for site %s in %d request(s)\n", len(rows), adminCell(args[0]), calls)
	return nil
}

// roceHint relates an API error about items[i] of one batch to the input
// the operator wrote, and says what was already applied.
func (r *adminRun) roceHint(err error, start int, lines []int, file string, total int) error {
	var apiE *adminAPIError
	if !errors.As(err, &apiE) {
		return err
	}
	var hints []string
	if m := adminItemIndex.FindStringSubmatch(apiE.Field); m != nil {
		i, _ := strconv.Atoi(m[1])
		abs := start + i
		switch {
		case lines != nil && abs < len(lines):
			hints = append(hints, fmt.Sprintf("hint: items[%d] of that request is CSV line %d of %s", i, lines[abs], file))
		case start > 0:
			hints = append(hints, fmt.Sprintf("hint: items[%d] of that request is items[%d] of %s", i, abs, file))
		}
	}
	if start > 0 {
		hints = append(hints, fmt.Sprintf("note: the first %d of %d assignment(s) were stored; upsert is idempotent, so re-run after fixing the input", start, total))
	}
	return &adminHintedError{Err: err, Hints: hints}
}

// readInput reads a named file, or stdin for "-".
func (r *adminRun) readInput(name string) ([]byte, error) {
	var in io.Reader
	if name == "-" {
		in = r.env.stdin
	} else {
		f, err := os.Open(name)
		if err != nil {
			return nil, usagef("--file: %s", err.Error())
		}
		defer func() { _ = f.Close() }()
		in = f
	}
	b, err := io.ReadAll(io.LimitReader(in, adminMaxRoCEInput+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if len(b) > adminMaxRoCEInput {
		return nil, usagef("--file: larger than %d bytes", adminMaxRoCEInput)
	}
	return b, nil
}

func (r *adminRun) printRoCE(rows []adminRoCEView) {
	t := r.table("ID", "HOSTNAME", "INTERFACE", "IPV4_CIDR", "UPDATED", "SOURCE")
	for _, v := range rows {
		t.row(v.ID, v.Hostname, v.Interface, v.IPv4CIDR, adminTime(v.UpdatedAt), v.Source)
	}
	t.flush()
}

func runRoCEList(ctx context.Context, r *adminRun, args []string) error {
	q := url.Values{}
	if h := r.str("hostname"); h != "" {
		q.Set("hostname", h)
	}
	c, err := r.client()
	if err != nil {
		return err
	}
	site, err := r.siteID(ctx, c, args[0])
	if err != nil {
		return err
	}
	return r.callQuery(ctx, c, http.MethodGet, adminPath(adminSitesPath, site)+"/roce-assignments", q, nil, func(resp *adminResponse) error {
		var l struct {
			Items []adminRoCEView `json:"items"`
		}
		if err := resp.decode(&l); err != nil {
			return err
		}
		r.printRoCE(l.Items)
		return nil
	})
}

func runRoCEDelete(ctx context.Context, r *adminRun, args []string) error {
	c, err := r.client()
	if err != nil {
		return err
	}
	site, err := r.siteID(ctx, c, args[0])
	if err != nil {
		return err
	}
	return r.call(ctx, c, http.MethodDelete, adminPath(adminSitesPath, site, "roce-assignments", args[1]), nil, func(*adminResponse) error {
		fmt.Fprintf(r.env.stdout, "deleted RoCE assignment %s of site %s\n", adminCell(args[1]), adminCell(args[0]))
		return nil
	})
}
