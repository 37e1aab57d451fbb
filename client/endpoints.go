package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/maasflow/maasflow/shared/domain"
)

// Health reports whether the API answers (GET /api/v1/healthz).
func (c *Client) Health(ctx context.Context) error {
	_, err := c.Do(ctx, http.MethodGet, HealthPath, nil, nil)
	return err
}

// --- sites

// CreateSite registers a MAAS site.
func (c *Client) CreateSite(ctx context.Context, in SiteCreate, opts ...CallOption) (Site, error) {
	return call[Site](ctx, c, http.MethodPost, SitesPath, nil, in, opts)
}

// ListSites lists every site.
func (c *Client) ListSites(ctx context.Context, opts ...CallOption) ([]Site, error) {
	l, err := call[list[Site]](ctx, c, http.MethodGet, SitesPath, nil, nil, opts)
	return l.Items, err
}

// GetSite reads one site by id.
func (c *Client) GetSite(ctx context.Context, id string, opts ...CallOption) (Site, error) {
	return call[Site](ctx, c, http.MethodGet, Path(SitesPath, id), nil, nil, opts)
}

// UpdateSite changes a site.
func (c *Client) UpdateSite(ctx context.Context, id string, in SitePatch, opts ...CallOption) (Site, error) {
	return call[Site](ctx, c, http.MethodPatch, Path(SitesPath, id), nil, in, opts)
}

// DisableSite disables a site (DELETE): it takes no new onboardings.
func (c *Client) DisableSite(ctx context.Context, id string, opts ...CallOption) (Site, error) {
	return call[Site](ctx, c, http.MethodDelete, Path(SitesPath, id), nil, nil, opts)
}

// PutCredentials stores a site's MAAS API key and BMC credentials.
func (c *Client) PutCredentials(ctx context.Context, siteID string, in Credentials, opts ...CallOption) error {
	_, err := call[struct{}](ctx, c, http.MethodPost, Path(SitesPath, siteID, "credentials"), nil, in, opts)
	return err
}

// ProbeSite checks the site's MAAS now.
func (c *Client) ProbeSite(ctx context.Context, siteID string, opts ...CallOption) (ProbeAnswer, error) {
	return call[ProbeAnswer](ctx, c, http.MethodPost, Path(SitesPath, siteID, "probe"), nil, nil, opts)
}

// --- profiles

// CreateProfile adds a profile to a site.
func (c *Client) CreateProfile(ctx context.Context, siteID string, in ProfileCreate, opts ...CallOption) (Profile, error) {
	return call[Profile](ctx, c, http.MethodPost, Path(SitesPath, siteID, "profiles"), nil, in, opts)
}

// ListProfiles lists a site's profiles.
func (c *Client) ListProfiles(ctx context.Context, siteID string, opts ...CallOption) ([]Profile, error) {
	l, err := call[list[Profile]](ctx, c, http.MethodGet, Path(SitesPath, siteID, "profiles"), nil, nil, opts)
	return l.Items, err
}

// GetProfile reads one profile.
func (c *Client) GetProfile(ctx context.Context, siteID, profileID string, opts ...CallOption) (Profile, error) {
	return call[Profile](ctx, c, http.MethodGet, Path(SitesPath, siteID, "profiles", profileID), nil, nil, opts)
}

// UpdateProfile changes a profile.
func (c *Client) UpdateProfile(ctx context.Context, siteID, profileID string, in ProfilePatch, opts ...CallOption) (Profile, error) {
	return call[Profile](ctx, c, http.MethodPatch, Path(SitesPath, siteID, "profiles", profileID), nil, in, opts)
}

// DisableProfile disables a profile (DELETE).
func (c *Client) DisableProfile(ctx context.Context, siteID, profileID string, opts ...CallOption) (Profile, error) {
	return call[Profile](ctx, c, http.MethodDelete, Path(SitesPath, siteID, "profiles", profileID), nil, nil, opts)
}

// --- RoCE assignments

// UpsertRoCE stores up to 97 assignments of a site, all or none.
func (c *Client) UpsertRoCE(ctx context.Context, siteID string, items []RoCEAssignmentInput, opts ...CallOption) ([]RoCEAssignment, error) {
	l, err := call[list[RoCEAssignment]](ctx, c, http.MethodPost, Path(SitesPath, siteID, "roce-assignments"), nil,
		list[RoCEAssignmentInput]{Items: items}, opts)
	return l.Items, err
}

// ListRoCE lists a site's assignments, of one host when hostname is set.
func (c *Client) ListRoCE(ctx context.Context, siteID, hostname string, opts ...CallOption) ([]RoCEAssignment, error) {
	var q url.Values
	if hostname != "" {
		q = url.Values{"hostname": {hostname}}
	}
	l, err := call[list[RoCEAssignment]](ctx, c, http.MethodGet, Path(SitesPath, siteID, "roce-assignments"), q, nil, opts)
	return l.Items, err
}

