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
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

const (
	adminBatchesPath     = "/api/v1/admin/onboarding-batches"
	adminBatchCreatePath = "/api/v1/admin/onboardings/batch"
	// adminMaxBatch is the most rows one batch takes (the API's limit).
	adminMaxBatch = 500
)

// adminBatchRow is one node of a batch, with the CSV line it came from.
type adminBatchRow struct {
	Hostname string `json:"hostname"`
	IPMIIP   string `json:"ipmi_ip"`
	line     int
}

var adminBatchColumns = []string{"hostname", "ipmi_ip"}

// batchRows reads the nodes of a batch from CSV: a header row naming
// hostname and ipmi_ip in any order (other columns are refused, so a typo
// does not pass silently), # comments and blank lines skipped.
func (r *adminRun) batchRows(name string) ([]adminBatchRow, error) {
	raw, err := r.readInput(name)
	if err != nil {
		return nil, err
	}
	return batchRowsFromCSV(bytes.NewReader(raw))
}

func batchRowsFromCSV(in io.Reader) ([]adminBatchRow, error) {
	cr := csv.NewReader(in)
	cr.Comment = '#'
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	var (
		rows  []adminBatchRow
		index map[string]int
		seen  = map[string]int{}
	)
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, usagef("CSV: %s", err.Error())
		}
		line, _ := cr.FieldPos(0)
		for i := range rec {
			rec[i] = strings.TrimSpace(rec[i])
		}
		if index == nil {
			if index, err = batchHeader(rec, line); err != nil {
				return nil, err
			}
			continue
		}
		if len(rec) != len(index) {
			return nil, usagef("CSV line %d: %d fields, the header has %d", line, len(rec), len(index))
		}
		row := adminBatchRow{Hostname: rec[index["hostname"]], IPMIIP: rec[index["ipmi_ip"]], line: line}
		for _, col := range adminBatchColumns {
			if rec[index[col]] == "" {
				return nil, usagef("CSV line %d: %s is empty", line, col)
			}
		}
		host := strings.ToLower(row.Hostname)
		if first, dup := seen[host]; dup {
			return nil, usagef("CSV line %d: host %s is already on line %d", line, row.Hostname, first)
		}
		seen[host] = line
		rows = append(rows, row)
	}
	switch {
	case index == nil || len(rows) == 0:
		return nil, usagef("CSV: no nodes (want a header hostname,ipmi_ip and one row per server)")
	case len(rows) > adminMaxBatch:
		return nil, usagef("CSV: %d nodes; a batch takes at most %d", len(rows), adminMaxBatch)
	}
	return rows, nil
}

// batchHeader reads the header row: each of hostname and ipmi_ip once, in
// any order and case, and nothing else.
func batchHeader(rec []string, line int) (map[string]int, error) {
	index := map[string]int{}
	for i, h := range rec {
		col := strings.ToLower(h)
		known := false
		for _, c := range adminBatchColumns {
			known = known || c == col
		}
		switch _, dup := index[col]; {
		case !known:
			return nil, usagef("CSV line %d: unknown column %q (the header names hostname and ipmi_ip, in any order)", line, h)
		case dup:
			return nil, usagef("CSV line %d: column %s appears twice", line, col)
		}
		index[col] = i
	}
	for _, c := range adminBatchColumns {
		if _, ok := index[c]; !ok {
			return nil, usagef("CSV line %d: the header has no %s column (the first row names the columns: hostname,ipmi_ip)", line, c)
		}
	}
	return index, nil
}

// adminBatchItem is one node of a batch as the API shows it.
type adminBatchItem struct {
	Hostname     string          `json:"hostname"`
	IPMIIP       string          `json:"ipmi_ip,omitempty"`
	OnboardingID string          `json:"onboarding_id"`
	Status       string          `json:"status"`
	Stage        string          `json:"stage,omitempty"`
	Attempt      int             `json:"attempt,omitempty"`
	Error        json.RawMessage `json:"error,omitempty"`
}

// adminBatch is GET …/onboarding-batches/{id} (and the answer of POST
// …/onboardings/batch, which carries fewer fields).
type adminBatch struct {
	ID          string           `json:"id"`
	SiteID      string           `json:"site_id"`
	SiteName    string           `json:"site_name,omitempty"`
	ProfileID   string           `json:"profile_id"`
	ProfileName string           `json:"profile_name,omitempty"`
	SKUID       string           `json:"sku_id"`
	Status      string           `json:"status"`
	Counts      map[string]int   `json:"counts"`
	Items       []adminBatchItem `json:"items"`
	CreatedAt   time.Time        `json:"created_at"`
	UpdatedAt   time.Time        `json:"updated_at"`
}

// itemError renders an item's error, a string or {"code","message"}.
func itemError(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var f struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	if json.Unmarshal(raw, &f) == nil && (f.Code != "" || f.Message != "") {
		return strings.TrimPrefix(f.Code+": "+f.Message, ": ")
	}
	return adminJSONValue(raw)
}

var adminNodeIndex = regexp.MustCompile(`^nodes\[(\d+)\]`)

