package client

import (
	"context"
	"encoding/json"
	"net/http"
	"time"
)

// DesignRequest is a design plan or apply: the documents in precedence
// order (the first is the base). Each document is JSON as docs/design.md
// describes it; the SDK passes it on as written so the API names any field
// it refuses.
type DesignRequest struct {
	Documents []json.RawMessage `json:"documents"`
	// PlanHash (apply only) is the hash of the plan to perform.
	PlanHash string `json:"plan_hash,omitempty"`
	// Onboard (apply only) is the onboarding profile and SKU of new hosts.
	Onboard *DesignOnboard `json:"onboard,omitempty"`
}

// DesignOnboard names what the plan's new hosts are onboarded with.
type DesignOnboard struct {
	ProfileID string `json:"profile_id"`
	SKUID     string `json:"sku_id"`
}

// DesignChange is one record a plan adds, changes or removes.
type DesignChange struct {
	Action string   `json:"action"`
	Kind   string   `json:"kind"`
	Name   string   `json:"name"`
	Fields []string `json:"fields,omitempty"`
}

// DesignPlan is what an apply would do, named by its hash.
type DesignPlan struct {
	Hash        string         `json:"hash"`
	BaseVersion int64          `json:"base_version"`
	Changes     []DesignChange `json:"changes"`
	Onboard     []string       `json:"onboard"`
	Reconfigure []string       `json:"reconfigure"`
	Lines       []string       `json:"lines"`
}

// DesignApplied is what an apply did.
type DesignApplied struct {
	Plan    DesignPlan `json:"plan"`
	Version int64      `json:"version"`
	Batch   *Batch     `json:"batch,omitempty"`
}

// SiteDesign is a site's applied design.
type SiteDesign struct {
	SiteID    string          `json:"site_id"`
	Version   int64           `json:"version"`
	Hash      string          `json:"hash"`
	Design    json.RawMessage `json:"design"`
	UpdatedBy string          `json:"updated_by"`
	UpdatedAt time.Time       `json:"updated_at"`
}

// PlanDesign is the dry run of an apply of the same documents.
func (c *Client) PlanDesign(ctx context.Context, siteID string, in DesignRequest, opts ...CallOption) (DesignPlan, error) {
	return call[DesignPlan](ctx, c, http.MethodPost, Path(SitesPath, siteID, "design", "plan"), nil, in, opts)
}

// ApplyDesign performs exactly the plan named by in.PlanHash (409 when the
// documents or the stored design changed since).
func (c *Client) ApplyDesign(ctx context.Context, siteID string, in DesignRequest, opts ...CallOption) (DesignApplied, error) {
	return call[DesignApplied](ctx, c, http.MethodPost, Path(SitesPath, siteID, "design", "apply"), nil, in, opts)
}

// GetDesign reads the site's applied design.
func (c *Client) GetDesign(ctx context.Context, siteID string, opts ...CallOption) (SiteDesign, error) {
	return call[SiteDesign](ctx, c, http.MethodGet, Path(SitesPath, siteID, "design"), nil, nil, opts)
}

// GetDesignNode reads one node's effective design, each value with its
// source, as JSON.
func (c *Client) GetDesignNode(ctx context.Context, siteID, hostname string, opts ...CallOption) (json.RawMessage, error) {
	return call[json.RawMessage](ctx, c, http.MethodGet, Path(SitesPath, siteID, "design", "nodes", hostname), nil, nil, opts)
}
