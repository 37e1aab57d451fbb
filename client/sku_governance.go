package client

import (
	"context"
	"net/http"
	"time"
)

// SKUProposal is a pending change of an SKU's Active flag.
type SKUProposal struct {
	ID            string    `json:"id"`
	Active        bool      `json:"active"`
	ProposedBy    string    `json:"proposed_by"`
	ProposedAt    time.Time `json:"proposed_at"`
	Reason        string    `json:"reason,omitempty"`
	RollbackNote  string    `json:"rollback_note,omitempty"`
	AffectedNodes []string  `json:"affected_nodes,omitempty"`
	AffectedCount int       `json:"affected_count"`
}

// SKUDecision is the last proposal approved or rejected.
type SKUDecision struct {
	SKUProposal
	Outcome   string    `json:"outcome"`
	DecidedBy string    `json:"decided_by"`
	DecidedAt time.Time `json:"decided_at"`
}

// SKUDecide names the proposal ApproveSKU or RejectSKU decides.
type SKUDecide struct {
	ProposalID string `json:"proposal_id"`
	Reason     string `json:"reason,omitempty"`
}

// ApproveSKU applies the SKU's pending proposal; its proposer cannot.
func (c *Client) ApproveSKU(ctx context.Context, id string, in SKUDecide, opts ...CallOption) (SKU, error) {
	return call[SKU](ctx, c, http.MethodPost, Path(SKUsPath, id, "approve"), nil, in, opts)
}

// RejectSKU drops the SKU's pending proposal (its proposer may withdraw it).
func (c *Client) RejectSKU(ctx context.Context, id string, in SKUDecide, opts ...CallOption) (SKU, error) {
	return call[SKU](ctx, c, http.MethodPost, Path(SKUsPath, id, "reject"), nil, in, opts)
}

// ListSKUNodes lists one page of the SKU's nodes (status and limit of f
// apply).
func (c *Client) ListSKUNodes(ctx context.Context, id string, f NodeFilter, cursor string, opts ...CallOption) (Page[Node], error) {
	q := queryOf("status", f.Status, "limit", limit(f.Limit))
	return page[Node](ctx, c, Path(SKUsPath, id, "nodes"), q, cursor, opts)
}

// PowerOverride is the body of PutPowerOverride: one host's BMC credentials
// (by Hostname or BMCAddress) that differ from the site's.
type PowerOverride struct {
	Hostname    string `json:"hostname,omitempty"`
	BMCAddress  string `json:"bmc_address,omitempty"`
	BMCUsername string `json:"bmc_username"`
	BMCPassword string `json:"bmc_password"`
}

// PutPowerOverride stores a host's BMC credentials; write-only, never read
// back.
func (c *Client) PutPowerOverride(ctx context.Context, siteID string, in PowerOverride, opts ...CallOption) error {
	_, err := call[struct{}](ctx, c, http.MethodPost, Path(SitesPath, siteID, "power-overrides"), nil, in, opts)
	return err
}
