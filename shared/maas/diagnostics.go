package maas

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// Events lists a machine's events newest first (GET events/?op=query,
// maas-behaviour §11), filtered by system id and/or hostname; at least one is
// required, so a query never reads the whole region's log. Level defaults to
// INFO in MAAS (ask for DEBUG to see user requests), Limit to 100 (MAAS
// refuses more than 1000 with a MAASBadRequestError); After returns only events
// newer than that id. A read.
func (c *Client) Events(ctx context.Context, q EventQuery) ([]Event, error) {
	const op = "query events"
	if strings.TrimSpace(q.SystemID) == "" && strings.TrimSpace(q.Hostname) == "" {
		return nil, &MAASBadRequestError{Op: op, Message: "system_id or hostname is required"}
	}
	query := url.Values{}
	setIf(query, "id", q.SystemID)
	setIf(query, "hostname", q.Hostname)
	setIf(query, "level", q.Level)
	if q.Limit > 0 {
		query.Set("limit", strconv.Itoa(q.Limit))
	}
	if q.After > 0 {
		query.Set("after", strconv.FormatInt(q.After, 10))
	}
	var w wireEvents
	if err := c.doJSON(ctx, request{
		op: op, systemID: q.SystemID, method: http.MethodGet,
		path: "events/", maasOp: "query", query: query,
	}, &w); err != nil {
		return nil, err
	}
	out := make([]Event, len(w.Events))
	for i, e := range w.Events {
		out[i] = e.event()
	}
	return out, nil
}

// ScriptResults reads the machine's current script-result set of type t
// with each result's output decoded from base64 (GET
// nodes/{id}/results/current-<type>/?include_output=1, maas-behaviour §12). MAAS
// answers 400 when the machine has no current set of that type; that is
// reported as MAASNotFoundError, like an unknown machine. A read.
func (c *Client) ScriptResults(ctx context.Context, systemID string, t ScriptType) (ScriptSet, error) {
	const op = "read script results"
	if err := requireArg(op, systemID, "system_id", systemID); err != nil {
		return ScriptSet{}, err
	}
	switch t {
	case ScriptsCommissioning, ScriptsTesting, ScriptsInstallation:
	default:
		return ScriptSet{}, &MAASBadRequestError{Op: op, SystemID: systemID, Message: "unknown script type " + strconv.Quote(string(t))}
	}
	var w wireScriptSet
	err := c.doJSON(ctx, request{
		op: op, systemID: systemID, method: http.MethodGet,
		path:  nodePath(systemID) + "results/current-" + string(t) + "/",
		query: url.Values{"include_output": {"1"}},
	}, &w)
	var bad *MAASBadRequestError
	if errors.As(err, &bad) && isNoCurrentSet(bad.Message) {
		return ScriptSet{}, &MAASNotFoundError{Op: op, SystemID: systemID, Message: bad.Message}
	}
	if err != nil {
		return ScriptSet{}, err
	}
	return w.scriptSet(t), nil
}

// isNoCurrentSet recognises MAAS's "no current set" answers: "No current
// installation script set exists for this node." (3.5+) and "Unknown id …"
// (3.4), maas-behaviour §12.
func isNoCurrentSet(msg string) bool {
	m := strings.ToLower(msg)
	return strings.Contains(m, "no current") || strings.HasPrefix(m, "unknown id")
}

// SiteEventQuery pages through a whole region's event log.
type SiteEventQuery struct {
	// After returns only events newer than this id; 0 means the newest
	// events.
	After int64
	// Limit is how many events one page holds, 1 to 1000; 0 means MAAS's
	// default of 100.
	Limit int
}

// maxEventLimit is MAAS's largest events/?op=query page (maas-behaviour §11).
const maxEventLimit = 1000

// SiteEvents reads the region's events of every machine at level DEBUG and
// above (GET events/?op=query&level=DEBUG, maas-behaviour §11), with no node
// filter: one query serves every machine of the site. DEBUG, because MAAS
// logs each status change ("Node changed status") at that level. Without
// After MAAS returns the Limit newest events; with it, the Limit oldest
// events after that id. Either way the page comes newest first, so paging
// forward is After = the page's first id while a page comes back full. A
// read.
func (c *Client) SiteEvents(ctx context.Context, q SiteEventQuery) ([]Event, error) {
	const op = "query site events"
	if q.Limit < 0 || q.Limit > maxEventLimit {
		return nil, &MAASBadRequestError{Op: op, Message: "limit must be 1 to " + strconv.Itoa(maxEventLimit)}
	}
	query := url.Values{"level": {EventLevelDebug}}
	if q.Limit > 0 {
		query.Set("limit", strconv.Itoa(q.Limit))
	}
	if q.After > 0 {
		query.Set("after", strconv.FormatInt(q.After, 10))
	}
	var w wireEvents
	if err := c.doJSON(ctx, request{op: op, method: http.MethodGet, path: "events/", maasOp: "query", query: query}, &w); err != nil {
		return nil, err
	}
	out := make([]Event, len(w.Events))
	for i, e := range w.Events {
		out[i] = e.event()
	}
	return out, nil
}
