package api

import (
	"net/http"
	"strconv"
)

// Audit page sizes.
const (
	defaultAuditLimit = 100
	maxAuditLimit     = 1000
)

func (s *server) listAudit(rq *request) (int, any, error) {
	q, err := queryParams(rq, "limit")
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
	entries, err := s.store.ListAudit(rq.ctx(), limit)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, newList(entries), nil
}
