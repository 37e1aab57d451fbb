package api

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"regexp"
	"time"

	"github.com/maasflow/maasflow/shared/domain"
)

var skuIDPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

// maxGPUs bounds gpus_total: no server carries more.
const maxGPUs = 64

type skuCreateRequest struct {
	ID          string `json:"id"`
	GPUModel    string `json:"gpu_model"`
	GPUsTotal   *int   `json:"gpus_total"`
	Description string `json:"description"`
	Active      *bool  `json:"active"`
	domain.SKUHardware
}

func (s *server) createSKU(rq *request) (int, any, error) {
	var in skuCreateRequest
	if err := decodeBody(rq, &in); err != nil {
		return 0, nil, err
	}
	if !skuIDPattern.MatchString(in.ID) {
		return 0, nil, fieldError("id", "is required: 1-63 lower-case letters, digits and ._- starting with a letter or digit")
	}
	rq.setTarget("sku:" + in.ID)
	if err := checkText("gpu_model", in.GPUModel, true, 128); err != nil {
		return 0, nil, err
	}
	if in.GPUsTotal == nil {
		return 0, nil, fieldError("gpus_total", "is required")
	}
	if *in.GPUsTotal < 1 || *in.GPUsTotal > maxGPUs {
		return 0, nil, fieldError("gpus_total", "must be between 1 and %d", maxGPUs)
	}
	if err := checkText("description", in.Description, false, 1024); err != nil {
		return 0, nil, err
	}
	if err := checkSKUHardware(in.SKUHardware); err != nil {
		return 0, nil, err
	}
	now := s.clock.Now().UTC()
	sku := domain.SKU{
		SKUHardware: in.SKUHardware,
		ID:          in.ID,
		GPUModel:    in.GPUModel,
		GPUsTotal:   *in.GPUsTotal,
		Description: in.Description,
		Active:      in.Active == nil || *in.Active,
		CreatedAt:   now,
		UpdatedAt:   now,
	}
	if err := s.store.CreateSKU(rq.ctx(), sku); err != nil {
		if isConflict(err) {
			return 0, nil, conflictError("id", "SKU %q already exists", in.ID)
		}
		return 0, nil, err
	}
	rq.w.Header().Set("Location", "/api/v1/admin/skus/"+sku.ID)
	return http.StatusCreated, sku, nil
}

func (s *server) listSKUs(rq *request) (int, any, error) {
	all, err := s.store.ListSKUs(rq.ctx())
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, newList(all), nil
}

func (s *server) getSKU(rq *request) (int, any, error) {
	sku, err := s.store.GetSKU(rq.ctx(), rq.r.PathValue("id"))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, sku, nil
}

// skuPatchRequest changes what may change of a catalog entry: whether new
// nodes may reference it, and its description. Model and GPU count are the
// entry's identity; a different server is a different SKU.
//
// A change of active is a proposal (sku_governance.go): the PATCH answers
// 202 with the SKU and its pending proposal, and only a second admin's
// approval changes active. The description, which no machine depends on,
// changes at once.
type skuPatchRequest struct {
	Active      *bool   `json:"active"`
	Description *string `json:"description"`
	// Reason and RollbackNote go with a proposal; the note is required to
	// deactivate an SKU that nodes in service use.
	Reason       *string `json:"reason"`
	RollbackNote *string `json:"rollback_note"`
}

func (s *server) patchSKU(rq *request) (int, any, error) {
	var in skuPatchRequest
	if err := decodePatch(rq, &in); err != nil {
		return 0, nil, err
	}
	if in.Description != nil {
		if err := checkText("description", *in.Description, false, 1024); err != nil {
			return 0, nil, err
		}
	}
	for _, f := range []struct {
		name string
		v    *string
	}{{"reason", in.Reason}, {"rollback_note", in.RollbackNote}} {
		if f.v != nil {
			if err := checkText(f.name, *f.v, false, 2048); err != nil {
				return 0, nil, err
			}
		}
	}
	proposal, proposed, err := s.proposeActive(rq, rq.r.PathValue("id"), in)
	if err != nil {
		return 0, nil, err
	}
	status := http.StatusOK
	if proposed {
		status = http.StatusAccepted
	}
	now := s.clock.Now().UTC()
	patch := func(sku *domain.SKU) error {
		if proposal != nil {
			if p := sku.Proposal; p != nil {
				return &StatusError{Status: http.StatusConflict, Code: CodeConflict, Field: "active",
					Message: fmt.Sprintf("active: proposal %s by %s is pending; approve or reject it first", p.ID, p.ProposedBy)}
			}
			sku.Proposal = proposal
		}
		if in.Description != nil {
			sku.Description = *in.Description
		}
		sku.UpdatedAt = now
		return nil
	}
	// A patch sets fields to values, whatever they were: two patches never
	// conflict in meaning, only in the version each one read. A write that
	// lost its version race is applied again on the newer record, after a
	// short random pause so that the losers of one round spread out.
	for round := 1; ; round++ {
		sku, err := s.store.UpdateSKU(rq.ctx(), rq.r.PathValue("id"), patch)
		if !isConflict(err) {
			if err != nil {
				return 0, nil, err
			}
			return status, sku, nil
		}
		if round == skuPatchRounds {
			rq.w.Header().Set("Retry-After", "1")
			return 0, nil, &StatusError{Status: http.StatusConflict, Code: CodeConflict,
				Message: "the SKU is being changed by many requests at once; nothing was changed by this one, retry after a second"}
		}
		select {
		case <-rq.ctx().Done():
			return 0, nil, rq.ctx().Err()
		case <-time.After(time.Duration(1+rand.IntN(2*round)) * time.Millisecond): //nolint:gosec // a pause only spreads retries; nothing depends on its being unpredictable
		}
	}
}

// skuPatchRounds bounds the rounds of conditional writes one SKU PATCH
// makes (each round is the store's own retries) before it answers 409.
const skuPatchRounds = 20
