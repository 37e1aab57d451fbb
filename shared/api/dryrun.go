package api

import (
	"context"
	"net/http"

	"github.com/maasflow/maasflow/shared/domain"
)

// A destructive request (full decommission, node removal, site disable)
// takes ?dry_run=true: it is checked exactly as the real request would be
// (every refusal is the same error) and answers what it would do, writing
// nothing: no record, no audit entry, no workflow.

// dryRunPlan is the answer of a dry run.
type dryRunPlan struct {
	DryRun bool `json:"dry_run"`
	// Action is the audit action the real request would record.
	Action  string         `json:"action"`
	Summary string         `json:"summary"`
	Site    *dryRunSite    `json:"site,omitempty"`
	Node    *dryRunNode    `json:"node,omitempty"`
	Machine *dryRunMachine `json:"machine,omitempty"`
	// Allocations are the node's allocations the request would drain or
	// requires gone.
	Allocations []domain.Allocation `json:"allocations"`
	// EraseMode is the erase MAAS's release would be asked for.
	EraseMode string `json:"erase_mode,omitempty"`
	// ReleaseFallback: after a failed erase the machine would be released
	// without erase.
	ReleaseFallback *bool `json:"release_fallback,omitempty"`
	// RevokesTokens: every enrollment token of the node would be revoked.
	RevokesTokens bool `json:"revokes_tokens,omitempty"`
}

type dryRunSite struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Status      string `json:"status"`
	StatusAfter string `json:"status_after"`
}

type dryRunNode struct {
	ID          string `json:"id"`
	Hostname    string `json:"hostname"`
	Status      string `json:"status"`
	StatusAfter string `json:"status_after"`
}

type dryRunMachine struct {
	SystemID string `json:"system_id"`
	// Release and Delete say what would happen to the MAAS machine.
	Release bool `json:"release"`
	Delete  bool `json:"delete"`
}

// HeaderDryRuns lists, on every answer, the actions whose ?dry_run this
// server knows. A client asks it before sending a dry run: a server that
// predates a verb's dry run ignores the parameter and performs the verb.
const HeaderDryRuns = "X-Maasflow-Dry-Runs"

// dryRunActions are the actions that answer ?dry_run=true with a plan.
const dryRunActions = "node.decommission node.remove onboarding.restart-clean site.disable"

// dryRun reads ?dry_run: true or 1 asks for one; anything but false, 0 or
// nothing is a 400 naming the parameter. A dry run is not audited.
func dryRun(rq *request) (bool, error) {
	switch v := rq.r.URL.Query().Get("dry_run"); v {
	case "", "false", "0":
		return false, nil
	case "true", "1":
		rq.dryRun = true
		return true, nil
	default:
		return false, fieldError("dry_run", "must be true or false, not %q", v)
	}
}

// planDecommission is what starting a decommission of node in mode would
// do, once every check has passed.
func (s *server) planDecommission(ctx context.Context, node domain.Node, mode string) (int, any, error) {
	pol, err := s.nodePolicy(ctx, node)
	if err != nil {
		return 0, nil, err
	}
	allocs, err := s.allocationsOf(ctx, node.ID)
	if err != nil {
		return 0, nil, err
	}
	after, del, summary := domain.NodeOnboarding, false, "drain, release with erase, onboard the same node identity again"
	switch mode {
	case domain.DecommissionFull:
		after, del = domain.NodeRemoved, pol.DeleteOnFull
		summary = "drain, release with erase, remove the node"
		if del {
			summary += ", delete the machine from MAAS"
		}
	case domain.DecommissionStorageCleanup:
		after, summary = domain.NodeRetired, "drain, release with erase, retire the node"
	}
	fallback := pol.ReleaseFallback
	return http.StatusOK, dryRunPlan{
		DryRun: true, Action: "node.decommission", Summary: summary,
		Node:        &dryRunNode{ID: node.ID, Hostname: node.Hostname, Status: node.Status, StatusAfter: after},
		Machine:     &dryRunMachine{SystemID: node.MAASSystemID, Release: true, Delete: del},
		Allocations: nonNilAllocations(allocs), EraseMode: pol.EraseMode, ReleaseFallback: &fallback,
	}, nil
}

func nonNilAllocations(a []domain.Allocation) []domain.Allocation {
	if a == nil {
		return []domain.Allocation{}
	}
	return a
}

// planDisableSite answers a dry run of DELETE …/maas-sites/{id} (or err).
func (s *server) planDisableSite(rq *request, err error) (int, any, error) {
	if err != nil {
		return 0, nil, err
	}
	site, err := s.store.GetSite(rq.ctx(), rq.r.PathValue("id"))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, dryRunPlan{DryRun: true, Action: "site.disable",
		Summary:     "disable the site: it takes no new onboardings",
		Site:        &dryRunSite{ID: site.ID, Name: site.Name, Status: site.Status, StatusAfter: domain.StatusDisabled},
		Allocations: []domain.Allocation{}}, nil
}
