package store

import (
	"context"
	"slices"

	"github.com/maasflow/maasflow/shared/domain"
)

const (
	kindBatch       = "batch"
	pkBatches       = "BATCHES"
	skBatchPrefix   = "BATCH#"
	maxBatchListing = 200
)

func batchKey(id string) key { return key{pkBatches, skBatchPrefix + id} }

// CreateBatch stores a new batch with version 1, stamping CreatedAt and
// UpdatedAt when zero. ConflictError when the id exists.
func (s *Store) CreateBatch(ctx context.Context, b domain.Batch) error {
	if err := checkID(kindBatch, "id", b.ID); err != nil {
		return err
	}
	stamp(s.now(), &b.CreatedAt, &b.UpdatedAt, &b.Version)
	item, err := marshalItem(b, batchKey(b.ID), kindBatch, nil)
	if err != nil {
		return err
	}
	return s.createOne(ctx, kindBatch, b.ID, item)
}

// GetBatch returns the batch: NotFoundError when there is none.
func (s *Store) GetBatch(ctx context.Context, id string) (domain.Batch, error) {
	var b domain.Batch
	err := s.get(ctx, kindBatch, id, batchKey(id), &b)
	return b, err
}

// UpdateBatch applies mutate under the batch's version. The id and
// CreatedAt cannot change.
func (s *Store) UpdateBatch(ctx context.Context, id string, mutate Mutator[domain.Batch]) (domain.Batch, error) {
	return updateLoop(ctx, s, kindBatch, id, batchKey(id), mutate,
		func(prev, next *domain.Batch) {
			next.ID, next.CreatedAt = prev.ID, prev.CreatedAt
			next.Version = prev.Version + 1
			next.UpdatedAt = s.now()
		},
		func(ctx context.Context, prev, next *domain.Batch) error {
			item, err := marshalItem(*next, batchKey(id), kindBatch, nil)
			if err != nil {
				return err
			}
			return s.putVersioned(ctx, kindBatch, id, item, prev.Version)
		})
}

// ListBatches returns the newest batches first, at most limit (1–200).
// Batches are few (one per rack) and read whole from one partition.
func (s *Store) ListBatches(ctx context.Context, limit int) ([]domain.Batch, error) {
	all, err := queryPrefix[domain.Batch](ctx, s, kindBatch, pkBatches, skBatchPrefix)
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(all, func(a, b domain.Batch) int { return b.CreatedAt.Compare(a.CreatedAt) })
	if limit <= 0 || limit > maxBatchListing {
		limit = maxBatchListing
	}
	return all[:min(limit, len(all))], nil
}
