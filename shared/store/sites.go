package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/maasflow/maasflow/shared/domain"
)

const kindSite = "site"

func siteKey(id string) key { return key{pkSites, skSitePrefix + id} }

// siteNameKey is the item that makes site names unique, case-insensitively.
func siteNameKey(name string) key {
	return key{pkSiteName + strings.ToLower(strings.TrimSpace(name)), "SITENAME"}
}

type siteNameLock struct {
	SiteID string `dynamodbav:"site_id"`
	Name   string `dynamodbav:"name"`
}

func checkSite(site domain.Site) error {
	if err := checkID(kindSite, "id", site.ID); err != nil {
		return err
	}
	if strings.TrimSpace(site.Name) == "" {
		return &InvalidRecordError{Kind: kindSite, Field: "name", Reason: "is required"}
	}
	return nil
}

func (s *Store) siteItems(site domain.Site) (rec, name map[string]types.AttributeValue, err error) {
	if rec, err = marshalItem(site, siteKey(site.ID), kindSite, nil); err != nil {
		return nil, nil, err
	}
	name, err = marshalItem(siteNameLock{SiteID: site.ID, Name: site.Name}, siteNameKey(site.Name), "site_name", nil)
	return rec, name, err
}

// CreateSite stores a new site with version 1, stamping CreatedAt and
// UpdatedAt when zero and Status (active) when empty. ItemConflictError when the
// id exists or another site has the same name (case-insensitive).
func (s *Store) CreateSite(ctx context.Context, site domain.Site) error {
	if err := checkSite(site); err != nil {
		return err
	}
	stamp(s.now(), &site.CreatedAt, &site.UpdatedAt, &site.Version)
	if site.Status == "" {
		site.Status = domain.StatusActive
	}
	rec, name, err := s.siteItems(site)
	if err != nil {
		return err
	}
	err = s.write(ctx, s.putIfAbsent(rec), s.putIfAbsent(name))
	if codes, ok := txCodes(err); ok {
		switch {
		case txFailed(codes, 0):
			return &ItemConflictError{Kind: kindSite, ID: site.ID, Reason: "already exists"}
		case txFailed(codes, 1):
			return s.siteNameTaken(ctx, site)
		}
	}
	if err != nil {
		return fmt.Errorf("create site %s: %w", site.ID, err)
	}
	return nil
}

func (s *Store) siteNameTaken(ctx context.Context, site domain.Site) error {
	var lock siteNameLock
	if err := s.get(ctx, "site name", site.Name, siteNameKey(site.Name), &lock); err != nil {
		lock.SiteID = "another site"
	}
	return &ItemConflictError{Kind: kindSite, ID: site.ID, Reason: fmt.Sprintf("name %q is used by site %s", site.Name, lock.SiteID)}
}

// GetSite returns the site: ItemNotFoundError when there is none.
func (s *Store) GetSite(ctx context.Context, id string) (domain.Site, error) {
	var site domain.Site
	err := s.get(ctx, kindSite, id, siteKey(id), &site)
	return site, err
}

// ListSites returns every site, ordered by id (one Query on the SITES
// partition).
func (s *Store) ListSites(ctx context.Context) ([]domain.Site, error) {
	return queryPrefix[domain.Site](ctx, s, kindSite, pkSites, skSitePrefix)
}

// UpdateSite applies mutate under the site's version and returns the stored
// result. The id and CreatedAt cannot change; a new name is checked for
// uniqueness in the same transaction (ItemConflictError). ItemNotFoundError when
// there is no such site; ItemConflictError after repeated concurrent updates.
func (s *Store) UpdateSite(ctx context.Context, id string, mutate Mutator[domain.Site]) (domain.Site, error) {
	return updateLoop(ctx, s, kindSite, id, siteKey(id), mutate,
		func(prev, next *domain.Site) {
			next.ID, next.CreatedAt = prev.ID, prev.CreatedAt
			next.Version = prev.Version + 1
			next.UpdatedAt = s.now()
		},
		func(ctx context.Context, prev, next *domain.Site) error {
			if err := checkSite(*next); err != nil {
				return err
			}
			rec, name, err := s.siteItems(*next)
			if err != nil {
				return err
			}
			oldName := siteNameKey(prev.Name)
			if oldName == siteNameKey(next.Name) {
				return s.putVersioned(ctx, kindSite, id, rec, prev.Version)
			}
			err = s.write(ctx,
				s.putIfVersion(rec, prev.Version),
				s.deleteLock(oldName, "site_id", id),
				s.putLock(name, "site_id", id))
			codes, _ := txCodes(err)
			switch {
			case txFailed(codes, 0) || txContended(codes):
				return errVersionConflict
			case txFailed(codes, 2):
				return s.siteNameTaken(ctx, *next)
			case err != nil:
				return fmt.Errorf("update site %s: %w", id, err)
			}
			return nil
		})
}
