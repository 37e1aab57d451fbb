package maas

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// The region's scripts (GET scripts/, MAAS's src/maasserver/api/scripts.py
// ScriptsHandler.read). A profile names scripts for commissioning and
// testing; the site probe checks the region has every one before an
// onboarding's commission is refused for a name MAAS does not know.

// ScriptKind is a script's type as the scripts API filters it.
type ScriptKind string

// The script types MAAS's translate_script_type accepts.
const (
	ScriptCommissioning ScriptKind = "commissioning"
	ScriptTesting       ScriptKind = "testing"
)

// ScriptFilter narrows the scripts list: by type, by hardware type (node,
// cpu, memory, storage, network, gpu) and by names or tags (MAAS's
// "filters", one comma-separated value). Zero fields filter nothing.
type ScriptFilter struct {
	Kind         ScriptKind
	HardwareType HardwareType
	Names        []string
}

// Script is one script of the region.
type Script struct {
	ID           int          `json:"id"`
	Name         string       `json:"name"`
	Title        string       `json:"title,omitempty"`
	Description  string       `json:"description,omitempty"`
	Tags         []string     `json:"tags,omitempty"`
	Kind         ScriptKind   `json:"kind"`
	HardwareType HardwareType `json:"hardware_type"`
	Destructive  bool         `json:"destructive,omitempty"`
	// Default is true for a script MAAS ships.
	Default bool `json:"default,omitempty"`
}

type wireScript struct {
	ID           int        `json:"id"`
	Name         string     `json:"name"`
	Title        nullString `json:"title"`
	Description  nullString `json:"description"`
	Tags         []string   `json:"tags"`
	Type         int        `json:"type"`
	HardwareType int        `json:"hardware_type"`
	Destructive  bool       `json:"destructive"`
	Default      bool       `json:"default"`
}

// scriptKinds maps MAAS's SCRIPT_TYPE (metadataserver/enum.py).
var scriptKinds = map[int]ScriptKind{0: ScriptCommissioning, 2: ScriptTesting, 3: "release", 4: "deployment"}

// Scripts lists the region's scripts. A read.
func (c *Client) Scripts(ctx context.Context, f ScriptFilter) ([]Script, error) {
	q := url.Values{}
	setIf(q, "type", string(f.Kind))
	setIf(q, "hardware_type", string(f.HardwareType))
	setIf(q, "filters", joinList(f.Names))
	var ws []wireScript
	if err := c.doJSON(ctx, request{op: "list scripts", method: http.MethodGet, path: "scripts/", query: q}, &ws); err != nil {
		return nil, err
	}
	out := make([]Script, 0, len(ws))
	for _, w := range ws {
		out = append(out, Script{
			ID: w.ID, Name: w.Name, Title: string(w.Title), Description: string(w.Description), Tags: nilIfEmpty(w.Tags),
			Kind: scriptKinds[w.Type], HardwareType: hardwareTypes[w.HardwareType], Destructive: w.Destructive, Default: w.Default,
		})
	}
	return out, nil
}

// MissingScripts returns the names, of those given, that no script of the
// region has as its name or one of its tags (what MAAS's commission form
// accepts), in the order given; nil when the region has them all. One
// read of the scripts list, filtered by the names. "none" (testing_scripts'
// "run no tests") is never missing.
func (c *Client) MissingScripts(ctx context.Context, names []string) ([]string, error) {
	var want []string
	for _, n := range names {
		if n = strings.TrimSpace(n); n != "" && n != "none" && !slices.Contains(want, n) {
			want = append(want, n)
		}
	}
	if len(want) == 0 {
		return nil, nil
	}
	scripts, err := c.Scripts(ctx, ScriptFilter{Names: want})
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, n := range want {
		known := slices.ContainsFunc(scripts, func(s Script) bool { return s.Name == n || slices.Contains(s.Tags, n) })
		if !known {
			missing = append(missing, n)
		}
	}
	return missing, nil
}

// CheckScripts records on r the scripts of names the region lacks, for a
// probe whose site's profiles name scripts (domain.ProfileScripts.Names):
// r.Problem() then reports them. Nothing is read when names is empty.
func (c *Client) CheckScripts(ctx context.Context, r *ProbeResult, names []string) error {
	missing, err := c.MissingScripts(ctx, names)
	if err != nil {
		return err
	}
	r.MissingScripts = missing
	return nil
}