// DeleteRoCE deletes one assignment.
func (c *Client) DeleteRoCE(ctx context.Context, siteID, assignmentID string, opts ...CallOption) error {
	_, err := call[struct{}](ctx, c, http.MethodDelete, Path(SitesPath, siteID, "roce-assignments", assignmentID), nil, nil, opts)
	return err
}

// --- SKUs

// CreateSKU adds a SKU.
func (c *Client) CreateSKU(ctx context.Context, in SKUCreate, opts ...CallOption) (SKU, error) {
	return call[SKU](ctx, c, http.MethodPost, SKUsPath, nil, in, opts)
}

// ListSKUs lists every SKU.
func (c *Client) ListSKUs(ctx context.Context, opts ...CallOption) ([]SKU, error) {
	l, err := call[list[SKU]](ctx, c, http.MethodGet, SKUsPath, nil, nil, opts)
	return l.Items, err
}

// GetSKU reads one SKU.
func (c *Client) GetSKU(ctx context.Context, id string, opts ...CallOption) (SKU, error) {
	return call[SKU](ctx, c, http.MethodGet, Path(SKUsPath, id), nil, nil, opts)
}

// UpdateSKU changes a SKU's description or activity.
func (c *Client) UpdateSKU(ctx context.Context, id string, in SKUPatch, opts ...CallOption) (SKU, error) {
	return call[SKU](ctx, c, http.MethodPatch, Path(SKUsPath, id), nil, in, opts)
}

// --- onboardings

// CreateOnboarding starts onboarding one host.
func (c *Client) CreateOnboarding(ctx context.Context, in OnboardingCreate, opts ...CallOption) (OnboardingDetail, error) {
	return call[OnboardingDetail](ctx, c, http.MethodPost, OnboardingsPath, nil, in, opts)
}

// OnboardingFilter narrows ListOnboardings; empty members do not filter.
type OnboardingFilter struct {
	SiteID   string
	Status   Status
	Hostname string
	BatchID  string
	// Limit is the page size (the API's default when 0).
	Limit int
}

func (f OnboardingFilter) query() url.Values {
	return queryOf("site_id", f.SiteID, "status", string(f.Status), "hostname", f.Hostname, "batch_id", f.BatchID, "limit", limit(f.Limit))
}

// ListOnboardings reads one page of onboardings, newest first, starting at
// cursor ("" for the first page).
func (c *Client) ListOnboardings(ctx context.Context, f OnboardingFilter, cursor string, opts ...CallOption) (Page[Onboarding], error) {
	return page[Onboarding](ctx, c, OnboardingsPath, f.query(), cursor, opts)
}

// GetOnboarding reads an onboarding with its timeline and diagnostics.
func (c *Client) GetOnboarding(ctx context.Context, id string, opts ...CallOption) (OnboardingDetail, error) {
	return call[OnboardingDetail](ctx, c, http.MethodGet, Path(OnboardingsPath, id), nil, nil, opts)
}

// CancelOnboarding cancels a pending or running onboarding.
func (c *Client) CancelOnboarding(ctx context.Context, id, reason string, opts ...CallOption) (Onboarding, error) {
	return call[Onboarding](ctx, c, http.MethodPost, Path(OnboardingsPath, id, "cancel"), nil, Reason{Reason: reason}, opts)
}

// RecoverOnboarding runs a recovery operation (retry, resume, rerun,
// restart-clean, adopt, mark-manual-intervention) on an onboarding.
func (c *Client) RecoverOnboarding(ctx context.Context, id string, op Operation, reason string, opts ...CallOption) (OnboardingDetail, error) {
	return call[OnboardingDetail](ctx, c, http.MethodPost, Path(OnboardingsPath, id, string(op)), nil, Reason{Reason: reason}, opts)
}

// --- batches

// CreateBatch starts onboarding up to 500 hosts.
func (c *Client) CreateBatch(ctx context.Context, in BatchCreate, opts ...CallOption) (Batch, error) {
	return call[Batch](ctx, c, http.MethodPost, BatchCreatePath, nil, in, opts)
}

// ListBatches reads the newest batches (at most limit; the API's default
// when 0).
func (c *Client) ListBatches(ctx context.Context, limitN int, opts ...CallOption) ([]Batch, error) {
	l, err := call[list[Batch]](ctx, c, http.MethodGet, BatchesPath, queryOf("limit", limit(limitN)), nil, opts)
	return l.Items, err
}

// GetBatch reads a batch with its rows' current state.
func (c *Client) GetBatch(ctx context.Context, id string, opts ...CallOption) (Batch, error) {
	return call[Batch](ctx, c, http.MethodGet, Path(BatchesPath, id), nil, nil, opts)
}

