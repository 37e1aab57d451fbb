package store

import (
	"context"

	"github.com/maasflow/maasflow/shared/domain"
)

const kindSKU = "sku"

func skuKey(id string) key { return key{pkSKUs, skSKUPrefix + id} }

// CreateSKU stores a new catalog entry with version 1, stamping CreatedAt
// and UpdatedAt when zero. ItemConflictError when the id exists.
func (s *Store) CreateSKU(ctx context.Context, sku domain.SKU) error {
	if err := checkID(kindSKU, "id", sku.ID); err != nil {
		return err
	}
	stamp(s.now(), &sku.CreatedAt, &sku.UpdatedAt, &sku.Version)
	item, err := marshalItem(sku, skuKey(sku.ID), kindSKU, nil)
	if err != nil {
		return err
	}
	return s.createOne(ctx, kindSKU, sku.ID, item)
}

// GetSKU returns the catalog entry: ItemNotFoundError when there is none.
func (s *Store) GetSKU(ctx context.Context, id string) (domain.SKU, error) {
	var sku domain.SKU
	err := s.get(ctx, kindSKU, id, skuKey(id), &sku)
	return sku, err
}

// ListSKUs returns the whole catalog ordered by id (one Query on the SKUS
// partition), active or not.
func (s *Store) ListSKUs(ctx context.Context) ([]domain.SKU, error) {
	return queryPrefix[domain.SKU](ctx, s, kindSKU, pkSKUs, skSKUPrefix)
}

// UpdateSKU applies mutate under the entry's version. The id and CreatedAt
// cannot change. ItemNotFoundError when there is no such entry; ItemConflictError
// after repeated concurrent updates.
func (s *Store) UpdateSKU(ctx context.Context, id string, mutate Mutator[domain.SKU]) (domain.SKU, error) {
	return updateLoop(ctx, s, kindSKU, id, skuKey(id), mutate,
		func(prev, next *domain.SKU) {
			next.ID, next.CreatedAt = prev.ID, prev.CreatedAt
			next.Version = prev.Version + 1
			next.UpdatedAt = s.now()
		},
		func(ctx context.Context, prev, next *domain.SKU) error {
			item, err := marshalItem(*next, skuKey(id), kindSKU, nil)
			if err != nil {
				return err
			}
			return s.putVersioned(ctx, kindSKU, id, item, prev.Version)
		})
}
