package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"github.com/spf13/pflag"
)

// adminPage is one page of a listing: {"items":[…],"next_cursor":"…"}.
type adminPage struct {
	Items      []json.RawMessage `json:"items"`
	NextCursor string            `json:"next_cursor,omitempty"`
}

// listPages reads a listing at path: one page, or with all every page
// (a cursor the API repeats stops it). For -o json|yaml it prints the one
// page as the API sent it, or every page merged into one {"items":[…]},
// and returns printed true. Otherwise it returns the items and the cursor
// of the page after them ("" with all).
func (r *adminRun) listPages(ctx context.Context, c *adminClient, path string, q url.Values, all bool) (items []json.RawMessage, next string, printed bool, err error) {
	seen := map[string]bool{}
	for {
		resp, err := c.do(ctx, http.MethodGet, path, q, nil)
		if err != nil {
			return nil, "", false, err
		}
		var page adminPage
		if err := resp.decode(&page); err != nil {
			return nil, "", false, err
		}
		if !all {
			if r.machine() {
				r.emit(resp.Body)
				return nil, "", true, nil
			}
			return page.Items, page.NextCursor, false, nil
		}
		items = append(items, page.Items...)
		if page.NextCursor == "" {
			break
		}
		if seen[page.NextCursor] {
			return nil, "", false, fmt.Errorf("the admin API returned cursor %q twice; stopping", page.NextCursor)
		}
		seen[page.NextCursor] = true
		q.Set("cursor", page.NextCursor)
	}
	if r.machine() {
		if items == nil {
			items = []json.RawMessage{}
		}
		return nil, "", true, r.emitValue(adminPage{Items: items})
	}
	return items, "", false, nil
}

// listItems is listPages at path with --all, each item decoded as T; the
// items are nil when -o json|yaml already printed the listing (printed).
func listItems[T any](ctx context.Context, r *adminRun, c *adminClient, path string, q url.Values) (items []T, next string, printed bool, err error) {
	raw, next, printed, err := r.listPages(ctx, c, path, q, r.boolean("all"))
	if err != nil || printed {
		return nil, next, printed, err
	}
	items, err = decodeItems[T](raw)
	return items, next, false, err
}

// decodeItems unmarshals each listed item into a T.
func decodeItems[T any](items []json.RawMessage) ([]T, error) {
	out := make([]T, 0, len(items))
	for _, raw := range items {
		var v T
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("unexpected answer from the admin API: %w", err)
		}
		out = append(out, v)
	}
	return out, nil
}

// pageFlags are every list command's paging flags, which listQuery and
// listPages read; limitHelp names the page sizes the API takes.
func pageFlags(fs *pflag.FlagSet, limitHelp string) {
	fs.Int("limit", 0, limitHelp)
	fs.String("cursor", "", "page to start at (printed by the previous page)")
	fs.Bool("all", false, "follow every page")
}

// listQuery builds a list command's query: each set flag under its query
// parameter (params maps parameter to flag), --limit, and --site resolved
// from a name or id. It returns the client the listing then uses.
func (r *adminRun) listQuery(ctx context.Context, params map[string]string) (*adminClient, url.Values, error) {
	q := url.Values{}
	for k, flag := range params {
		if v := r.str(flag); v != "" {
			q.Set(k, v)
		}
	}
	if err := r.limitQuery(q); err != nil {
		return nil, nil, err
	}
	c, err := r.client()
	if err != nil {
		return nil, nil, err
	}
	if site := r.str("site"); site != "" {
		id, err := r.siteID(ctx, c, site)
		if err != nil {
			return nil, nil, err
		}
		q.Set("site_id", id)
	}
	return c, q, nil
}
