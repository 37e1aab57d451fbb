package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/store"
)

// maxRoCEItems bounds one bulk upsert: the store writes it in one
// all-or-nothing transaction.
const maxRoCEItems = store.RoCERowsPerTransaction

type roceItem struct {
	Hostname  string `json:"hostname"`
	Interface string `json:"interface"`
	IPv4CIDR  string `json:"ipv4_cidr"`
}

type roceUpsertRequest struct {
	Items []json.RawMessage `json:"items"`
}

func (s *server) upsertRoCE(rq *request) (int, any, error) {
	var in roceUpsertRequest
	if err := decodeBody(rq, &in); err != nil {
		return 0, nil, err
	}
	if len(in.Items) == 0 {
		return 0, nil, fieldError("items", "must hold at least one assignment")
	}
	if len(in.Items) > maxRoCEItems {
		return 0, nil, fieldError("items", "must hold at most %d assignments per request", maxRoCEItems)
	}
	siteID := rq.r.PathValue("id")
	now := s.clock.Now().UTC()
	rows := make([]domain.RoCEAssignment, 0, len(in.Items))
	seen := map[string]int{}
	for i, raw := range in.Items {
		prefix := fmt.Sprintf("items[%d].", i)
		var it roceItem
		if err := decodeStrict(raw, &it, prefix); err != nil {
			return 0, nil, err
		}
		host, err := normalizeHostname(prefix+"hostname", it.Hostname)
		if err != nil {
			return 0, nil, err
		}
		if err := checkInterfaceName(prefix+"interface", it.Interface); err != nil {
			return 0, nil, err
		}
		if err := checkIPv4CIDR(prefix+"ipv4_cidr", it.IPv4CIDR); err != nil {
			return 0, nil, err
		}
		key := host + "/" + it.Interface
		if j, dup := seen[key]; dup {
			return 0, nil, fieldError(prefix+"interface", "repeats items[%d] (same hostname and interface)", j)
		}
		seen[key] = i
		rows = append(rows, domain.RoCEAssignment{SiteID: siteID, Hostname: host, Interface: it.Interface, IPv4CIDR: it.IPv4CIDR, UpdatedAt: now})
	}
	if _, err := s.store.GetSite(rq.ctx(), siteID); err != nil {
		return 0, nil, err
	}
	out, err := s.store.UpsertRoCEAssignments(rq.ctx(), siteID, rows)
	if err != nil {
		return 0, nil, designOwnsRoCE(err)
	}
	return http.StatusOK, newList(out), nil
}

func (s *server) listRoCE(rq *request) (int, any, error) {
	q, err := queryParams(rq, "hostname")
	if err != nil {
		return 0, nil, err
	}
	host := q["hostname"]
	if host != "" {
		if host, err = normalizeHostname("hostname", host); err != nil {
			return 0, nil, err
		}
	}
	siteID := rq.r.PathValue("id")
	if _, err := s.store.GetSite(rq.ctx(), siteID); err != nil {
		return 0, nil, err
	}
	out, err := s.store.ListRoCEAssignments(rq.ctx(), siteID, host)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, newList(out), nil
}

func (s *server) deleteRoCE(rq *request) (int, any, error) {
	if err := s.store.DeleteRoCEAssignment(rq.ctx(), rq.r.PathValue("id"), rq.r.PathValue("assignment_id")); err != nil {
		return 0, nil, designOwnsRoCE(err)
	}
	return http.StatusNoContent, nil, nil
}

// designOwnsRoCE answers a write to a designed host's rows with a 409
// naming the field: the site's design owns them.
func designOwnsRoCE(err error) error {
	var owned *store.RoCEOwnedByDesignError
	if !errors.As(err, &owned) {
		return err
	}
	return &StatusError{Status: http.StatusConflict, Code: CodeConflict, Field: owned.Field,
		Message: fmt.Sprintf("%s: the RoCE rows of host %s belong to the site's design: change node %s's roce_rails and apply the design",
			owned.Field, owned.Hostname, owned.Hostname)}
}

// maxQueryValue bounds a query parameter (a cursor is the longest).
const maxQueryValue = 2048

// queryParams returns the query's single-valued parameters; a parameter not
// in allowed, or given twice, is a 400 naming it.
func queryParams(rq *request, allowed ...string) (map[string]string, error) {
	out := map[string]string{}
	ok := map[string]bool{}
	for _, a := range allowed {
		ok[a] = true
	}
	for k, vs := range rq.r.URL.Query() {
		if !ok[k] {
			if !boundedText(k, 64) {
				// Not quoted: the name is the caller's and may be huge.
				return nil, fieldError("query", "has an unknown parameter")
			}
			return nil, fieldError(k, "unknown query parameter")
		}
		if len(vs) > 1 {
			return nil, fieldError(k, "may be given once")
		}
		if len(vs[0]) > maxQueryValue {
			return nil, fieldError(k, "must be at most %d characters", maxQueryValue)
		}
		out[k] = vs[0]
	}
	return out, nil
}