// --- reconciliation

// RunReconciliation starts a reconcile run (of one site when siteID is
// set) or joins the one under way.
func (c *Client) RunReconciliation(ctx context.Context, siteID string, opts ...CallOption) (ReconcileRunAnswer, error) {
	var body any
	if siteID != "" {
		body = map[string]string{"site_id": siteID}
	}
	return call[ReconcileRunAnswer](ctx, c, http.MethodPost, ReconciliationPath+"/run", nil, body, opts)
}

// ReconciliationStatus reads the current and last reconcile run.
func (c *Client) ReconciliationStatus(ctx context.Context, opts ...CallOption) (ReconcileStatus, error) {
	return call[ReconcileStatus](ctx, c, http.MethodGet, ReconciliationPath+"/status", nil, nil, opts)
}

// DriftFilter narrows ListDrift.
type DriftFilter struct {
	SiteID, NodeID, Kind, State string
	Limit                       int
}

// ListDrift reads one page of drift items.
func (c *Client) ListDrift(ctx context.Context, f DriftFilter, cursor string, opts ...CallOption) (Page[DriftItem], error) {
	q := queryOf("site_id", f.SiteID, "node_id", f.NodeID, "kind", f.Kind, "state", f.State, "limit", limit(f.Limit))
	return page[DriftItem](ctx, c, DriftPath, q, cursor, opts)
}

// ResolveDrift closes a node's open drift item of a kind.
func (c *Client) ResolveDrift(ctx context.Context, nodeID string, in DriftResolve, opts ...CallOption) (DriftItem, error) {
	return call[DriftItem](ctx, c, http.MethodPost, Path(DriftPath, nodeID, "resolve"), nil, in, opts)
}

// --- audit

// ListAudit reads one page of the audit trail, newest first.
func (c *Client) ListAudit(ctx context.Context, limitN int, cursor string, opts ...CallOption) (Page[AuditEntry], error) {
	return page[AuditEntry](ctx, c, AuditPath, queryOf("limit", limit(limitN)), cursor, opts)
}

// --- nodes

// NodeFilter narrows ListNodes.
type NodeFilter struct {
	SiteID, SKUID, Status, Hostname string
	Limit                           int
}

// ListNodes reads one page of nodes.
func (c *Client) ListNodes(ctx context.Context, f NodeFilter, cursor string, opts ...CallOption) (Page[Node], error) {
	q := queryOf("site_id", f.SiteID, "sku_id", f.SKUID, "status", f.Status, "hostname", f.Hostname, "limit", limit(f.Limit))
	return page[Node](ctx, c, NodesPath, q, cursor, opts)
}

// GetNode reads a node with its last workflows and allocations.
func (c *Client) GetNode(ctx context.Context, id string, opts ...CallOption) (NodeDetail, error) {
	return call[NodeDetail](ctx, c, http.MethodGet, Path(NodesPath, id), nil, nil, opts)
}

// RetireNode makes an active node unschedulable.
func (c *Client) RetireNode(ctx context.Context, id string, opts ...CallOption) (Node, error) {
	return call[Node](ctx, c, http.MethodPost, Path(NodesPath, id, "retire"), nil, nil, opts)
}

// ReactivateNode returns a retired node to service.
func (c *Client) ReactivateNode(ctx context.Context, id string, opts ...CallOption) (Node, error) {
	return call[Node](ctx, c, http.MethodPost, Path(NodesPath, id, "reactivate"), nil, nil, opts)
}

// RemoveNode ends a retired node's identity (terminal).
func (c *Client) RemoveNode(ctx context.Context, id string, opts ...CallOption) (Node, error) {
	return call[Node](ctx, c, http.MethodPost, Path(NodesPath, id, "remove"), nil, nil, opts)
}

// ReissueBundle mints a new bootstrap bundle for the node.
func (c *Client) ReissueBundle(ctx context.Context, id string, opts ...CallOption) (ReissuedBundle, error) {
	return call[ReissuedBundle](ctx, c, http.MethodPost, Path(NodesPath, id, "bootstrap-bundle"), nil, nil, opts)
}

// DecommissionNode starts a reimage or full decommission of the node.
func (c *Client) DecommissionNode(ctx context.Context, id string, in DecommissionCreate, opts ...CallOption) (DecommissionDetail, error) {
	return call[DecommissionDetail](ctx, c, http.MethodPost, Path(NodesPath, id, "decommission"), nil, in, opts)
}

// StorageCleanup drains, releases with erase and retires the node.
func (c *Client) StorageCleanup(ctx context.Context, id, reason string, opts ...CallOption) (DecommissionDetail, error) {
	return call[DecommissionDetail](ctx, c, http.MethodPost, Path(NodesPath, id, "storage-cleanup"), nil, Reason{Reason: reason}, opts)
}