// startBatch sends the rows as one batch and, with --wait, follows it.
func (r *adminRun) startBatch(ctx context.Context, c *adminClient, site, profile string, rows []adminBatchRow, interval time.Duration) error {
	body := map[string]any{"site_id": site, "profile_id": profile, "sku_id": r.str("sku"), "nodes": rows}
	resp, err := c.do(ctx, http.MethodPost, adminBatchCreatePath, nil, body)
	if err != nil {
		var apiE *adminAPIError
		if errors.As(err, &apiE) {
			if m := adminNodeIndex.FindStringSubmatch(apiE.Field); m != nil {
				if i, _ := strconv.Atoi(m[1]); i < len(rows) {
					return &adminHintedError{Err: err, Hints: []string{fmt.Sprintf("hint: nodes[%d] is CSV line %d of %s", i, rows[i].line, r.str("csv"))}}
				}
			}
		}
		return err
	}
	var b adminBatch
	if err := resp.decode(&b); err != nil {
		return err
	}
	wait := r.boolean("wait")
	if r.machine() {
		if !wait {
			r.emit(resp.Body)
		}
	} else {
		started := 0
		for _, it := range b.Items {
			if it.OnboardingID != "" {
				started++
			}
		}
		fmt.Fprintf(r.env.stdout, "batch %s accepted: %d of %d node(s) started\n", adminCell(b.ID), started, len(b.Items))
		t := r.table("HOSTNAME", "ONBOARDING", "STATUS", "ERROR")
		for _, it := range b.Items {
			t.row(it.Hostname, it.OnboardingID, it.Status, itemError(it.Error))
		}
		t.flush()
		if !wait {
			fmt.Fprintf(r.env.stdout, "follow it with: maasflow batches watch %s\n", adminCell(b.ID))
		}
	}
	if !wait {
		return nil
	}
	return r.watchBatch(ctx, c, b.ID, interval)
}

func (c *cli) batchesCommand() *cobra.Command {
	id := []string{"BATCH"}
	return c.group("batches", "batches of onboardings started together (onboard --csv)",
		c.leaf(adminSpec{
			use: "list", short: "list batches, newest first",
			flags: func(fs *pflag.FlagSet) { fs.Int("limit", 0, "how many (default: the API's page size)") },
			run:   runBatchesList,
		}),
		c.leaf(adminSpec{use: "get BATCH", short: "show a batch: counts by status and each node's stage and attempt", args: id, run: runBatchesGet}),
		c.leaf(adminSpec{
			use: "watch BATCH", short: "follow a batch until every node ends: a live table on a terminal, lines when piped",
			long: `Follow a batch until every node ends. On a terminal the nodes show as a live table
(stage, MAAS status, elapsed time) under a progress bar, with each node's timeline
scrolling above it; piped, every timeline event is one line prefixed with the host
name (-o json: one JSON object per line). Exit 0 when every node completed, 3 when any
needs manual intervention, else 4 when any failed or was cancelled.`,
			args: id,
			flags: func(fs *pflag.FlagSet) {
				fs.Duration("interval", adminDefaultInterval, "how often to poll")
				timeoutFlag(fs)
			},
			run: runBatchesWatch,
		}),
	)
}

func runBatchesList(ctx context.Context, r *adminRun, _ []string) error {
	q := map[string][]string{}
	if err := r.limitQuery(q); err != nil {
		return err
	}
	c, err := r.client()
	if err != nil {
		return err
	}
	return r.callQuery(ctx, c, http.MethodGet, adminBatchesPath, q, nil, func(resp *adminResponse) error {
		var l struct {
			Items []adminBatch `json:"items"`
		}
		if err := resp.decode(&l); err != nil {
			return err
		}
		t := r.table("ID", "STATUS", "SITE", "NODES", "COUNTS", "CREATED")
		for _, b := range l.Items {
			t.row(b.ID, b.Status, named(b.SiteName, b.SiteID), strconv.Itoa(len(b.Items)), countsText(b.Counts), adminTime(b.CreatedAt))
		}
		t.flush()
		return nil
	})
}

// countsText prints counts by status in a fixed order.
func countsText(counts map[string]int) string {
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return statusRank(keys[i]) < statusRank(keys[j]) })
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		if counts[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", k, counts[k]))
		}
	}
	return strings.Join(parts, " ")
}

func statusRank(s string) int {
	for i, v := range onboardingStatuses {
		if v == s {
			return i
		}
	}
	return len(onboardingStatuses)
}

func runBatchesGet(ctx context.Context, r *adminRun, args []string) error {
	c, err := r.client()
	if err != nil {
		return err
	}
	return r.call(ctx, c, http.MethodGet, adminPath(adminBatchesPath, args[0]), nil, func(resp *adminResponse) error {
		var b adminBatch
		if err := resp.decode(&b); err != nil {
			return err
		}
		f := newAdminFields(r.env.stdout)
		f.add("ID", b.ID)
		f.add("Status", b.Status)
		f.add("Site", namedID(b.SiteName, b.SiteID))
		f.add("Profile", namedID(b.ProfileName, b.ProfileID))
		f.add("SKU", b.SKUID)
		f.add("Nodes", strconv.Itoa(len(b.Items)))
		f.add("Counts", countsText(b.Counts))
		f.add("Created", adminTime(b.CreatedAt))
		f.add("Updated", adminTime(b.UpdatedAt))
		f.flush()
		fmt.Fprintln(r.env.stdout)
		t := r.table("HOSTNAME", "ONBOARDING", "STATUS", "STAGE", "ATTEMPT", "ERROR")
		for _, it := range b.Items {
			t.row(it.Hostname, it.OnboardingID, it.Status, it.Stage, strconv.Itoa(it.Attempt), itemError(it.Error))
		}
		t.flush()
		return nil
	})
}

func runBatchesWatch(ctx context.Context, r *adminRun, args []string) error {
	interval, err := r.positiveInterval()
	if err != nil {
		return err
	}
	c, err := r.client()
	if err != nil {
		return err
	}
	return r.watchBatch(ctx, c, args[0], interval)
}
