package store

import (
	"context"
	"fmt"

	"github.com/maasflow/maasflow/shared/domain"
)

const kindProfile = "profile"

func profileKey(siteID, id string) key { return key{pkSitePrefix + siteID, skProfile + id} }

func checkProfile(p domain.Profile) error {
	if err := checkID(kindProfile, "site_id", p.SiteID); err != nil {
		return err
	}
	return checkID(kindProfile, "id", p.ID)
}

// CreateProfile stores a new profile under its site with version 1,
// stamping CreatedAt and UpdatedAt when zero and Status (active) when
// empty. ItemNotFoundError when the site does not exist; ItemConflictError when the
// id is taken on that site.
func (s *Store) CreateProfile(ctx context.Context, p domain.Profile) error {
	if err := checkProfile(p); err != nil {
		return err
	}
	stamp(s.now(), &p.CreatedAt, &p.UpdatedAt, &p.Version)
	if p.Status == "" {
		p.Status = domain.StatusActive
	}
	item, err := marshalItem(p, profileKey(p.SiteID, p.ID), kindProfile, nil)
	if err != nil {
		return err
	}
	// The site check rides in the transaction: a profile is never written
	// under a site that does not exist.
	err = s.write(ctx, s.exists(siteKey(p.SiteID)), s.putIfAbsent(item))
	if codes, ok := txCodes(err); ok {
		switch {
		case txFailed(codes, 0):
			return &ItemNotFoundError{Kind: kindSite, ID: p.SiteID}
		case txFailed(codes, 1):
			return &ItemConflictError{Kind: kindProfile, ID: p.ID, Reason: "already exists"}
		}
	}
	if err != nil {
		return fmt.Errorf("create profile %s: %w", p.ID, err)
	}
	return nil
}

// GetProfile returns the site's profile: ItemNotFoundError when there is none.
func (s *Store) GetProfile(ctx context.Context, siteID, id string) (domain.Profile, error) {
	var p domain.Profile
	err := s.get(ctx, kindProfile, id, profileKey(siteID, id), &p)
	return p, err
}

// ListProfiles returns the site's profiles ordered by id; an unknown site
// has none.
func (s *Store) ListProfiles(ctx context.Context, siteID string) ([]domain.Profile, error) {
	return queryPrefix[domain.Profile](ctx, s, kindProfile, pkSitePrefix+siteID, skProfile)
}

// UpdateProfile applies mutate under the profile's version. The id, site
// and CreatedAt cannot change. ItemNotFoundError when there is no such profile;
// ItemConflictError after repeated concurrent updates.
func (s *Store) UpdateProfile(ctx context.Context, siteID, id string, mutate Mutator[domain.Profile]) (domain.Profile, error) {
	return updateLoop(ctx, s, kindProfile, id, profileKey(siteID, id), mutate,
		func(prev, next *domain.Profile) {
			next.ID, next.SiteID, next.CreatedAt = prev.ID, prev.SiteID, prev.CreatedAt
			next.Version = prev.Version + 1
			next.UpdatedAt = s.now()
		},
		func(ctx context.Context, prev, next *domain.Profile) error {
			item, err := marshalItem(*next, profileKey(siteID, id), kindProfile, nil)
			if err != nil {
				return err
			}
			return s.putVersioned(ctx, kindProfile, id, item, prev.Version)
		})
}