// --- decommissions

// DecommissionFilter narrows ListDecommissions.
type DecommissionFilter struct {
	SiteID, NodeID string
	Status         Status
	Limit          int
}

// ListDecommissions reads one page of decommissions, newest first.
func (c *Client) ListDecommissions(ctx context.Context, f DecommissionFilter, cursor string, opts ...CallOption) (Page[Decommission], error) {
	q := queryOf("site_id", f.SiteID, "node_id", f.NodeID, "status", string(f.Status), "limit", limit(f.Limit))
	return page[Decommission](ctx, c, DecommissionsPath, q, cursor, opts)
}

// GetDecommission reads a decommission with its timeline.
func (c *Client) GetDecommission(ctx context.Context, id string, opts ...CallOption) (DecommissionDetail, error) {
	return call[DecommissionDetail](ctx, c, http.MethodGet, Path(DecommissionsPath, id), nil, nil, opts)
}

// RecoverDecommission runs a recovery operation (retry, resume, rerun,
// adopt, cancel, mark-manual-intervention) on a decommission.
func (c *Client) RecoverDecommission(ctx context.Context, id string, op Operation, reason string, opts ...CallOption) (DecommissionDetail, error) {
	return call[DecommissionDetail](ctx, c, http.MethodPost, Path(DecommissionsPath, id, string(op)), nil, Reason{Reason: reason}, opts)
}

// list is the wire form of every listing.
type list[T any] struct {
	Items []T `json:"items"`
}

// queryOf builds a query from name, value pairs, leaving out empty values.
func queryOf(kv ...string) url.Values {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			q.Set(kv[i], kv[i+1])
		}
	}
	return q
}

func limit(n int) string {
	if n <= 0 {
		return ""
	}
	return strconv.Itoa(n)
}

// --- dry runs: checked exactly as the real request, nothing written

func dryRunQuery() url.Values { return url.Values{"dry_run": {"true"}} }

// HeaderDryRuns is the answer header in which the API lists the actions
// whose dry run it knows.
const HeaderDryRuns = "X-Maasflow-Dry-Runs"

// ErrDryRunUnsupported is returned, before anything is sent, by a Plan
// method whose dry run the API does not say it knows: such a server would
// ignore ?dry_run and perform the operation.
var ErrDryRunUnsupported = errors.New("the admin API does not know this dry run (an older release would perform the operation instead): nothing was sent; upgrade the API")

// planned sends a dry run of action, once the API's health answer says it
// knows that dry run.
func planned(ctx context.Context, c *Client, action, method, path string, body any, opts []CallOption) (DryRunPlan, error) {
	resp, err := c.Do(ctx, http.MethodGet, HealthPath, nil, nil)
	if err != nil {
		return DryRunPlan{}, err
	}
	if !slices.Contains(strings.Fields(resp.Header.Get(HeaderDryRuns)), action) {
		return DryRunPlan{}, fmt.Errorf("%s: %w", action, ErrDryRunUnsupported)
	}
	return call[DryRunPlan](ctx, c, method, path, dryRunQuery(), body, opts)
}

// PlanDecommission says what DecommissionNode would do.
func (c *Client) PlanDecommission(ctx context.Context, nodeID string, in DecommissionCreate, opts ...CallOption) (DryRunPlan, error) {
	return planned(ctx, c, "node.decommission", http.MethodPost, Path(NodesPath, nodeID, "decommission"), in, opts)
}

// PlanRemoveNode says what RemoveNode would do.
func (c *Client) PlanRemoveNode(ctx context.Context, nodeID string, opts ...CallOption) (DryRunPlan, error) {
	return planned(ctx, c, "node.remove", http.MethodPost, Path(NodesPath, nodeID, "remove"), nil, opts)
}

// PlanRestartClean says what RecoverOnboarding with OpRestartClean would
// do: refused exactly as the operation would be, writing nothing.
func (c *Client) PlanRestartClean(ctx context.Context, id, reason string, opts ...CallOption) (DryRunPlan, error) {
	var body any
	if reason != "" {
		body = map[string]string{"reason": reason}
	}
	return planned(ctx, c, "onboarding."+string(domain.OpRestartClean), http.MethodPost, Path(OnboardingsPath, id, string(domain.OpRestartClean)), body, opts)
}

// PlanDisableSite says what DisableSite would do.
func (c *Client) PlanDisableSite(ctx context.Context, siteID string, opts ...CallOption) (DryRunPlan, error) {
	return planned(ctx, c, "site.disable", http.MethodDelete, Path(SitesPath, siteID), nil, opts)
}
