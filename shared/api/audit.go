package api

import (
	"net/http"
	"strconv"

	"github.com/maasflow/maasflow/shared/domain"
)

// Audit page sizes.
const (
	defaultAuditLimit = 100
	maxAuditLimit     = 1000
)

// auditPage is the answer of GET /audit; next_cursor is empty on the last
// page, as for onboardings.
type auditPage struct {
	Items      []domain.AuditEntry `json:"items"`
	NextCursor string              `json:"next_cursor"`
}

func (s *server) listAudit(rq *request) (int, any, error) {
	q, err := queryParams(rq, "limit", "cursor")
	if err != nil {
		return 0, nil, err
	}
	limit := defaultAuditLimit
	if l, ok := q["limit"]; ok {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > maxAuditLimit {
			return 0, nil, fieldError("limit", "must be an integer between 1 and %d", maxAuditLimit)
		}
		limit = n
	}
	page, err := s.store.ListAuditPage(rq.ctx(), limit, q["cursor"])
	if err != nil {
		return 0, nil, err
	}
	if page.Items == nil {
		page.Items = []domain.AuditEntry{}
	}
	return http.StatusOK, auditPage{Items: page.Items, NextCursor: page.NextCursor}, nil
}
