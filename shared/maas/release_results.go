package maas

import (
	"context"
	"net/http"
	"net/url"
)

// ScriptsRelease is the release script-result type (MAAS 3.5+; the erase
// runs as the wipe-disks release script, maas-behaviour §5, §12).
const ScriptsRelease ScriptType = "release"

// ReleaseScriptResults reads the machine's newest release script-result
// set with decoded outputs (GET nodes/{id}/results/?type=release
// &include_output=1; MAAS has no current-release alias, maas-behaviour
// §12). MAASNotFoundError when the machine has none (MAAS before 3.5, or
// never released with scripts). A read.
func (c *Client) ReleaseScriptResults(ctx context.Context, systemID string) (ScriptSet, error) {
	const op = "read release script results"
	if err := requireArg(op, systemID, "system_id", systemID); err != nil {
		return ScriptSet{}, err
	}
	var sets []wireScriptSet
	if err := c.doJSON(ctx, request{
		op: op, systemID: systemID, method: http.MethodGet,
		path:  nodePath(systemID) + "results/",
		query: url.Values{"type": {string(ScriptsRelease)}, "include_output": {"1"}},
	}, &sets); err != nil {
		return ScriptSet{}, err
	}
	newest := -1
	for i, s := range sets {
		if newest < 0 || s.ID > sets[newest].ID {
			newest = i
		}
	}
	if newest < 0 {
		return ScriptSet{}, &MAASNotFoundError{Op: op, SystemID: systemID, Message: "no release script results"}
	}
	return sets[newest].scriptSet(ScriptsRelease), nil
}
